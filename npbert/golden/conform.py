"""`npbert conform GOLDEN_DIR RESULTS_DIR`: a port's results against the goldens, tensor by tensor.

A port writes, for each case it runs, the tensors of the compared roles (schema.REQUIRED and, where
it can, schema.OPTIONAL) under the golden names, at the manifest's `file` for the case under
RESULTS_DIR: either that safetensors file (RESULTS_DIR/float64/linear.safetensors) or a folder of
the same name without the extension holding one .npy per tensor (RESULTS_DIR/float64/linear/out.npy,
RESULTS_DIR/float64/linear/grad/w.npy). For a whole
model the report names the first intermediate, in forward order, where the port leaves
tolerance, then the first in backward order: where a port first goes wrong.
"""
from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field

import numpy as np

from npbert import safetensors
from npbert.errors import InputError
from npbert.golden import schema
from npbert.golden.conform_tokenizer import locate_token
from npbert.golden.conform_training import locate
from npbert.gradcheck.cases import select_checks


@dataclass
class Row:
    name: str
    role: str
    status: str                    # PASS, FAIL, or "not given" (an optional tensor the port left out)
    max_abs: float = math.nan
    rel: float = math.nan
    why: str = ""                  # for a FAIL without numbers: missing, shape, dtype


@dataclass
class CaseReport:
    name: str                      # float64/linear
    kind: str
    tol: float
    rows: list = field(default_factory=list)
    missing: bool = False          # no results for this case at all
    unknown: list = field(default_factory=list)   # result tensors whose names the golden does not have
    located: tuple = ()            # a training case: (name, "step N", detail) of the first quantity off
    forward_order: list = field(default_factory=list)
    backward_order: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.missing and bool(self.rows) and all(r.status != "FAIL" for r in self.rows)

    def first_failure(self, order):
        """The first row of a FAIL among the names in order (forward or backward), or None."""
        rows = {r.name: r for r in self.rows}
        return next((rows[n] for n in order if n in rows and rows[n].status == "FAIL"), None)

    def verdict(self) -> str:
        """One line a script can match: PASS, "MISSING: ...", or
        "FAIL: first differs at `NAME` (WHERE): DETAIL" (docs/porting.md), WHERE being forward or
        backward (a whole model's trace, in that order), output, gradient, step N or after step N
        (a training case), text R, position P or pair R, first text, position P (a tokenizer case)."""
        if self.missing:
            return "MISSING: no results for this case"
        if not self.rows:
            return "FAIL: first differs at `(nothing)` (manifest): the golden lists no tensor of a compared role"
        if self.passed:
            return "PASS"
        if self.located:
            return "FAIL: first differs at `{}` ({}): {}".format(*self.located)
        required_pass = all(r.status != "FAIL" for r in self.rows if r.role in schema.REQUIRED)
        note = "; every output and gradient matches: only intermediates differ" if required_pass else ""
        for where, order in (("forward", self.forward_order), ("backward", self.backward_order)):
            row = self.first_failure(order)
            if row is not None:
                return f"FAIL: first differs at `{row.name}` ({where}): {_what(row, self.kind)}{note}"
        failed = [r for r in self.rows if r.status == "FAIL"]
        note = "; every intermediate given matches" if self.forward_order else ""
        more = f", and {len(failed) - 1} more tensors" if len(failed) > 1 else ""
        where = {"grad": "gradient", "final": "after the last step"}.get(failed[0].role, failed[0].role)
        return f"FAIL: first differs at `{failed[0].name}` ({where}): {_what(failed[0], self.kind)}{more}{note}"


def _what(row: Row, kind: str) -> str:
    if row.why:
        return row.why
    if math.isinf(row.rel) and kind == "tokenizer":
        return "integers that must be equal are not"
    if math.isinf(row.rel):                            # tensor_error: an entry that must be equal is not
        return (f"max abs error {row.max_abs:.2g}, where entries must be equal (the mask value finfo(dtype).min, "
                "entries of magnitude >= 1e30, or integers)")
    return f"max abs error {row.max_abs:.2g} (relative {row.rel:.2g})"


def conform(golden_dir, results_dir, only=None) -> list:
    """[CaseReport] for every golden case (or those `only` selects: names like linear, gelu,
    bert_for_*, float32/linear); a case without results is MISSING."""
    manifest = schema.read_manifest(golden_dir)
    if not os.path.isdir(results_dir):
        raise InputError(f"results directory {results_dir} does not exist")
    cases = manifest["cases"]
    if only:
        keys = [f"{c['dtype']}/{c['name']}" for c in cases]
        names = sorted({c["name"] for c in cases})
        chosen = set()
        for pattern in only:
            chosen |= set(select_checks(keys if "/" in pattern else names, [pattern], what="golden case"))
        cases = [c for c, key in zip(cases, keys) if key in chosen or c["name"] in chosen]
    return [compare_case(golden_dir, results_dir, c, manifest["tolerance"]) for c in cases]


