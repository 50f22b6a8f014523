"""The course's notebooks, built from the demos and the derivation pages: one source for each.

    python demos/notebooks.py                  every demo and exercise -> demos/NN_name.ipynb,
                                               demos/exercises/NN_name.ipynb (then open them in Jupyter)
    python demos/notebooks.py 04_gelu          only those named
    python demos/notebooks.py --execute        and run them, so they open with their outputs and figures

A demo is a Python file in the "percent" format (`# %%` starts a code cell, `# %% [markdown]` a markdown
cell). The notebook made of it has, in this order: its docstring as the first markdown cell, then its
cells, where a line of a markdown cell of the form

    > from docs/layers/gelu.md: Forward

becomes that section of the page (from its heading to the next heading of the same level or higher;
`intro` is the title and what precedes the first `##`), its links made relative to the notebook. The
prose and the math live in docs/ only; the code lives in the demo only; nothing is copied by hand.

A notebook this script wrote is replaced when it is built again, unless its cells were edited since
(an exercise you worked on, a note you added): that one is kept, and the script says so.
Needs jupytext (and nbclient, ipykernel to --execute): pip install -e ".[test]".
"""
from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import sys
from pathlib import Path

DEMOS = Path(__file__).resolve().parent
ROOT = DEMOS.parent
INCLUDE = re.compile(r"^> from (\S+\.md): (.+)$")
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$")
LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
BUILT = "npbert_built_from"                             # notebook metadata: the source, and a hash of the cells


def sources() -> list:
    """Every demo and exercise a notebook is made of, in course order."""
    return sorted(DEMOS.glob("[0-9][0-9]_*.py")) + sorted((DEMOS / "exercises").glob("[0-9][0-9]_*.py"))


def section(page: Path, heading: str) -> str:
    """The text of `page` under the heading whose text starts with `heading` (exactly one must), or
    the page's intro. Headings inside fenced code blocks are not headings."""
    lines, fenced, marks = page.read_text(encoding="utf-8").splitlines(), False, []
    for i, line in enumerate(lines):
        fenced ^= line.startswith("```")
        m = None if fenced else HEADING.match(line)
        if m:
            marks.append((i, len(m.group(1)), m.group(2)))
    if heading == "intro":
        end = next((i for i, level, _ in marks if level >= 2), len(lines))
        return "\n".join(lines[:end]).strip()
    hits = [(i, level) for i, level, text in marks if text.startswith(heading)]
    if len(hits) != 1:
        raise ValueError(f"{page.relative_to(ROOT)}: {len(hits)} headings start with {heading!r} (need exactly 1)")
    start, level = hits[0]
    end = next((i for i, lv, _ in marks if i > start and lv <= level), len(lines))
    return "\n".join(lines[start:end]).strip()


def relinked(text: str, page: Path, notebook_dir: Path) -> str:
    """Links and images of a page's text, made relative to the notebook's directory."""
    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:|^#", target):           # a URL or an anchor on the same page
            return m.group(0)
        path, _, anchor = target.partition("#")
        new = os.path.relpath((page.parent / path).resolve(), notebook_dir).replace(os.sep, "/")
        return m.group(1) + new + ("#" + anchor if anchor else "") + m.group(3)
    return LINK.sub(fix, text)


def included(source: str, notebook_dir: Path, introduced: set) -> str | None:
    """A markdown cell's text with each `> from PAGE: HEADING` line replaced by that section, or None
    when it has no such line. A section of a page whose intro the notebook has not shown yet gets
    the page's title in its heading (the walkthrough's "Forward" is the encoder layer's)."""
    lines = source.splitlines()
    if not any(INCLUDE.match(line) for line in lines):
        return None
    out, pages = [], []
    for line in lines:
        m = INCLUDE.match(line)
        if m is None:
            out.append(line)
            continue
        page, heading = ROOT / m.group(1), m.group(2)
        text = relinked(section(page, heading), page, notebook_dir)
        if heading == "intro":
            introduced.add(page)
        elif page not in introduced:
            title = section(page, "intro").splitlines()[0].lstrip("# ")
            text = re.sub(r"^(#+) ", lambda h: f"{h.group(1)} {title}: ", text, count=1)
        out.append(text)
        pages.append(m.group(1))
    links = ", ".join(f"[{p}]({os.path.relpath(ROOT / p, notebook_dir)})" for p in dict.fromkeys(pages))
    return "\n".join(out) + f"\n\n*From {links}.*"


