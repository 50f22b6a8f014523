"""ONNX Runtime with BERT's fused operators, on the same model and batch: the peer people pick
for fast CPU inference.

Only the benchmark imports this (onnx and onnxruntime are not npbert dependencies: pip install
onnx onnxruntime). The graph is built here, from npbert's own weights, out of the operators
that `onnxruntime.transformers.optimizer` (model_type="bert") fuses an exported BERT into:
EmbedLayerNormalization, one Attention per layer (packed QKV projection, mask, softmax and
context in one kernel), SkipLayerNormalization (residual add + bias + LayerNorm) and BiasGelu
(bias + exact GELU). Building it directly, rather than exporting transformers' BertModel and
running the optimizer, is deliberate: the optimizer's pattern matcher does not recognise the
graph transformers 5.x exports (its mask builder and scaling by Mul: no Attention was fused,
and the session then failed to load), so the exported route measured a half-fused model. The
session runs with graph optimisations ALL (MatMul weights pre-packed for MLAS).

It computes what npbert's inference step computes: encoder, pooler, the MLM head at the masked
positions only (tied decoder), the NSP head and both mean cross-entropy losses; ort_infer_step
checks its logits and loss against npbert's before anything is timed.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

FUSED_OPS = ("EmbedLayerNormalization", "Attention", "SkipLayerNormalization", "BiasGelu")


def missing() -> list:
    import importlib.util
    return [name for name in ("onnx", "onnxruntime") if importlib.util.find_spec(name) is None]


def versions() -> dict:
    if missing():
        return {}
    import onnxruntime
    return {"onnxruntime": onnxruntime.__version__}


def build_graph(config, params: dict, B: int, T: int, N: int):
    """-> onnx ModelProto for fixed shapes: B sequences of T tokens, N masked positions."""
    from onnx import TensorProto, helper, numpy_helper

    H, A, V = config.hidden_size, config.num_attention_heads, config.vocab_size
    eps = config.layer_norm_eps
    ms = "com.microsoft"
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, order="C"), name))   # (0-d stays 0-d)
        return name

    def weight(key, transpose=False):                   # npbert's (out, in) weights; MatMul wants (in, out)
        a = params[key].astype(np.float32)
        return const(key + (".T" if transpose else ""), a.T if transpose else a)

    def node(op, inputs, outputs, domain="", **attrs):
        nodes.append(helper.make_node(op, inputs, outputs, name=outputs[0], domain=domain or None, **attrs))
        return outputs[0]

    e = "bert.embeddings."
    ids32 = node("Cast", ["input_ids"], ["ids32"], to=TensorProto.INT32)
    types32 = node("Cast", ["token_type_ids"], ["types32"], to=TensorProto.INT32)
    mask32 = node("Cast", ["attention_mask"], ["mask32"], to=TensorProto.INT32)
    x = node("EmbedLayerNormalization",
             [ids32, types32, weight(e + "word_embeddings.weight"), weight(e + "position_embeddings.weight"),
              weight(e + "token_type_embeddings.weight"), weight(e + "LayerNorm.weight"), weight(e + "LayerNorm.bias")],
             ["emb", "emb_mask_index"], domain=ms, epsilon=eps)                                  # (B, T, H)
    for i in range(config.num_hidden_layers):
        p = f"bert.encoder.layer.{i}."
        s = p + "attention.self."
        qkv_w = const(s + "qkv.T", np.concatenate([params[s + n + ".weight"].T for n in ("query", "key", "value")],
                                                  axis=1).astype(np.float32))                    # (H, 3H)
        qkv_b = const(s + "qkv.bias", np.concatenate([params[s + n + ".bias"] for n in ("query", "key", "value")])
                      .astype(np.float32))
        ctx = node("Attention", [x, qkv_w, qkv_b, mask32], [f"ctx{i}"], domain=ms, num_heads=A)   # (B, T, H)
        o = p + "attention.output."
        a = node("MatMul", [ctx, weight(o + "dense.weight", True)], [f"attn_out{i}"])
        h1 = node("SkipLayerNormalization", [a, x, weight(o + "LayerNorm.weight"), weight(o + "LayerNorm.bias"),
                                             weight(o + "dense.bias")], [f"h1_{i}"], domain=ms, epsilon=eps)
        u = node("MatMul", [h1, weight(p + "intermediate.dense.weight", True)], [f"up{i}"])    # (B, T, I)
        g = node("BiasGelu", [u, weight(p + "intermediate.dense.bias")], [f"gelu{i}"], domain=ms)
        d = node("MatMul", [g, weight(p + "output.dense.weight", True)], [f"down{i}"])         # (B, T, H)
        x = node("SkipLayerNormalization", [d, h1, weight(p + "output.LayerNorm.weight"),
                                            weight(p + "output.LayerNorm.bias"), weight(p + "output.dense.bias")],
                 [f"layer{i}"], domain=ms, epsilon=eps)
    first = node("Gather", [x, const("zero", np.array(0, np.int64))], ["first"], axis=1)        # (B, H)
    pooled = node("Tanh", [node("Gemm", [first, weight("bert.pooler.dense.weight"), weight("bert.pooler.dense.bias")],
                                ["pool_pre"], transB=1)], ["pooled"])
    c = "cls.predictions."
    flat = node("Reshape", [x, const("flat_shape", np.array([B * T, H], np.int64))], ["flat"])    # (B*T, H)
    rows = node("Gather", [flat, "mlm_positions"], ["rows"], axis=0)                              # (N, H)
    t = node("MatMul", [rows, weight(c + "transform.dense.weight", True)], ["t"])
    t = node("BiasGelu", [t, weight(c + "transform.dense.bias")], ["t_gelu"], domain=ms)
    t = node("LayerNormalization", [t, weight(c + "transform.LayerNorm.weight"), weight(c + "transform.LayerNorm.bias")],
             ["t_ln"], axis=-1, epsilon=eps)
    mlm = node("Add", [node("MatMul", [t, weight(e + "word_embeddings.weight", True)], ["dec"]),
                       weight(c + "bias")], ["mlm_logits"])                                        # (N, V) tied decoder
    nsp = node("Gemm", [pooled, weight("cls.seq_relationship.weight"), weight("cls.seq_relationship.bias")],
               ["nsp_logits"], transB=1)                                                          # (B, 2)
    mlm_loss = node("SoftmaxCrossEntropyLoss", [mlm, "mlm_labels"], ["mlm_loss"], reduction="mean", ignore_index=-100)
    nsp_loss = node("SoftmaxCrossEntropyLoss", [nsp, "nsp_labels"], ["nsp_loss"], reduction="mean", ignore_index=-100)
    node("Add", [mlm_loss, nsp_loss], ["loss"])

    i64 = TensorProto.INT64
    inputs = [helper.make_tensor_value_info(n, i64, s) for n, s in
              (("input_ids", (B, T)), ("token_type_ids", (B, T)), ("attention_mask", (B, T)),
               ("mlm_positions", (N,)), ("mlm_labels", (N,)), ("nsp_labels", (B,)))]
    f32 = TensorProto.FLOAT
    outputs = [helper.make_tensor_value_info("mlm_logits", f32, (N, V)),
               helper.make_tensor_value_info("nsp_logits", f32, (B, 2)),
               helper.make_tensor_value_info("loss", f32, ())]
    graph = helper.make_graph(nodes, "npbert_pretraining_inference", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)])


INPUTS = ("input_ids", "token_type_ids", "attention_mask", "mlm_positions", "mlm_labels", "nsp_labels")


def ort_session(path: str, threads: int, spinning: bool = True):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def ort_infer_step(config, params, batch: dict, threads: int, spinning: bool = True):
    """-> (infer_step, info): info has the fused operator counts and the largest differences of
    ORT's logits and loss from npbert's (float32 both; checked before timing)."""
    import onnx

    from npbert.model import pretraining_forward
    B, T = batch["input_ids"].shape
    model = build_graph(config, params, B, T, len(batch["mlm_positions"]))
    onnx.checker.check_model(model)
    with tempfile.TemporaryDirectory(prefix="npbert-ort-") as directory:   # the session keeps the model in memory
        path = os.path.join(directory, "bert.onnx")
        onnx.save(model, path)
        session = ort_session(path, threads, spinning)
    ops = [n.op_type for n in model.graph.node]
    feed = {k: np.asarray(batch[k], np.int64) for k in INPUTS}
    mlm, nsp, loss = session.run(None, feed)
    out, _ = pretraining_forward(params, config, **{k: batch[k] for k in INPUTS})
    scale = max(np.abs(out["mlm_logits"]).max(), np.abs(out["nsp_logits"]).max())
    info = dict(fused={op: ops.count(op) for op in FUSED_OPS},
                max_logit_diff=float(max(np.abs(mlm - out["mlm_logits"]).max(), np.abs(nsp - out["nsp_logits"]).max())),
                logit_scale=float(scale), loss_diff=float(abs(float(loss) - float(out["loss"]))))
    if not info["max_logit_diff"] <= 1e-4 * max(scale, 1.0):
        raise AssertionError(f"ONNX Runtime does not compute npbert's model: {info}")

    def infer_step():
        return float(session.run(["loss"], feed)[0])

    return infer_step, info
