"""The picture before the parts: BERT's data flow, tokens -> three embeddings -> L x (attention,
add & norm, feed-forward, add & norm) -> heads, with every box labelled by the shapes of a model's
own weights (a preset's, or a checkpoint's read from its safetensors header). docs/overview.md
shows it and links each box to its derivation, demo and code.

    python demos/draw_overview.py                               BERT-Base (the paper's), text form
    python demos/draw_overview.py base --out docs/overview.png  ... and the picture of docs/overview.md
    python demos/draw_overview.py tiny                          the model `npbert pretrain` trains
    python demos/draw_overview.py runs/pretrain/checkpoint      a checkpoint's own weights

The text form is always printed; the PNG needs matplotlib (pip install 'npbert[plot]'). Activations
are (B, T, ...): B sequences of T tokens; M is the number of masked positions in the batch.
"""
import os

from demo_common import arguments, exit_with  # first: puts this checkout's npbert on the path

from npbert.checkpoint import check_checkpoint
from npbert.config import PRESETS, BertConfig
from npbert.errors import NpbertError
from npbert.model_params import param_shapes
from npbert.plotting import MISSING_NOTE, check_png_path, load_pyplot, save_png

LAYER = "bert.encoder.layer.0."


def options(p):
    p.add_argument("model", nargs="?", default="base",
                   help=f"a preset ({', '.join(PRESETS)}) or a checkpoint directory (default: base)")
    p.add_argument("--out", default=None, help="also draw the figure into this PNG (needs matplotlib)")


def model_shapes(model):
    """-> (config, {parameter name: shape}, what it is): a checkpoint's from its header, a preset's computed."""
    if os.path.isdir(model):
        config, shapes = check_checkpoint(model)
        return config, shapes, f"the checkpoint {model}"
    if model not in PRESETS:
        raise NpbertError(f"{model!r} is neither a preset ({', '.join(PRESETS)}) nor a directory")
    return BertConfig.from_preset(model), param_shapes(BertConfig.from_preset(model)), f"the {model} preset"


def shape(shapes, name):
    """A weight's shape as written in the boxes, '-' if the model has no such weight (no head)."""
    return "x".join(str(n) for n in shapes[name]) if name in shapes else "-"


def boxes(config, shapes):
    """[(key, title, what it computes with which weights, the activation it outputs)], in data-flow
    order; key: the row of docs/overview.md's table that links the box to its page, demo and code."""
    H, I, A, V = config.hidden_size, config.intermediate_size, config.num_attention_heads, config.vocab_size
    D, w = H // A, lambda name: shape(shapes, name)
    heads = "cls.predictions.bias" in shapes
    return [
        ("tokens", "tokens", "WordPiece ids, segment ids, attention mask", "(B, T)"),
        ("embeddings", "three embeddings, summed, LayerNorm",
         f"word {w('bert.embeddings.word_embeddings.weight')} + position "
         f"{w('bert.embeddings.position_embeddings.weight')} + token type "
         f"{w('bert.embeddings.token_type_embeddings.weight')}", f"(B, T, {H})"),
        ("attention", "multi-head self-attention",
         f"Q, K, V {w(LAYER + 'attention.self.query.weight')}; {A} heads of {D}: softmax(q k^T / sqrt({D}) + mask) v;"
         f" output {w(LAYER + 'attention.output.dense.weight')}", f"(B, T, {H})"),
        ("add_norm", "add & norm", f"LayerNorm(x + attention(x)), gamma and beta ({H},)", f"(B, T, {H})"),
        ("feedforward", "feed-forward",
         f"{w(LAYER + 'intermediate.dense.weight')}, GELU, {w(LAYER + 'output.dense.weight')}",
         f"(B, T, {I}) -> (B, T, {H})"),
        ("add_norm", "add & norm", f"LayerNorm(h + feedforward(h)), gamma and beta ({H},)", f"(B, T, {H})"),
        ("pooler_nsp", "pooler + NSP head",
         f"tanh({w('bert.pooler.dense.weight')} [CLS]), then {w('cls.seq_relationship.weight')}"
         + ("" if heads else " (not in this model)"), "(B, 2)"),
        ("mlm", "MLM head",
         f"{w('cls.predictions.transform.dense.weight')}, GELU, LayerNorm, decoder = word embeddings^T + bias "
         f"({V},)" + ("" if heads else " (not in this model)"), f"(M, {V})"),
    ]


