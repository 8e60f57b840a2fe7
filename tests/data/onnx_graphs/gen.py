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
