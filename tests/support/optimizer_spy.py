"""What the optimizer saw, step by step: the pretraining and fine-tuning loops' tests read it to check
the schedule and the clipping (tests/pretraining/test_loop.py, tests/finetuning/test_finetune.py)."""


def spy_on_updates(monkeypatch):
    """Record (learning rate, global norm of the gradients) of every AdamW step."""
    from npbert.optim import AdamW, global_norm
    seen, real = [], AdamW.step

    def step(self, params, grads, lr):
        seen.append((lr, global_norm(grads)))
        return real(self, params, grads, lr)
    monkeypatch.setattr(AdamW, "step", step)
    return seen
