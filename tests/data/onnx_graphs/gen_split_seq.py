"""Generates split_seq_runtime.onnx for tests/unit/test_onnx_graphs.c and its
numpy reference (run: /usr/bin/python3 gen_split_seq.py, in this folder):
SplitToSequence along a symbolic axis with split sizes given at run time
(their count, 3, known), then parts 1 and 2 taken with SequenceAt."""
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h

nodes = [h.make_node("SplitToSequence", ["x", "splits"], ["seq"], axis=1, name="split"),
         h.make_node("SequenceAt", ["seq", "one"], ["p1"], name="at1"),
         h.make_node("SequenceAt", ["seq", "two"], ["p2"], name="at2")]
g = h.make_graph(nodes, "split_seq_runtime",
                 [h.make_tensor_value_info("x", TP.FLOAT, [2, "n"]),
                  h.make_tensor_value_info("splits", TP.INT64, [3])],
                 [h.make_tensor_value_info("p1", TP.FLOAT, [2, "a"]),
                  h.make_tensor_value_info("p2", TP.FLOAT, [2, "b"])],
                 [h.make_tensor("one", TP.INT64, [], [1]), h.make_tensor("two", TP.INT64, [], [2])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, "split_seq_runtime.onnx")
x = np.arange(18, dtype=np.float32).reshape(2, 9)
s = np.array([2, 3, 4], np.int64)
np.save("split_seq_runtime.in0.npy", x)
np.save("split_seq_runtime.in1.npy", s.astype(np.int32))  # Core ML holds int64 inputs as int32
np.save("split_seq_runtime.out0.npy", x[:, 2:5])
np.save("split_seq_runtime.out1.npy", x[:, 5:9])
