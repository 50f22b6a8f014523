"""Make tests/fixtures/adamw_torch.npz: five torch.optim.AdamW updates (float64 and float32,
one tensor with weight decay, one without, the warmup schedule's changing lr) from seeded
parameters and gradients. tests/training/test_optim.py holds npbert.optim.AdamW to them under both
backends.

Needs torch (reference scripts only; the test suite does not):
    python tests/reference/make_adamw_fixture.py
"""
import os

import numpy as np
import torch

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "adamw_torch.npz")
STEPS, LRS = 5, (2e-4, 4e-4, 6e-4, 5e-4, 4e-4)


def inputs(dtype):
    """The seeded start parameters and the gradient of every step, as npbert names them."""
    rng = np.random.default_rng(7)
    params = {"encoder.weight": rng.standard_normal((23, 17)), "encoder.bias": rng.standard_normal(17)}
    grads = [{k: rng.standard_normal(p.shape) * 10.0 ** rng.integers(-3, 2) for k, p in params.items()}
             for _ in range(STEPS)]
    cast = lambda d: {k: v.astype(dtype) for k, v in d.items()}   # noqa: E731
    return cast(params), [cast(g) for g in grads]


def main():
    out = {}
    for dtype in (np.float64, np.float32):
        params, grads = inputs(dtype)
        name = np.dtype(dtype).name
        out.update({f"{name}/start/{k}": v for k, v in params.items()})
        out.update({f"{name}/grad{step}/{k}": v for step, g in enumerate(grads) for k, v in g.items()})
        tp = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in params.items()}
        opt = torch.optim.AdamW([{"params": [tp["encoder.weight"]], "weight_decay": 0.01},
                                 {"params": [tp["encoder.bias"]], "weight_decay": 0.0}],
                                lr=LRS[0], betas=(0.9, 0.999), eps=1e-6, foreach=False)
        for step in range(STEPS):
            for group in opt.param_groups:
                group["lr"] = LRS[step]
            for k, p in tp.items():
                p.grad = torch.tensor(grads[step][k])
            opt.step()
        for k, p in tp.items():
            out[f"{name}/torch/{k}"] = p.detach().numpy()
    out["lrs"] = np.array(LRS)
    out["torch_version"] = np.array(torch.__version__)
    np.savez_compressed(FIXTURE, **out)
    print(f"wrote {FIXTURE} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