def text_form(config, shapes, what) -> str:
    L = config.num_hidden_layers
    lines = [f"BERT's data flow, {what}: L = {L} layers, H = {config.hidden_size}, A = "
             f"{config.num_attention_heads} heads, I = {config.intermediate_size}, V = {config.vocab_size:,}"]
    for i, (_, title, detail, out) in enumerate(boxes(config, shapes)):
        if i == 2:
            lines.append(f"  {L} x encoder layer {{")
        if i == 6:
            lines.append("  }  (each layer's output is the next one's input)")
        indent = "      " if 2 <= i < 6 else "  "
        lines.append(f"{indent}{title:<37s}-> {out}")
        lines.append(f"{indent}    {detail}")
    return "\n".join(lines)


def draw(plt, config, shapes, what, path):
    """The boxes top to bottom, the L x bracket around the encoder layer, the two heads side by side."""
    from matplotlib.patches import FancyBboxPatch, Rectangle    # matplotlib is there: plt came from it
    all_boxes = boxes(config, shapes)
    fig, ax = plt.subplots(figsize=(9.5, 8.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(0.6, 10.5)
    ax.axis("off")
    rows = [(5.0, 9.9), (5.0, 8.75), (5.0, 7.35), (5.0, 6.3), (5.0, 5.25), (5.0, 4.2), (2.6, 2.2), (7.4, 2.2)]
    colours = ["#eeeeee", "#dbe9f6", "#fde2c8", "#e3f1de", "#fde2c8", "#e3f1de", "#ece1f3", "#ece1f3"]
    for (x, y), colour, (_, title, detail, out) in zip(rows, colours, all_boxes):
        width = 4.5 if y < 3 else 7.8
        ax.add_patch(FancyBboxPatch((x - width / 2, y - 0.36), width, 0.72,
                     boxstyle="round,pad=0.02", facecolor=colour, edgecolor="#555555"))
        ax.text(x, y + 0.15, f"{title}   {out}", ha="center", va="center", fontsize=9.5, weight="bold")
        ax.text(x, y - 0.17, detail, ha="center", va="center", fontsize=7.2, wrap=True)
    for (x0, y0), (x1, y1) in zip(rows[:5], rows[1:6]):
        ax.annotate("", (x1, y1 + 0.38), (x0, y0 - 0.38), arrowprops=dict(arrowstyle="->", color="#555555"))
    for x, _ in rows[6:]:
        ax.annotate("", (x, 2.2 + 0.38), (5.0, 4.2 - 0.38), arrowprops=dict(arrowstyle="->", color="#555555"))
    for top, bottom in ((rows[2][1] + 0.65, rows[3][1]), (rows[3][1] - 0.52, rows[5][1])):    # the residuals
        ax.plot([5.0, 9.15, 9.15], [top, top, bottom], color="#2a7f3f", linewidth=1.2)
        ax.annotate("", (8.9, bottom), (9.16, bottom), arrowprops=dict(arrowstyle="->", color="#2a7f3f"))
        ax.text(9.2, (top + bottom) / 2, "residual", rotation=90, va="center", fontsize=7, color="#2a7f3f")
    L = config.num_hidden_layers
    ax.add_patch(Rectangle((0.7, 3.5), 8.85, 4.65, fill=False, linestyle="--",
                                                  edgecolor="#888888"))
    ax.text(0.8, 7.98, f"{L} x encoder layer", fontsize=9, color="#555555", va="center")
    ax.text(0.8, 3.66, "each layer's output is the next one's input", fontsize=7.5, color="#555555", va="center")
    ax.text(2.6, 1.55, "[CLS] only: is B the sentence after A?", ha="center", fontsize=7.5, color="#555555")
    ax.text(7.4, 1.55, "at the masked positions only: which word?", ha="center", fontsize=7.5, color="#555555")
    ax.text(5.0, 0.9, "loss = MLM cross-entropy + NSP cross-entropy; the backward runs these boxes in reverse",
            ha="center", fontsize=8.5)
    ax.set_title(f"BERT's data flow: {what} (L = {L}, H = {config.hidden_size}, A = {config.num_attention_heads}, "
                 f"I = {config.intermediate_size}, V = {config.vocab_size:,})", fontsize=10)
    fig.tight_layout()
    save_png(plt, fig, path)


def main():
    args = arguments(__doc__, options)
    plt = load_pyplot() if args.out else None
    if args.out:
        check_png_path(args.out)                     # before any work: a PNG npbert did not draw is kept
    config, shapes, what = model_shapes(args.model)
    print(text_form(config, shapes, what))
    if args.out and plt is None:
        print(MISSING_NOTE)
    elif args.out:
        draw(plt, config, shapes, what, args.out)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    try:
        main()
    except NpbertError as e:
        exit_with(e)
