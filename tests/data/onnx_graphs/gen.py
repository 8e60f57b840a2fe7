"""Generates the ONNX graphs of tests/unit/test_onnx_graphs.c and their
numpy reference outputs (run: /usr/bin/python3 gen.py, in this folder).

  topo_cast_after   an fp16 graph as onnxconverter-common's keep_io_types
                    writes it: the input Cast listed after its users
  topo_cycle        two nodes that feed each other (must be refused)
  if_lstm           an LSTM in both branches of an If on a run-time flag,
                    outer-scope weights, symbolic sequence and batch
  names             value names that are not identifiers
"""
import json

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h, numpy_helper as nh

rng = np.random.default_rng(32)


def save(model, name, ins, outs):
    onnx.checker.check_model(model)
    onnx.save(model, name + ".onnx")
    for i, a in enumerate(ins):
        np.save("%s.in%d.npy" % (name, i), a)
    for i, a in enumerate(outs):
        np.save("%s.out%d.npy" % (name, i), a)


def opset(v=16):
    return [h.make_opsetid("", v)]


# ---- topo_cast_after ----
x = rng.standard_normal((2, 3)).astype(np.float32)
w = rng.standard_normal((2, 3)).astype(np.float16)
nodes = [
    h.make_node("Mul", ["graph_input_cast_0", "w"], ["m"], name="mul"),
    h.make_node("Relu", ["m"], ["r"], name="relu"),
    h.make_node("Cast", ["r"], ["y"], to=TP.FLOAT, name="graph_output_cast_0"),
    h.make_node("Cast", ["x"], ["graph_input_cast_0"], to=TP.FLOAT16, name="graph_input_cast"),
]
g = h.make_graph(nodes, "keep_io_types", [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])], [nh.from_array(w, "w")])
m = h.make_model(g, opset_imports=opset())
ref = np.maximum(x.astype(np.float16) * w, 0).astype(np.float32)
# the checker wants sorted graphs: check a sorted copy, save the unsorted one
onnx.save(m, "topo_cast_after.onnx")
np.save("topo_cast_after.in0.npy", x)
np.save("topo_cast_after.out0.npy", ref)

# ---- topo_cycle ----
nodes = [
    h.make_node("Add", ["x", "b"], ["a"], name="add_in_cycle"),
    h.make_node("Relu", ["a"], ["b"], name="relu_in_cycle"),
    h.make_node("Identity", ["a"], ["y"], name="out"),
]
g = h.make_graph(nodes, "cycle", [h.make_tensor_value_info("x", TP.FLOAT, [2])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [2])])
onnx.save(h.make_model(g, opset_imports=opset()), "topo_cycle.onnx")


# ---- if_lstm ----
def sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_ref(X, W, R, B, h0, c0):
    """ONNX LSTM, forward, one direction, default activations: Y_h (1,B,H)."""
    H = R.shape[-1]
    Wi, Wo, Wf, Wc = np.split(W[0], 4)
    Ri, Ro, Rf, Rc = np.split(R[0], 4)
    b = B[0][:4 * H] + B[0][4 * H:]
    bi, bo, bf, bc = np.split(b, 4)
    ht, ct = h0[0], c0[0]
    for t in range(X.shape[0]):
        xt = X[t]
        i = sigmoid(xt @ Wi.T + ht @ Ri.T + bi)
        f = sigmoid(xt @ Wf.T + ht @ Rf.T + bf)
        cc = np.tanh(xt @ Wc.T + ht @ Rc.T + bc)
        ct = f * ct + i * cc
        o = sigmoid(xt @ Wo.T + ht @ Ro.T + bo)
        ht = o * np.tanh(ct)
    return ht[None].astype(np.float32), ct[None].astype(np.float32)


S, Bn, I, H = 5, 2, 4, 3
params = {}
for br in ("t", "e"):
    params[br] = (rng.standard_normal((1, 4 * H, I)).astype(np.float32) * 0.5,
                  rng.standard_normal((1, 4 * H, H)).astype(np.float32) * 0.5,
                  rng.standard_normal((1, 8 * H)).astype(np.float32) * 0.2)
