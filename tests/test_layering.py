"""The package's imports go one way, down the layers of docs/model.md ("The layers of the
code"), and form no cycle: a leaf op cannot reach the backend switch, a layer cannot reach
the models, nothing reaches the CLI. Imports inside functions count too."""
import ast
import os

import npbert

ROOT = os.path.dirname(npbert.__file__)

# (module or package, rank): a module may import its own group and groups of lower rank only.
LAYERS = [
    ("npbert.errors", 0),
    ("npbert.environment", 1),
    ("npbert.atomic", 1), ("npbert.lock", 1), ("npbert.reading", 1), ("npbert.signals", 1),
    ("npbert.config", 1), ("npbert.safetensors", 1), ("npbert.trace", 1), ("npbert.options", 1),
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
    assert matches, f"{name} is in no layer: add it to LAYERS (and to docs/model.md's layers)"
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
