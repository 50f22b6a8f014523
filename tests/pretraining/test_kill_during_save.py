"""A kill in the middle of a checkpoint save: every state it can leave resumes bit-exactly."""
import os

import pytest

from npbert import safetensors
from npbert.pretraining.recipe import pretrain
from support.pretraining_runs import data_dir, options, quiet, train_losses  # noqa: F401  (data_dir: a fixture)


# --- a kill in the middle of a checkpoint save ----------------------------------------------------

KILLED = 2 ** 22 + 777            # a pid above Linux's default pid_max: the process that left these is gone


def make_interrupted_save(ckpt, state):
    """The state a kill during atomic_replace_dir leaves, made by hand; ckpt is the last save."""
    import shutil
    parent = os.path.dirname(ckpt)
    old = os.path.join(parent, f".checkpoint.old-{KILLED}-0000000a")
    new = os.path.join(parent, f".checkpoint.tmp-{KILLED}-0000000b")
    if state == "filling the new copy":                 # half a new copy beside the intact checkpoint
        shutil.copytree(ckpt, new, ignore=lambda d, names: ["model.safetensors"])
    elif state == "between the two renames":            # a complete new copy; the last save renamed aside
        shutil.copytree(ckpt, new)
        os.rename(ckpt, old)
    elif state == "only the renamed last save":
        os.rename(ckpt, old)
    elif state == "deleting the last save":             # the new checkpoint in place, the old half deleted
        shutil.copytree(ckpt, old, ignore=lambda d, names: names[:1])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, data_dir):
    opts = options(tmp_path_factory.mktemp("uninterrupted"), data_dir, steps=12)
    pretrain(opts, log=quiet)
    return train_losses(opts.out)


@pytest.mark.parametrize("state", ["filling the new copy", "between the two renames", "only the renamed last save",
                                   "deleting the last save"])
def test_resume_recovers_from_every_state_a_kill_during_a_save_leaves(tmp_path, data_dir, uninterrupted, state):
    pretrain(options(tmp_path, data_dir, steps=12, stop_after=7), log=quiet)
    run = str(tmp_path / "run")
    make_interrupted_save(os.path.join(run, "checkpoint"), state)
    said = []
    assert pretrain(options(tmp_path, data_dir, steps=12), resume=True, log=said.append)["step"] == 12
    assert train_losses(run) == uninterrupted
    renamed_aside = state in ("between the two renames", "only the renamed last save")
    assert any(line.startswith("the last save was interrupted: restored") for line in said) == renamed_aside
    assert [e for e in os.listdir(run) if e.startswith(".")] == []      # the leftovers are gone