inits = []
for br, (W, R, B) in params.items():
    inits += [nh.from_array(W, "W_" + br), nh.from_array(R, "R_" + br), nh.from_array(B, "B_" + br)]


def branch(br, wide):
    nodes = [h.make_node("LSTM", ["X", "W_" + br, "R_" + br, "B_" + br, "", "h0", "c0"],
                         ["", "Yh_" + br, "Yc_" + br], hidden_size=H, name="lstm_" + br)]
    outs = ["Yh_" + br]
    if wide:
        nodes.append(h.make_node("Add", ["Yh_" + br, "Yc_" + br], ["sum_" + br], name="sum_" + br))
        outs.append("sum_" + br)
    else:
        nodes.append(h.make_node("Identity", ["Yc_" + br], ["id_" + br], name="id_" + br))
        outs.append("id_" + br)
    return h.make_graph(nodes, "branch_" + br, [],
                        [h.make_tensor_value_info(o, TP.FLOAT, None) for o in outs])


nodes = [h.make_node("If", ["flag"], ["yh", "second"], then_branch=branch("t", False),
                     else_branch=branch("e", True), name="if_rate")]
g = h.make_graph(nodes, "if_lstm", [
    h.make_tensor_value_info("X", TP.FLOAT, ["seq", "batch", I]),
    h.make_tensor_value_info("h0", TP.FLOAT, [1, "batch", H]),
    h.make_tensor_value_info("c0", TP.FLOAT, [1, "batch", H]),
    h.make_tensor_value_info("flag", TP.BOOL, []),
], [h.make_tensor_value_info("yh", TP.FLOAT, [1, "batch", H]),
    h.make_tensor_value_info("second", TP.FLOAT, [1, "batch", H])], inits)
m = h.make_model(g, opset_imports=opset())
onnx.checker.check_model(m)
onnx.save(m, "if_lstm.onnx")
X = rng.standard_normal((S, Bn, I)).astype(np.float32)
h0 = rng.standard_normal((1, Bn, H)).astype(np.float32) * 0.5
c0 = rng.standard_normal((1, Bn, H)).astype(np.float32) * 0.5
for flag, tag, br in ((1, "then", "t"), (0, "else", "e")):
    yh, yc = lstm_ref(X, *params[br], h0, c0)
    second = yc if br == "t" else yh + yc
    np.save("if_lstm_%s.in0.npy" % tag, X)
    np.save("if_lstm_%s.in1.npy" % tag, h0)
    np.save("if_lstm_%s.in2.npy" % tag, c0)
    np.save("if_lstm_%s.in3.npy" % tag, np.array(flag, dtype=np.int32))
    np.save("if_lstm_%s.out0.npy" % tag, yh)
    np.save("if_lstm_%s.out1.npy" % tag, second)

# ---- names ----
label = json.dumps({"0": "cat", "1": "dog"})
a = rng.standard_normal((2, 3)).astype(np.float32)
b = rng.standard_normal((2, 3)).astype(np.float32)
nodes = [
    h.make_node("Add", ["onnx::Flatten_0", "x.1"], ["onnx::Relu_2"], name="/add/Add"),
    h.make_node("Relu", ["onnx::Relu_2"], [label], name="/relu/Relu"),
]
g = h.make_graph(nodes, "names", [h.make_tensor_value_info("onnx::Flatten_0", TP.FLOAT, [2, 3]),
                                  h.make_tensor_value_info("x.1", TP.FLOAT, [2, 3])],
                 [h.make_tensor_value_info(label, TP.FLOAT, [2, 3])])
save(h.make_model(g, opset_imports=opset()), "names", [a, b], [np.maximum(a + b, 0)])


# ---- dynamic quantization: DynamicQuantizeLinear + ConvInteger / MatMulInteger ----
def dql_ref(x):
    """ONNX's reference DynamicQuantizeLinear (fp32 arithmetic, rint = half to even)."""
    maxx = np.float32(np.maximum(0, np.max(x)))
    minx = np.float32(np.minimum(0, np.min(x)))
    scale = np.float32(1.0 if maxx == minx else (maxx - minx)) / np.float32(255)
    zp = np.rint(np.clip(np.float32(0) - minx / scale, 0, 255))
    q = np.clip(np.rint(x / scale) + zp, 0, 255)
    return q.astype(np.int64), np.float32(scale), np.int64(zp)