def compare_case(golden_dir, results_dir, entry, tolerance) -> CaseReport:
    tol = float(tolerance.get(entry["dtype"], 0.0))    # the tokenizer's integers: equal
    report = CaseReport(f"{entry['dtype']}/{entry['name']}" if entry["kind"] != "tokenizer" else entry["name"],
                        entry["kind"], tol, forward_order=entry.get("forward_order", []),
                        backward_order=entry.get("backward_order", []))
    results = read_results(results_dir, entry["file"])
    if results is None:
        report.missing = True
        return report
    golden = read_golden(golden_dir, entry)
    for t in entry["tensors"]:
        if t["role"] in schema.REQUIRED or t["role"] in schema.OPTIONAL:
            report.rows.append(compare_tensor(t, golden[t["name"]], results.get(t["name"]), tol))
    report.unknown = sorted(set(results) - {t["name"] for t in entry["tensors"]})
    if entry["kind"] == "training" and not report.passed:
        report.located = locate(entry, golden, results, tol) or ()
    if entry["kind"] == "tokenizer" and not report.passed:
        report.located = locate_token(golden_dir, entry, golden, results) or ()
    return report


def read_golden(golden_dir, entry) -> dict:
    """A case's golden tensors, each the manifest lists there, or a clear error (a damaged directory)."""
    path = os.path.join(golden_dir, entry["file"])
    if not is_regular_file(path):
        raise InputError(f"golden file {path} of case {entry['name']!r} is missing or not a regular file: "
                         "regenerate the goldens (`npbert golden`)")
    golden = safetensors.load_file(path)
    absent = [t["name"] for t in entry["tensors"] if t["name"] not in golden]
    if absent:
        raise InputError(f"golden file {path} has no tensor {absent[0]!r} that the manifest lists: regenerate "
                         "the goldens (`npbert golden`)")
    return golden


def is_regular_file(path) -> bool:
    """A regular file (not a FIFO, device or directory, which would block a read or mean nothing)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def compare_tensor(t: dict, want: np.ndarray, got, tol: float) -> Row:
    name, role = t["name"], t["role"]
    if got is None:
        if role in schema.OPTIONAL:
            return Row(name, role, "not given")
        return Row(name, role, "FAIL", why=f"missing: the port gave no `{name}`")
    got = np.asarray(got)
    if got.shape != want.shape:
        return Row(name, role, "FAIL", why=f"shape {got.shape}, expected {want.shape}")
    if got.dtype != want.dtype:
        return Row(name, role, "FAIL", why=f"dtype {got.dtype}, expected {want.dtype}")
    max_abs, rel = schema.tensor_error(got, want, t.get("floor", 0.0))
    return Row(name, role, "PASS" if rel <= tol else "FAIL", max_abs, rel)


def read_results(results_dir, file) -> dict | None:
    """A case's results: the safetensors file at its path, or a folder of .npy files (a tensor
    named grad/w is grad/w.npy in it); None when neither is there."""
    path = os.path.join(results_dir, file)
    folder = path[:-len(".safetensors")]
    if is_regular_file(path):
        return safetensors.load_file(path)
    if not os.path.isdir(folder):
        return None
    tensors = {}
    for root, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith(".npy"):
                name = os.path.relpath(os.path.join(root, f), folder)[:-4].replace(os.sep, "/")
                tensors[name] = read_npy(os.path.join(root, f))
    return tensors


def read_npy(path) -> np.ndarray:
    """One .npy file, its header checked against the file's size before any data is read: a FIFO
    would block and a header claiming 1e13 entries would exhaust memory."""
    if not is_regular_file(path):
        raise InputError(f"{path} is not a regular file (a .npy file is needed)")
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise ValueError(f".npy format version {version} (1.0 and 2.0 are read)")
            shape, _, dtype = read_header(f)
            claimed = math.prod(shape) * dtype.itemsize
            if dtype.hasobject or claimed > os.fstat(f.fileno()).st_size - f.tell():
                raise ValueError(f"its header claims {shape} {dtype}, more than the file holds"
                                 if not dtype.hasobject else "it holds Python objects")
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError, OverflowError, TypeError) as e:
        raise InputError(f"{path} is not a readable .npy file: {e}") from None


def format_report(reports, failures_only=False) -> str:
    """A table per case (every compared tensor, or only the failing ones), its verdict, and a summary."""
    lines = []
    for r in reports:
        lines.append(f"{r.name} [{r.kind}]  tolerance {r.tol:g}: {r.verdict()}")
        if r.unknown:
            lines.append(f"  not in the golden (misspelt? ignored): {', '.join(r.unknown)}")
        rows = [row for row in r.rows if not failures_only or row.status == "FAIL"]
        if rows and not (failures_only and r.passed):
            width = max(len(row.name) for row in rows)
            lines.append(f"  {'tensor':{width}s}  {'role':17s}  {'max abs err':>11s}  {'rel err':>9s}  result")
            for row in rows:
                rel = f"{row.rel:9.2e}" if not math.isinf(row.rel) else f"{'unequal':>9s}"
                numbers = f"{row.max_abs:11.2e}  {rel}" if not row.why else f"{'':11s}  {'':9s}"
                lines.append(f"  {row.name:{width}s}  {row.role:17s}  {numbers}  {row.status}"
                             + (f": {row.why}" if row.why else ""))
    failed = [r for r in reports if not r.passed]
    skipped = sum(row.status == "not given" for r in reports for row in r.rows)
    lines.append(f"{len(reports) - len(failed)} of {len(reports)} cases pass"
                 + (f"; {skipped} optional intermediates not given" if skipped else ""))
    lines += [f"  {r.name}: {r.verdict()}" for r in failed]
    return "\n".join(lines)
