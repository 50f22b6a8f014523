"""The package's imports go one way, down the layers of LAYERS below, and form no cycle: a leaf op
cannot reach the backend switch, a layer cannot reach the models, nothing reaches the CLI. Imports
inside functions count too. docs/design.md's table of the layers is printed from LAYERS and ROLES
(`python tests/structure/test_import_layers.py`), and a test holds the page to it."""
import ast
import os
import sys

import npbert

ROOT = os.path.dirname(npbert.__file__)

# (module or package, rank): a module may import its own group and groups of lower rank only.
LAYERS = [
    ("npbert.errors", 0),
    ("npbert.environment", 1),
    ("npbert.atomic", 1), ("npbert.lock", 1), ("npbert.reading", 1), ("npbert.signals", 1),
    ("npbert.config", 1), ("npbert.safetensors", 1), ("npbert.trace", 1), ("npbert.option_declaration", 1),
    ("npbert.allocator", 1), ("npbert.outputs", 1.5),
    ("npbert.ops", 2), ("npbert.logreg", 2.5), ("npbert.plotting", 2), ("npbert.tokenizer", 2), ("npbert.metrics", 2),
    ("npbert.kernels", 3),
    ("npbert.backend", 4),
    ("npbert.layers", 5), ("npbert.optim", 5), ("npbert.model_params", 5), ("npbert.model_inputs", 5),
    ("npbert.model", 6),
    ("npbert.heads", 8), ("npbert.checkpoint", 8),
    ("npbert.inference", 8.7), ("npbert.fill_mask", 8.8),
    ("npbert.gradcheck", 9), ("npbert.golden", 10), ("npbert.training", 9), ("npbert.data", 9),
    ("npbert.tasks", 10), ("npbert.run_plot", 10), ("npbert.pretraining", 10),
    ("npbert.finetuning", 10.5), ("npbert.exercises", 10.5), ("npbert.linguistics", 10.5),
    ("npbert.pretraining.recipe", 11), ("npbert.finetuning.recipe", 11),
    ("npbert.commands", 12),
    ("npbert.cli", 13), ("npbert.option_table", 14),
]

# What lives at each rank: the last column of docs/design.md's table.
ROLES = {
    14: "README's table of option ranges, from the parsers",
    13: "`npbert ...`: the environment checked, a command run",
    12: "one module a command: arguments -> one call below",
    11: "each run's Recipe, its parts (rank 10) put together",
    10.5: "fine-tuning's parts; what a model learned; the course's graded exercises",
    10: "pretraining's parts; a task = a head + a format; golden vectors and conform; `npbert plot`",
    9: "the run lifecycle both runs share; corpora, instances, shards; finite differences",
    8.8: "`npbert fill-mask`",
    8.7: "the forward without caches, on the packed layout",
    8: "the fine-tuning heads (layer pair, loss, HF names); HF checkpoint directories",
    6: "BertModel, BertForPreTraining: once, either layout",
    5: "the encoder once over rows, its layout picking the attention core; AdamW; the parameters' "
       "names, shapes and initialisation; the inputs checked",
    4: "the switch: one plain function a hot op, ops/ or kernels/",
    3: "the Numba twins of the hot ops: same names, signatures and cache records",
    2.5: "logistic regression (the bag-of-words baseline, the probes)",
    2: "the reference pairs in NumPy; WordPiece and its trainer; task metrics; figures",
    1.5: "what a command may write over",
    1: "what everything may use: the environment, crash-safe writes, one writer a run, bounded reads, "
       "SIGTERM, BertConfig, .safetensors, the trace, an option declared once, freed memory kept",
    0: "the errors npbert raises",
}
DESIGN = os.path.join(os.path.dirname(ROOT), "docs", "design.md")                     # ROOT is npbert/


def module_name(path):
    rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def is_module(name):
    base = os.path.join(os.path.dirname(ROOT), *name.split("."))
    return os.path.isfile(base + ".py") or os.path.isfile(os.path.join(base, "__init__.py"))


def imports_of(path, name):
    """The npbert modules a file imports, anywhere in it (package-relative imports resolved)."""
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
            for alias in node.names:                     # `from npbert import backend` imports npbert.backend
                found.add(f"{base}.{alias.name}" if is_module(f"{base}.{alias.name}") else base)
    return {m for m in found if m.startswith("npbert.")}


def graph():
    edges = {}
    for directory, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(directory, f)
                edges[module_name(path)] = imports_of(path, module_name(path))
    return edges


def group(name):
    matches = [(prefix, rank) for prefix, rank in LAYERS if name == prefix or name.startswith(prefix + ".")]
    assert matches, f"{name} is in no layer: add it to LAYERS (then, for docs/design.md, " \
                    "python tests/structure/test_import_layers.py)"
    return max(matches, key=lambda m: len(m[0]))


def test_every_import_goes_down_the_layers():
    upward = []
    for src, dsts in graph().items():
        if src == "npbert":                              # npbert/__init__.py: lazy exports, no imports
            continue
        g_src = group(src)
        for dst in dsts:
            g_dst = group(dst)
            if g_dst != g_src and g_dst[1] >= g_src[1]:
                upward.append(f"{src} ({g_src[1]}) imports {dst} ({g_dst[1]})")
    assert not upward, "imports that do not go down the layers:\n" + "\n".join(sorted(upward))


def test_there_is_no_import_cycle():
    edges, state, cycles = graph(), {}, []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"
    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_checker_sees_imports():
    """The walk above is only as good as its parser: it must find what these files do import."""
    edges = graph()
    assert "npbert.kernels.layernorm" in edges["npbert.backend"] or "npbert.kernels" in edges["npbert.backend"]
    assert "npbert.ops.layernorm" in edges["npbert.kernels.layernorm"]
    assert "npbert.backend" in edges["npbert.layers.attention"]
    assert {"npbert.layers.embeddings", "npbert.trace"} <= edges["npbert.model"]


def path_of(name):
    """npbert.ops -> ops/, npbert.pretraining.recipe -> pretraining/recipe.py, as a reader finds them."""
    rel = name[len("npbert."):].replace(".", "/")
    return f"{rel}/" if os.path.isdir(os.path.join(ROOT, rel)) else f"{rel}.py"


def layer_table() -> str:
    """docs/design.md's table of the layers: each rank, highest first, its modules and what lives there."""
    lines = ["| rank | modules | what lives there |", "|---|---|---|"]
    for rank in sorted({r for _, r in LAYERS}, reverse=True):
        names = " ".join(f"`{path_of(n)}`" for n, r in LAYERS if r == rank)
        lines.append(f"| {rank:g} | {names} | {ROLES[rank]} |")
    return "\n".join(lines) + "\n"


def test_design_md_holds_the_layer_table_this_list_prints():
    page = open(DESIGN, encoding="utf-8").read()
    assert layer_table() in page, \
        "docs/design.md's layer table is out of date: python tests/structure/test_import_layers.py"
    assert set(ROLES) == {r for _, r in LAYERS}


if __name__ == "__main__":
    sys.stdout.write(layer_table())