def conv_int_ref(xc, wc, pads, strides):
    xc = np.pad(xc, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    N, C, Hh, Ww = xc.shape
    M, _, kh, kw = wc.shape
    oh, ow = (Hh - kh) // strides[0] + 1, (Ww - kw) // strides[1] + 1
    acc = np.zeros((N, M, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            patch = xc[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw]
            acc[:, :, i, j] = np.tensordot(patch, wc, axes=([1, 2, 3], [1, 2, 3]))
    return acc


# x of a wide range, on purpose with values on .5 boundaries of x / scale
x = (rng.standard_normal((1, 8, 9, 9)) * 3).astype(np.float32)
x[0, 0, 0, :4] = [0.0, 2.5, -2.5, 7.5]
w = rng.integers(0, 256, (16, 8, 3, 3)).astype(np.uint8)
wzp = rng.integers(100, 156, (16,)).astype(np.uint8)  # per output channel
pads, strides = [1, 1, 1, 1], [2, 2]
nodes = [h.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dql"),
         h.make_node("ConvInteger", ["xq", "w", "xz", "wzp"], ["acc"], pads=pads, strides=strides, name="convint"),
         h.make_node("Cast", ["acc"], ["accf"], to=TP.FLOAT, name="cast"),
         h.make_node("Mul", ["accf", "xs"], ["y"], name="rescale")]
g = h.make_graph(nodes, "dq_conv", [h.make_tensor_value_info("x", TP.FLOAT, list(x.shape))],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, 16, 5, 5]), h.make_tensor_value_info("acc", TP.INT32, [1, 16, 5, 5]),
                  h.make_tensor_value_info("xq", TP.UINT8, list(x.shape)), h.make_tensor_value_info("xz", TP.UINT8, [])],
                 [nh.from_array(w, "w"), nh.from_array(wzp, "wzp")])
q, s, zp = dql_ref(x)
acc = conv_int_ref(q - zp, w.astype(np.int64) - wzp.astype(np.int64)[:, None, None, None], pads, strides)
save(h.make_model(g, opset_imports=opset(13)), "dq_conv", [x],
     [(acc.astype(np.float32) * s).astype(np.float32), acc.astype(np.int32), q.astype(np.int32),
      np.array(zp, np.int32)])

# MatMulInteger: K = 300 (beyond fp32's exact range for one product), int8 b
# with per-column zero points, a uint8 with a scalar zero point
a = rng.integers(0, 256, (3, 4, 300)).astype(np.uint8)
b = rng.integers(-128, 128, (300, 5)).astype(np.int8)
azp = np.array(7, np.uint8)
bzp = rng.integers(-5, 5, (5,)).astype(np.int8)
nodes = [h.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["y"], name="mmint")]
g = h.make_graph(nodes, "mm_int", [h.make_tensor_value_info("a", TP.UINT8, list(a.shape))],
                 [h.make_tensor_value_info("y", TP.INT32, [3, 4, 5])],
                 [nh.from_array(b, "b"), nh.from_array(azp, "azp"), nh.from_array(bzp, "bzp")])
ref = (a.astype(np.int64) - 7) @ (b.astype(np.int64) - bzp.astype(np.int64))
save(h.make_model(g, opset_imports=opset(13)), "mm_int", [a.astype(np.int32)], [ref.astype(np.int32)])

# an all-zero input: the range is taken as 1 (not 0 / 0): scale 1 / 255 in
# ONNX's reference (ONNX Runtime says 1.0; q is 0 either way), zero point 0
z = np.zeros((2, 3), np.float32)
nodes = [h.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "zp"], name="dql")]
g = h.make_graph(nodes, "dql_zero", [h.make_tensor_value_info("x", TP.FLOAT, [2, 3])],
                 [h.make_tensor_value_info("q", TP.UINT8, [2, 3]), h.make_tensor_value_info("s", TP.FLOAT, []),
                  h.make_tensor_value_info("zp", TP.UINT8, [])])
