"""`npbert golden --out DIR`: the golden cases written language-neutral, one safetensors file per
case and dtype plus manifest.json, which lists every case, its tensors (name, role, shape,
dtype), the conventions and the tolerances (schema.py). The same seed, checkpoint and texts give
byte-identical files on one machine (docs/determinism.md): nothing in them depends on the time,
the path or the order of a dict.

    DIR/manifest.json
    DIR/float64/linear.safetensors  ...  DIR/float32/bert_for_pretraining.safetensors
    DIR/checkpoint/tokenizer.safetensors, DIR/checkpoint/float64/checkpoint_forward.safetensors,
    DIR/checkpoint/vocab.txt (--checkpoint)
"""
from __future__ import annotations

import json
import os

import numpy as np

from npbert import safetensors
from npbert.atomic import atomic_replace_dir, check_dir_path
from npbert.errors import InputError
from npbert.golden import schema
from npbert.golden.cases import GOLDEN_DIMS, golden_cases, golden_dims
from npbert.golden.tokenizer_cases import default_vocabularies, tokenizer_cases
from npbert.golden.training import training_cases
from npbert.golden.real_model import (
    check_checkpoint_for_golden,
    checkpoint_files,
    checkpoint_identity,
    real_model_cases,
)


def case_file(case) -> str:
    """Where a case lives, relative to the golden (and the results) directory."""
    if case.kind == "tokenizer":                       # the --checkpoint texts' case, or one of the hard inputs'
        folder = "checkpoint" if case.name == "tokenizer" or "[checkpoint," in case.name else "tokenizer"
        return f"{folder}/{case.name}.safetensors"
    folder = f"checkpoint/{case.dtype}" if case.kind == "checkpoint" else case.dtype
    return f"{folder}/{case.name}.safetensors"


def default_cases(seed: int = 0) -> list:
    """Every case `npbert golden` writes without --checkpoint: ops, layers, models, training steps,
    the tokenizer on hard inputs."""
    return golden_cases(seed) + training_cases(seed) + tokenizer_cases(default_vocabularies())


def check_out_dir(out) -> None:
    """Refuse an --out that npbert must not replace: a file, or a directory that holds something
    other than goldens (a golden directory is replaced whole, atomically)."""
    check_dir_path(out)
    here, target = os.path.realpath(os.getcwd()), os.path.realpath(out)
    if here == target or here.startswith(target.rstrip(os.sep) + os.sep):
        raise InputError(f"--out {out} is the current directory or holds it: a golden directory is replaced whole, "
                         "so choose a new directory (e.g. --out golden)")
    if os.path.isdir(out) and os.listdir(out) and not schema.is_golden_dir(out):
        raise InputError(f"--out {out} is a directory that is not an npbert golden directory (no {schema.MANIFEST} "
                         "of ours): choose a new or empty directory")
    foreign = foreign_entries(out) if os.path.isdir(out) and os.listdir(out) else []
    if foreign:
        raise InputError(f"--out {out} is a golden directory that also holds {foreign[0]}, which npbert golden did "
                         "not write (replacing the directory would delete it): move it, or choose another --out")


def foreign_entries(out) -> list:
    """What is in golden directory `out` besides the manifest and the files its cases name (and
    the folders holding them), sorted: a results folder, notes, anything a user put there."""
    ours = {schema.MANIFEST} | {case["file"] for case in schema.read_manifest(out)["cases"]}
    folders = {parent for name in ours for parent in ancestors(name)}
    found = []
    for root, dirs, files in os.walk(out):
        rel = os.path.relpath(root, out).replace(os.sep, "/")
        for name in dirs + files:
            path, key = os.path.join(root, name), name if rel == "." else f"{rel}/{name}"
            walked = os.path.isdir(path) and not os.path.islink(path) and key in folders
            if not walked and not (key in ours and os.path.isfile(path) and not os.path.islink(path)):
                found.append(path)
        dirs[:] = [d for d in dirs if (d if rel == "." else f"{rel}/{d}") in folders]
    return sorted(found)


def ancestors(name) -> list:
    """The folders of a relative path: "a/b/c.safetensors" -> ["a/b", "a"]."""
    parents = []
    while "/" in name:
        name = name.rsplit("/", 1)[0]
        parents.append(name)
    return parents


def write_goldens(out, seed: int = 0, checkpoint=None, texts=None) -> dict:
    """Write every golden case (and the real checkpoint's, with checkpoint) to out; -> the manifest."""
    check_out_dir(out)
    if checkpoint is not None:
        check_checkpoint_for_golden(checkpoint, texts)
    elif texts:
        raise InputError("--text needs --checkpoint (the model and tokenizer the sentences go through)")
    cases = default_cases(seed)
    manifest = {
        "schema": schema.SCHEMA, "version": schema.VERSION, "seed": seed,
        "config": golden_dims(seed).config().to_dict(), "dims": {k: list(v) if isinstance(v, tuple) else v
                                                                  for k, v in GOLDEN_DIMS.items()},
        "conventions": schema.CONVENTIONS, "reading": schema.READING, "fields": schema.FIELDS,
        "tolerance": schema.TOLERANCE,
        "error": schema.ERROR,
        "roles": schema.ROLES, "required_roles": list(schema.REQUIRED), "optional_roles": list(schema.OPTIONAL),
    }
    files = {}                                         # other files: {relative path: bytes}
    if checkpoint is not None:
        real, config = real_model_cases(checkpoint, texts)
        cases += real
        files = checkpoint_files(checkpoint)
        manifest["checkpoint"] = {**checkpoint_identity(checkpoint), "config": config.to_dict(), "files": list(files)}
    manifest["cases"] = [case_entry(c) for c in cases]

    def fill(tmp):
        for c in cases:
            path = os.path.join(tmp, case_file(c))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            safetensors.save_file({k: v for k, (_, v) in c.tensors.items()}, path)
        for name, data in files.items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        with open(schema.manifest_path(tmp), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
    try:
        atomic_replace_dir(out, fill)
    except OSError as e:                               # a full or read-only disk, a file-size limit: one line
        raise InputError(f"could not write the goldens to {out} ({e.strerror or e}"
                         f"{f': {e.filename}' if e.filename else ''}); {out} is as it was") from None
    return manifest


def case_entry(c) -> dict:
    entry = {"name": c.name, "dtype": c.dtype, "kind": c.kind, "file": case_file(c), "description": c.description,
             "constants": c.constants,
             "tensors": [{"name": k, "role": role, "shape": list(np.shape(v)), "dtype": np.asarray(v).dtype.name,
                          **({"floor": c.floors[k]} if k in c.floors else {})} for k, (role, v) in c.tensors.items()]}
    if c.forward_order:
        entry["forward_order"] = c.forward_order
    if c.backward_order:
        entry["backward_order"] = c.backward_order
    return entry
