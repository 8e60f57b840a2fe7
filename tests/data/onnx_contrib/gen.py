"""Writes the com.microsoft contrib-op test models of tests/unit/test_onnx_contrib.c.

Each case is a one-node ONNX model built with the onnx package's helpers,
in ONNX's backend-test layout: <case>/model.onnx and
<case>/test_data_set_0/{input,output}_N.pb. The expected outputs are computed
here in numpy (float64) from ONNX Runtime's contrib-op spec
(docs/ContribOperators.md and the CPU kernels' documented semantics), not
from libmil.

Run with: /usr/bin/python3 tests/data/onnx_contrib/gen.py  (numpy, onnx)
"""
import math
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MS = "com.microsoft"
rng = np.random.default_rng(20261128)
CASES = []


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def elem(a):
    return {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
            np.dtype(np.int64): TensorProto.INT64}[a.dtype]


def case(name, op, inputs, outputs, attrs=None, inits=None, domain=MS, opset=17, listed=True, node_name=""):
    """inputs: list of (name, array) fed at run time, or (name, None) for an
    absent optional input; inits: {name: array} initializers (constants);
    outputs: list of (name, expected array) or (name, None) for an unused
    output."""
    inits = inits or {}
    in_names = [n if (a is not None or n in inits) else "" for n, a in inputs]
    out_names = [n if a is not None else "" for n, a in outputs]
    node = helper.make_node(op, in_names, out_names, name=node_name, domain=domain, **(attrs or {}))
    g_in = [helper.make_tensor_value_info(n, elem(a), a.shape) for n, a in inputs if a is not None and n not in inits]
    g_out = [helper.make_tensor_value_info(n, TensorProto.FLOAT if a.dtype != np.int32 else TensorProto.INT32, a.shape)
             for n, a in outputs if a is not None]
    g = helper.make_graph([node], name, g_in, g_out, [numpy_helper.from_array(v, n) for n, v in inits.items()])
    imports = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    m = helper.make_model(g, opset_imports=imports, producer_name="libmil tests/data/onnx_contrib/gen.py")
    m.ir_version = 8
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    k = 0
    for n, a in inputs:
        if a is None or n in inits:
            continue
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "input_%d.pb" % k))
        k += 1
    k = 0
    for n, a in outputs:
        if a is None:
            continue
        a = a.astype(np.int32) if a.dtype in (np.int32, np.int64) else a.astype(np.float32)
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "output_%d.pb" % k))
        k += 1
    if listed:
        CASES.append(name)


def graph_case(name, nodes, inputs, inits, outputs, opset=17):
    """A graph of several nodes: inputs [(name, array)] fed at run time,
    inits {name: array}, outputs [(name, expected)]."""
    g_in = [helper.make_tensor_value_info(n, elem(a), a.shape) for n, a in inputs]
    g_out = [helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape) for n, a in outputs]
    g = helper.make_graph(nodes, name, g_in, g_out, [numpy_helper.from_array(v, n) for n, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
                          producer_name="libmil tests/data/onnx_contrib/gen.py")
    m.ir_version = 8
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "input_%d.pb" % k))
    for k, (n, a) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(a.astype(np.float32), n),
                         os.path.join(d, "test_data_set_0", "output_%d.pb" % k))
    CASES.append(name)