save(h.make_model(g, opset_imports=opset(13)), "dql_zero", [z],
     [np.zeros((2, 3), np.int32), np.array(dql_ref(z)[1], np.float32), np.array(0, np.int32)])


# ---- fp16 safety: a Pow / ReduceSum chain beyond fp16's range ----
# int16-scale values: x^2 reaches 9e4 and the sum 9e7 (fp16's largest is
# 65504): the fp16 conversion gives inf; with the sample, Pow, ReduceSum and
# the Mul stay fp32 and the Sqrt (of ~9e3) can run in fp16
x = (rng.uniform(200, 300, (1, 1000)) * rng.choice([-1, 1], (1, 1000))).astype(np.float32)
nodes = [h.make_node("Pow", ["x", "two"], ["sq"], name="square"),
         h.make_node("ReduceSum", ["sq", "axes"], ["ssum"], keepdims=1, name="sum"),
         h.make_node("Mul", ["ssum", "scale"], ["scaled"], name="scale"),
         h.make_node("Sqrt", ["scaled"], ["y"], name="root")]
g = h.make_graph(nodes, "fp16_chain", [h.make_tensor_value_info("x", TP.FLOAT, [1, 1000])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, 1])],
                 [nh.from_array(np.array(2, np.float32), "two"), nh.from_array(np.array([-1], np.int64), "axes"),
                  nh.from_array(np.array(1e-4, np.float32), "scale")])
ref = np.sqrt((x.astype(np.float64) ** 2).sum(-1, keepdims=True) * 1e-4).astype(np.float32)
save(h.make_model(g, opset_imports=opset(13)), "fp16_chain", [x], [ref])


# ---- the static fp16 check: int16 audio squared ----
# no sample: the declared int16 range (+-32768) squared reaches 1.07e9
nodes = [h.make_node("Cast", ["pcm"], ["f"], to=TP.FLOAT, name="to_float"),
         h.make_node("Mul", ["f", "f"], ["sq"], name="square"),
         h.make_node("ReduceMean", ["sq"], ["power"], axes=[1], keepdims=0, name="power")]
g = h.make_graph(nodes, "fp16_static", [h.make_tensor_value_info("pcm", TP.INT16, [1, 400])],
                 [h.make_tensor_value_info("power", TP.FLOAT, [1])])
onnx.checker.check_model(h.make_model(g, opset_imports=opset(13)))
onnx.save(h.make_model(g, opset_imports=opset(13)), "fp16_static.onnx")


# ---- fp16 safety inside an If on a run-time flag ----
def chain(tag, scale):
    nodes = [h.make_node("Pow", ["x", "two"], ["sq_" + tag], name="square_" + tag),
             h.make_node("ReduceSum", ["sq_" + tag, "axes"], ["sum_" + tag], keepdims=1, name="sum_" + tag),
             h.make_node("Mul", ["sum_" + tag, "scale_" + tag], ["scaled_" + tag], name="scale_" + tag),
             h.make_node("Sqrt", ["scaled_" + tag], ["y_" + tag], name="root_" + tag)]
    return h.make_graph(nodes, "chain_" + tag, [], [h.make_tensor_value_info("y_" + tag, TP.FLOAT, [1, 1])],
                        [nh.from_array(np.array(scale, np.float32), "scale_" + tag)])


nodes = [h.make_node("If", ["flag"], ["y"], then_branch=chain("t", 1e-4), else_branch=chain("e", 4e-4), name="if_flag")]
g = h.make_graph(nodes, "fp16_if", [h.make_tensor_value_info("x", TP.FLOAT, [1, 1000]),
                                    h.make_tensor_value_info("flag", TP.BOOL, [])],
                 [h.make_tensor_value_info("y", TP.FLOAT, [1, 1])],
                 [nh.from_array(np.array(2, np.float32), "two"), nh.from_array(np.array([-1], np.int64), "axes")])
x = np.load("fp16_chain.in0.npy")
save(h.make_model(g, opset_imports=opset(13)), "fp16_if", [x, np.array(1, np.int32)],
     [np.sqrt((x.astype(np.float64) ** 2).sum(-1, keepdims=True) * 1e-4).astype(np.float32)])