def docstring_cell(cells, nbformat):
    """The module docstring as a markdown cell: its first line the title, the rest as text (its indented
    lines, the commands and formulas, as code). The code cell keeps the rest of its lines."""
    first = next((c for c in cells if c.cell_type == "code"), None)
    if first is None:
        return None
    tree = ast.parse(first.source)
    if not (tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
            and isinstance(tree.body[0].value.value, str)):
        return None
    doc = ast.get_docstring(tree, clean=False)
    end = tree.body[0].end_lineno
    first.source = "\n".join(first.source.splitlines()[end:]).strip("\n")
    title, _, rest = doc.partition("\n\n")
    title = " ".join(title.split())
    body = re.sub(r"^(    .+(?:\n    .+)*)", lambda m: "```\n" + "\n".join(
        line[4:] for line in m.group(1).splitlines()) + "\n```", rest.strip("\n").rstrip(), flags=re.M)
    return nbformat.v4.new_markdown_cell(f"# {title}\n\n{body}")


def build(path: Path):
    """The notebook made of one demo or exercise (not written)."""
    import jupytext
    import nbformat
    path = Path(path).resolve()
    notebook = jupytext.read(path)
    cells, introduced = [], set()
    for cell in notebook.cells:
        text = included(cell.source, path.parent, introduced) if cell.cell_type == "markdown" else None
        if text is not None:
            cell.source = text
        if cell.cell_type == "code" and not cell.source.strip():
            continue
        cells.append(cell)
    title = docstring_cell(cells, nbformat)
    notebook.cells = ([title] if title is not None else []) + [c for c in cells if c.source.strip()]
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata[BUILT] = {"source": Path(os.path.relpath(path, ROOT)).as_posix(), "cells": cells_hash(notebook)}
    return notebook


def cells_hash(notebook) -> str:
    return hashlib.sha256("\0".join(c.cell_type + c.source for c in notebook.cells).encode()).hexdigest()


def edited_since_built(target: Path) -> bool:
    """An existing notebook we must not replace: not one this script wrote, or its cells edited since."""
    import nbformat
    try:
        old = nbformat.read(target, as_version=4)
    except Exception:                                   # unreadable: not ours to replace
        return True
    built = old.metadata.get(BUILT)
    return not isinstance(built, dict) or built.get("cells") != cells_hash(old)


def run(notebook, directory, **timeouts):
    """Execute the notebook in a fresh python3 kernel started in `directory`, as Jupyter opens it.
    The kernel talks over a Unix socket in a temporary directory where there is one (over TCP,
    ipykernel warns that it is "running over TCP without encryption": on 127.0.0.1 only, but said
    twice a notebook), and is shut down when the notebook has run."""
    import tempfile

    import nbclient
    from jupyter_client import KernelManager
    with tempfile.TemporaryDirectory() as sockets:
        ipc = dict(transport="ipc", ip=os.path.join(sockets, "kernel")) if os.name == "posix" else {}
        km = KernelManager(kernel_name="python3", **ipc)
        try:
            nbclient.NotebookClient(notebook, km=km, kernel_name="python3", **timeouts,
                                    resources={"metadata": {"path": str(directory)}}).execute()
        finally:
            if km.has_kernel:                  # a kernel manager given to nbclient is the giver's to stop
                km.shutdown_kernel()
    return notebook


def write(path: Path, execute: bool) -> str:
    import nbformat
    target = path.with_suffix(".ipynb")
    if target.exists() and edited_since_built(target):
        return f"kept {os.path.relpath(target, ROOT)}: edited since it was built (delete it to build it again)"
    notebook = build(path)
    if execute:
        run(notebook, path.parent, timeout=600)
    tmp = target.with_suffix(".ipynb.tmp")
    nbformat.write(notebook, tmp)
    os.replace(tmp, target)
    return f"wrote {os.path.relpath(target, ROOT)}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="demos or exercises by name: 04_gelu (the demo and the exercise), "
                        "exercises/04_gelu (the exercise only) (default: all)")
    parser.add_argument("--execute", action="store_true", help="run each notebook, keeping its outputs")
    args = parser.parse_args(argv)
    chosen = sources()
    if args.names:
        names = {p: str(p.relative_to(DEMOS).with_suffix("")) for p in chosen}   # 04_gelu, exercises/04_gelu
        unknown = sorted(set(args.names) - set(names.values()) - {p.stem for p in chosen})
        if unknown:
            parser.error(f"no demo or exercise named {', '.join(unknown)}; they are {', '.join(names.values())}")
        chosen = [p for p in chosen if names[p] in args.names or p.stem in args.names]
    try:
        import jupytext  # noqa: F401
    except ImportError:
        parser.error("jupytext is not installed: pip install -e '.[test]' (jupytext, nbclient, ipykernel)")
    for path in chosen:
        print(write(path, args.execute), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