# ---------------------------------------------------------------- references
erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def layer_norm(x, g, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * g
    return (y + b if b is not None else y), mu, 1 / np.sqrt(var + eps)


def rms_norm(x, g, eps):
    x = x.astype(np.float64)
    inv = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return x * inv * g, inv


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def heads(x, n):  # (B, S, N*H) -> (B, N, S, H)
    b, s, d = x.shape
    return x.reshape(b, s, n, d // n).transpose(0, 2, 1, 3)


def merge(y):  # (B, N, S, H) -> (B, S, N*H)
    b, n, s, h = y.shape
    return y.transpose(0, 2, 1, 3).reshape(b, s, n * h)


def attend(q, k, v, bias=None, scale=None, softcap=0.0):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.swapaxes(-1, -2) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    return softmax(s) @ v


def rotary(x, cos, sin, rot, interleaved):
    """x (..., S, H) with cos / sin broadcastable to (..., S, rot/2)"""
    x = x.astype(np.float64).copy()
    if interleaved:
        x1, x2 = x[..., 0:rot:2].copy(), x[..., 1:rot:2].copy()
        x[..., 0:rot:2] = x1 * cos - x2 * sin
        x[..., 1:rot:2] = x2 * cos + x1 * sin
    else:
        h = rot // 2
        x1, x2 = x[..., :h].copy(), x[..., h:rot].copy()
        x[..., :h] = x1 * cos - x2 * sin
        x[..., h:rot] = x2 * cos + x1 * sin
    return x


def caches(max_pos, half, base=10000.0):
    inv = 1.0 / base ** (np.arange(half) / half)
    ang = np.arange(max_pos)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def causal(S, T, fill, window=-1):
    P = T - S
    m = np.zeros((S, T))
    for i in range(S):
        for j in range(T):
            if j > P + i or (window > 0 and j <= P + i - window):  # local_window_size: the last `window` keys
                m[i, j] = fill
    return m


# ---------------------------------------------------------------- activations
x = f32(2, 3, 8, scale=2)
bias8 = f32(8)
case("gelu", "Gelu", [("X", x)], [("Y", gelu(x.astype(np.float64)))])
case("bias_gelu", "BiasGelu", [("A", x), ("B", bias8)], [("C", gelu(x.astype(np.float64) + bias8))])
case("fast_gelu", "FastGelu", [("X", x), ("bias", bias8)], [("Y", gelu_tanh(x.astype(np.float64) + bias8))])
case("fast_gelu_nobias", "FastGelu", [("X", x)], [("Y", gelu_tanh(x.astype(np.float64)))])
case("quick_gelu", "QuickGelu", [("X", x)], [("Y", x * sigmoid(1.702 * x.astype(np.float64)))])
case("quick_gelu_alpha", "QuickGelu", [("X", x)], [("Y", x * sigmoid(1.0 * x.astype(np.float64)))],
     attrs={"alpha": 1.0})
skip = f32(2, 3, 8)
case("bias_add", "BiasAdd", [("X", x), ("bias", bias8), ("skip", skip)],
     [("Y", x.astype(np.float64) + bias8 + skip)])
a, b = f32(2, 3, 4), f32(2, 5, 4)
case("fused_matmul", "FusedMatMul", [("A", a), ("B", b)],
     [("Y", 0.5 * (a.astype(np.float64) @ b.swapaxes(-1, -2)))], attrs={"alpha": 0.5, "transB": 1})
a2 = f32(4, 3)
bb = f32(4, 6)
case("fused_matmul_trans_a", "FusedMatMul", [("A", a2), ("B", bb)], [("Y", a2.T.astype(np.float64) @ bb)],
     attrs={"transA": 1})
# transBatchA: A (d0, d1, d2) is used as (d1, d0, d2)
ab = f32(3, 2, 4)
b3 = f32(2, 4, 5)
case("fused_matmul_trans_batch", "FusedMatMul", [("A", ab), ("B", b3)],
     [("Y", ab.transpose(1, 0, 2).astype(np.float64) @ b3)], attrs={"transBatchA": 1})

# ---------------------------------------------------------------- norms
H = 16
xs, sk, gam, bet, bia = f32(2, 3, H, scale=3), f32(2, 3, H), f32(H), f32(H), f32(H)
s = xs.astype(np.float64) + sk + bia
y, mu, inv = layer_norm(s, gam, bet, 1e-12)
case("skip_layer_norm", "SkipLayerNormalization",
     [("input", xs), ("skip", sk), ("gamma", gam), ("beta", bet), ("bias", bia)],
     [("output", y), ("mean", None), ("inv_std_var", None), ("input_skip_bias_sum", s)],
     inits={"gamma": gam, "beta": bet, "bias": bia})
s2 = xs.astype(np.float64) + sk
y2, mu2, inv2 = layer_norm(s2, gam, None, 1e-5)
case("skip_layer_norm_stats", "SkipLayerNormalization", [("input", xs), ("skip", sk), ("gamma", gam)],
     [("output", y2), ("mean", mu2), ("inv_std_var", inv2)], attrs={"epsilon": 1e-5})
y3, inv3 = rms_norm(s, gam, 1e-6)
case("skip_simplified_layer_norm", "SkipSimplifiedLayerNormalization",
     [("input", xs), ("skip", sk), ("gamma", gam), ("bias", bia)],
     [("output", y3), ("mean", None), ("inv_std_var", inv3), ("input_skip_bias_sum", s)],
     attrs={"epsilon": 1e-6}, inits={"gamma": gam})
xl = f32(2, 3, H, scale=300)  # squares overflow fp16 unless scaled first
y4, _ = rms_norm(xl, gam, 1e-5)
case("simplified_layer_norm", "SimplifiedLayerNormalization", [("X", xl), ("scale", gam)], [("Y", y4)],
     domain="", inits={"scale": gam})
y5, inv5 = rms_norm(xs, gam, 1e-6)
case("simplified_layer_norm_ms", "SimplifiedLayerNormalization", [("X", xs), ("scale", gam)],
     [("Y", y5), ("inv_std_var", inv5)], attrs={"epsilon": 1e-6, "axis": -1}, domain="")

# ONNX Runtime's LayerNormalization of the ai.onnx domain before opset 17 (its optimizer's fused layer norm)
y6, mu6, inv6 = layer_norm(xs, gam, bet, 1e-5)
case("layer_norm_opset13", "LayerNormalization", [("X", xs), ("Scale", gam), ("B", bet)], [("Y", y6)],
     domain="", opset=13, inits={"Scale": gam, "B": bet})

V, P_, B_, S_ = 10, 6, 2, 4
ids = rng.integers(0, V, (B_, S_)).astype(np.int32)
seg = rng.integers(0, 2, (B_, S_)).astype(np.int32)
mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
we, pe, se = f32(V, H), f32(P_, H), f32(2, H)
emb = we[ids].astype(np.float64) + pe[np.arange(S_)][None] + se[seg]
ye, _, _ = layer_norm(emb, gam, bet, 1e-12)
case("embed_layer_norm", "EmbedLayerNormalization",
     [("input_ids", ids), ("segment_ids", seg), ("word_embedding", we), ("position_embedding", pe),
      ("segment_embedding", se), ("gamma", gam), ("beta", bet), ("mask", mask)],
     [("output", ye), ("mask_index", mask.sum(1).astype(np.int32)), ("embedding_sum", emb)],
     inits={"word_embedding": we, "position_embedding": pe, "segment_embedding": se, "gamma": gam, "beta": bet})
pos = np.array([[2, 3, 4, 5]] * B_, np.int32)
emb2 = we[ids].astype(np.float64) + pe[pos]
ye2, _, _ = layer_norm(emb2, gam, bet, 1e-5)
case("embed_layer_norm_pos", "EmbedLayerNormalization",
     [("input_ids", ids), ("segment_ids", None), ("word_embedding", we), ("position_embedding", pe),
      ("segment_embedding", None), ("gamma", gam), ("beta", bet), ("mask", None), ("position_ids", pos)],
     [("output", ye2), ("mask_index", np.zeros(B_, np.int32))], attrs={"epsilon": 1e-5},
     inits={"word_embedding": we, "position_embedding": pe, "gamma": gam, "beta": bet})

# ---------------------------------------------------------------- rotary
B, S, N, Hd = 2, 5, 2, 8
cosc, sinc = caches(16, Hd // 2)
xr = f32(B, S, N * Hd)
pid = np.array([[0, 1, 2, 3, 4], [3, 4, 5, 6, 7]], np.int64)
c_, s_ = cosc[pid][:, None], sinc[pid][:, None]  # (B, 1, S, H/2)
case("rotary_3d", "RotaryEmbedding", [("input", xr), ("position_ids", pid), ("cos_cache", cosc), ("sin_cache", sinc)],
     [("output", merge(rotary(heads(xr, N), c_, s_, Hd, False)))], attrs={"num_heads": N})
x4 = f32(B, N, S, Hd)
off = np.array([3], np.int64)
pos1 = 3 + np.arange(S)
case("rotary_4d_interleaved", "RotaryEmbedding",
     [("input", x4), ("position_ids", off), ("cos_cache", cosc), ("sin_cache", sinc)],
     [("output", rotary(x4, cosc[pos1], sinc[pos1], Hd, True))], attrs={"interleaved": 1})
cos4, sin4 = caches(16, 2)  # rotary_embedding_dim 4 of head size 8
case("rotary_partial", "RotaryEmbedding", [("input", xr), ("position_ids", pid), ("cos_cache", cos4), ("sin_cache", sin4)],
     [("output", merge(rotary(heads(xr, N), cos4[pid][:, None], sin4[pid][:, None], 4, False)))],
     attrs={"num_heads": N, "rotary_embedding_dim": 4})

# ---------------------------------------------------------------- Attention
B, S, Din, N = 2, 4, 8, 2
D = 8
xa, wa, ba = f32(B, S, Din), f32(Din, 3 * D, scale=0.5), f32(3 * D, scale=0.1)
qkv = xa.astype(np.float64) @ wa + ba
q, k, v = heads(qkv[..., :D], N), heads(qkv[..., D:2 * D], N), heads(qkv[..., 2 * D:], N)
m2 = np.array([[1, 1, 1, 1], [1, 1, 1, 0]], np.int32)
bias2 = np.where(m2 > 0, 0.0, -10000.0)[:, None, None, :]
case("attention_mask2d", "Attention", [("input", xa), ("weights", wa), ("bias", ba), ("mask_index", m2)],
     [("output", merge(attend(q, k, v, bias2)))], attrs={"num_heads": N}, inits={"weights": wa, "bias": ba})
lens = np.array([4, 2], np.int32)
bias1 = np.where(np.arange(S)[None] < lens[:, None], 0.0, -10000.0)[:, None, None, :]
case("attention_causal_lens", "Attention", [("input", xa), ("weights", wa), ("bias", ba), ("mask_index", lens)],
     [("output", merge(attend(q, k, v, bias1 + causal(S, S, -10000.0))))],
     attrs={"num_heads": N, "unidirectional": 1}, inits={"weights": wa, "bias": ba})
P = 3
past = f32(2, B, N, P, D // N)
kk, vv = np.concatenate([past[0], k], 2), np.concatenate([past[1], v], 2)
case("attention_past", "Attention", [("input", xa), ("weights", wa), ("bias", ba), ("mask_index", None), ("past", past)],
     [("output", merge(attend(q, kk, vv, causal(S, P + S, -10000.0), scale=0.3))), ("present", np.stack([kk, vv]))],
     attrs={"num_heads": N, "unidirectional": 1, "scale": 0.3}, inits={"weights": wa, "bias": ba})

# ---------------------------------------------------------------- MultiHeadAttention
L = 6
qm, km, vm, bm = f32(B, S, D), f32(B, L, D), f32(B, L, D), f32(3 * D, scale=0.1)
kpm = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
qh, kh, vh = heads(qm + bm[:D].astype(np.float64), N), heads(km + bm[D:2 * D].astype(np.float64), N), heads(vm + bm[2 * D:].astype(np.float64), N)
ab4 = f32(1, N, S, L)
case("mha_cross", "MultiHeadAttention",
     [("query", qm), ("key", km), ("value", vm), ("bias", bm), ("key_padding_mask", kpm), ("attention_bias", ab4)],
     [("output", merge(attend(qh, kh, vh, np.where(kpm > 0, 0.0, -10000.0)[:, None, None, :] + ab4)))],
     attrs={"num_heads": N})
packed = f32(B, S, N, 3, D // N)
pq, pk_, pv_ = (packed[:, :, :, i].transpose(0, 2, 1, 3) for i in range(3))
case("mha_packed_qkv", "MultiHeadAttention", [("query", packed)], [("output", merge(attend(pq, pk_, pv_)))],
     attrs={"num_heads": N})
pkey, pval = f32(B, N, P, D // N), f32(B, N, P, D // N)
ks, vs = f32(B, S, D), f32(B, S, D)
kc, vc = np.concatenate([pkey, heads(ks, N)], 2), np.concatenate([pval, heads(vs, N)], 2)
case("mha_past_causal", "MultiHeadAttention",
     [("query", qm), ("key", ks), ("value", vs), ("bias", None), ("key_padding_mask", None), ("attention_bias", None),
      ("past_key", pkey), ("past_value", pval)],
     [("output", merge(attend(heads(qm, N), kc, vc, causal(S, P + S, -10000.0)))), ("present_key", kc),
      ("present_value", vc)], attrs={"num_heads": N, "unidirectional": 1})

# refused: a key_padding_mask of shape (3 B + 2) (the packed format of ONNX Runtime's CUDA kernels); the
# test checks the message names the node and the input (no output data)
case("refuse_mha_qk", "MultiHeadAttention",
     [("query", qm), ("key", km), ("value", vm), ("bias", None),
      ("key_padding_mask", np.zeros(3 * B + 2, np.int32))],
     [("output", np.zeros((B, S, D), np.float32))], attrs={"num_heads": N}, listed=False, node_name="the_mha")

# ---------------------------------------------------------------- GroupQueryAttention
B, S, N, KV, Hd = 2, 5, 4, 2, 16
qg, kg, vg = f32(B, S, N * Hd), f32(B, S, KV * Hd), f32(B, S, KV * Hd)
seqlens = np.array([S - 1, S - 1], np.int32)
total = np.array(S, np.int32)


def rep(t, g):
    return np.repeat(t, g, axis=1)


def gqa_ref(q, k, v, P, seql, window=-1, softcap=0.0, scale=None):
    T = k.shape[2]
    S = q.shape[2]
    bias = causal(S, T, -np.inf, window)[None, None] + np.where(np.arange(T)[None] <= seql[:, None], 0.0, -np.inf)[:, None, None, :]
    return merge(attend(q, rep(k, N // KV), rep(v, N // KV), bias, scale=scale, softcap=softcap))


case("gqa_prefill", "GroupQueryAttention",
     [("query", qg), ("key", kg), ("value", vg), ("past_key", None), ("past_value", None), ("seqlens_k", seqlens),
      ("total_sequence_length", total)],
     [("output", gqa_ref(heads(qg, N), heads(kg, KV), heads(vg, KV), 0, seqlens)), ("present_key", heads(kg, KV)),
      ("present_value", heads(vg, KV))], attrs={"num_heads": N, "kv_num_heads": KV},
     inits={"total_sequence_length": total})
seql2 = np.array([S - 1, S - 3], np.int32)  # the second row right-padded
case("gqa_prefill_padded_softcap", "GroupQueryAttention",
     [("query", qg), ("key", kg), ("value", vg), ("past_key", None), ("past_value", None), ("seqlens_k", seql2),
      ("total_sequence_length", total)],
     [("output", gqa_ref(heads(qg, N), heads(kg, KV), heads(vg, KV), 0, seql2, softcap=2.0))],
     attrs={"num_heads": N, "kv_num_heads": KV, "softcap": 2.0})
# local_window_size W: each query sees its last W keys (itself included)
case("gqa_local_window", "GroupQueryAttention",
     [("query", qg), ("key", kg), ("value", vg), ("past_key", None), ("past_value", None), ("seqlens_k", seqlens),
      ("total_sequence_length", total)],
     [("output", gqa_ref(heads(qg, N), heads(kg, KV), heads(vg, KV), 0, seqlens, window=3, scale=0.2))],
     attrs={"num_heads": N, "kv_num_heads": KV, "local_window_size": 3, "scale": 0.2})
cg, sg = caches(16, Hd // 2)
qr = rotary(heads(qg, N), cg[:S], sg[:S], Hd, False)
kr = rotary(heads(kg, KV), cg[:S], sg[:S], Hd, False)
case("gqa_rotary_packed", "GroupQueryAttention",
     [("query", np.concatenate([qg, kg, vg], -1)), ("key", None), ("value", None), ("past_key", None),
      ("past_value", None), ("seqlens_k", seqlens), ("total_sequence_length", total), ("cos_cache", cg),
      ("sin_cache", sg)],
     [("output", gqa_ref(qr, kr, heads(vg, KV), 0, seqlens))],
     attrs={"num_heads": N, "kv_num_heads": KV, "do_rotary": 1}, inits={"cos_cache": cg, "sin_cache": sg})
P, S1 = 3, 1
q1, k1, v1 = f32(B, S1, N * Hd), f32(B, S1, KV * Hd), f32(B, S1, KV * Hd)
pkg, pvg = f32(B, KV, P, Hd), f32(B, KV, P, Hd)
sl = np.array([P + S1 - 1] * B, np.int32)
tot = np.array(P + S1, np.int32)
qr1 = rotary(heads(q1, N), cg[P:P + S1], sg[P:P + S1], Hd, True)
kr1 = rotary(heads(k1, KV), cg[P:P + S1], sg[P:P + S1], Hd, True)
kcat, vcat = np.concatenate([pkg, kr1], 2), np.concatenate([pvg, heads(v1, KV)], 2)
case("gqa_decode_past_rotary", "GroupQueryAttention",
     [("query", q1), ("key", k1), ("value", v1), ("past_key", pkg), ("past_value", pvg), ("seqlens_k", sl),
      ("total_sequence_length", tot), ("cos_cache", cg), ("sin_cache", sg)],
     [("output", gqa_ref(qr1, kcat, vcat, P, sl)), ("present_key", kcat), ("present_value", vcat)],
     attrs={"num_heads": N, "kv_num_heads": KV, "do_rotary": 1, "rotary_interleaved": 1},
     inits={"cos_cache": cg, "sin_cache": sg})

# position_ids given (prefill): the rows of the caches, here positions 2 .. S+1
qp = rotary(heads(qg, N), cg[2:S + 2], sg[2:S + 2], Hd, False)
kp = rotary(heads(kg, KV), cg[2:S + 2], sg[2:S + 2], Hd, False)
case("gqa_prefill_position_ids", "GroupQueryAttention",
     [("query", qg), ("key", kg), ("value", vg), ("past_key", None), ("past_value", None), ("seqlens_k", seqlens),
      ("total_sequence_length", total), ("cos_cache", cg), ("sin_cache", sg),
      ("position_ids", np.tile(np.arange(2, S + 2, dtype=np.int64), (B, 1)))],
     [("output", gqa_ref(qp, kp, heads(vg, KV), 0, seqlens))],
     attrs={"num_heads": N, "kv_num_heads": KV, "do_rotary": 1}, inits={"cos_cache": cg, "sin_cache": sg})

# ---------------------------------------------------------------- whole layers
# A BERT encoder layer as ONNX Runtime's transformer optimizer fuses it:
# EmbedLayerNormalization (its mask_index feeds Attention's 1-D mask_index),
# Attention, SkipLayerNormalization, MatMul + BiasGelu, MatMul +
# SkipLayerNormalization (with bias).
B, S, Hh, N, V, FF = 2, 6, 16, 2, 20, 32
ids = rng.integers(0, V, (B, S)).astype(np.int32)
segs = np.zeros((B, S), np.int32)
msk = np.array([[1] * 6, [1, 1, 1, 1, 0, 0]], np.int32)
W = {"we": f32(V, Hh), "pe": f32(S, Hh), "se": f32(2, Hh), "g0": 1 + f32(Hh, scale=0.1), "b0": f32(Hh, scale=0.1),
     "wqkv": f32(Hh, 3 * Hh, scale=0.3), "bqkv": f32(3 * Hh, scale=0.1), "wo": f32(Hh, Hh, scale=0.3),
     "bo": f32(Hh, scale=0.1), "g1": 1 + f32(Hh, scale=0.1), "b1": f32(Hh, scale=0.1), "w1": f32(Hh, FF, scale=0.3),
     "bf": f32(FF, scale=0.1), "w2": f32(FF, Hh, scale=0.3), "bb": f32(Hh, scale=0.1), "g2": 1 + f32(Hh, scale=0.1),
     "b2": f32(Hh, scale=0.1)}
nodes = [
    helper.make_node("EmbedLayerNormalization", ["ids", "segs", "we", "pe", "se", "g0", "b0", "mask"], ["e", "mi"],
                     domain=MS, epsilon=1e-12),
    helper.make_node("Attention", ["e", "wqkv", "bqkv", "mi"], ["a"], domain=MS, num_heads=N),
    helper.make_node("MatMul", ["a", "wo"], ["ao"]),
    helper.make_node("SkipLayerNormalization", ["ao", "e", "g1", "b1", "bo"], ["h1"], domain=MS, epsilon=1e-12),
    helper.make_node("MatMul", ["h1", "w1"], ["f1"]),
    helper.make_node("BiasGelu", ["f1", "bf"], ["f2"], domain=MS),
    helper.make_node("MatMul", ["f2", "w2"], ["f3"]),
    helper.make_node("SkipLayerNormalization", ["f3", "h1", "g2", "b2", "bb"], ["y"], domain=MS, epsilon=1e-12),
]
w = {k: v.astype(np.float64) for k, v in W.items()}
e, _, _ = layer_norm(w["we"][ids] + w["pe"][np.arange(S)][None] + w["se"][segs], w["g0"], w["b0"], 1e-12)
qkv = e @ w["wqkv"] + w["bqkv"]
lens = msk.sum(1)
amask = np.where(np.arange(S)[None] < lens[:, None], 0.0, -10000.0)[:, None, None, :]
att = merge(attend(heads(qkv[..., :Hh], N), heads(qkv[..., Hh:2 * Hh], N), heads(qkv[..., 2 * Hh:], N), amask))
h1, _, _ = layer_norm(att @ w["wo"] + e + w["bo"], w["g1"], w["b1"], 1e-12)
f2 = gelu(h1 @ w["w1"] + w["bf"])
y, _, _ = layer_norm(f2 @ w["w2"] + h1 + w["bb"], w["g2"], w["b2"], 1e-12)
graph_case("bert_layer", nodes, [("ids", ids), ("segs", segs), ("mask", msk)], W, [("y", y)])

# A decoder block as ONNX Runtime's GenAI builder writes it (prefill):
# SimplifiedLayerNormalization, MatMuls, GroupQueryAttention with rotary,
# MatMul, SkipSimplifiedLayerNormalization, a SiLU-gated MLP (QuickGelu with
# alpha 1 is SiLU) and the residual input_skip_bias_sum added back.
B, S, Hh, N, KV, Hd, FF = 1, 6, 64, 4, 2, 16, 96
xin = f32(B, S, Hh)
cgl, sgl = caches(32, Hd // 2)
W = {"ga": 1 + f32(Hh, scale=0.1), "wq": f32(Hh, N * Hd, scale=0.2), "wk": f32(Hh, KV * Hd, scale=0.2),
     "wv": f32(Hh, KV * Hd, scale=0.2), "wo": f32(N * Hd, Hh, scale=0.2), "gm": 1 + f32(Hh, scale=0.1),
     "wg": f32(Hh, FF, scale=0.2), "wu": f32(Hh, FF, scale=0.2), "wd": f32(FF, Hh, scale=0.2), "cos": cgl, "sin": sgl,
     "total": np.array(S, np.int32)}
nodes = [
    helper.make_node("SimplifiedLayerNormalization", ["x", "ga"], ["xn"], epsilon=1e-6),
    helper.make_node("MatMul", ["xn", "wq"], ["q"]),
    helper.make_node("MatMul", ["xn", "wk"], ["k"]),
    helper.make_node("MatMul", ["xn", "wv"], ["v"]),
    helper.make_node("GroupQueryAttention", ["q", "k", "v", "", "", "seqlens", "total", "cos", "sin"],
                     ["o", "pk", "pv"], domain=MS, num_heads=N, kv_num_heads=KV, do_rotary=1),
    helper.make_node("MatMul", ["o", "wo"], ["ao"]),
    helper.make_node("SkipSimplifiedLayerNormalization", ["ao", "x", "gm"], ["hn", "", "", "res"], domain=MS,
                     epsilon=1e-6),
    helper.make_node("MatMul", ["hn", "wg"], ["g"]),
    helper.make_node("QuickGelu", ["g"], ["gs"], domain=MS, alpha=1.0),
    helper.make_node("MatMul", ["hn", "wu"], ["u"]),
    helper.make_node("Mul", ["gs", "u"], ["gu"]),
    helper.make_node("MatMul", ["gu", "wd"], ["d"]),
    helper.make_node("Add", ["d", "res"], ["y"]),
]
w = {k: v.astype(np.float64) for k, v in W.items()}
x64 = xin.astype(np.float64)
xn, _ = rms_norm(x64, w["ga"], 1e-6)
qh = rotary(heads(xn @ w["wq"], N), cgl[:S], sgl[:S], Hd, False)
kh = rotary(heads(xn @ w["wk"], KV), cgl[:S], sgl[:S], Hd, False)
vh = heads(xn @ w["wv"], KV)
seql = np.array([S - 1], np.int32)
o = merge(attend(qh, rep(kh, N // KV), rep(vh, N // KV), causal(S, S, -np.inf)))
res = o @ w["wo"] + x64
hn, _ = rms_norm(res, w["gm"], 1e-6)
g = hn @ w["wg"]
y = (g * sigmoid(g) * (hn @ w["wu"])) @ w["wd"] + res
graph_case("llm_block", nodes, [("x", xin), ("seqlens", seql)], W, [("y", y), ("pk", kh), ("pv", vh)])

with open(os.path.join(HERE, "cases.txt"), "w") as f:
    f.write("# written by gen.py: one test case directory per line\n")
    for c in CASES:
        f.write(c + "\n")
print(len(CASES), "cases")
