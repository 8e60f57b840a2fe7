"""Generates random_ops.onnx for tests/unit/test_onnx_graphs.c (run:
/usr/bin/python3 gen_random.py, in this folder): RandomUniform (shape
[4000], low -2, high 3, seed 1), RandomNormalLike of input p (mean 5,
scale 2), Bernoulli of p (p holds 0, 1 and 0.3 in thirds, dtype FLOAT)
and Multinomial (sample_size 500) of logits that give class 2 the
probability e^2 / (2 + e^2). The test checks the distributions, not the
numbers (numpy's and ONNX Runtime's generators are not libmil's)."""
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h

nodes = [h.make_node("RandomUniform", [], ["u"], shape=[4000], low=-2.0, high=3.0, seed=1.0, name="uniform"),
         h.make_node("RandomNormalLike", ["p"], ["z"], mean=5.0, scale=2.0, name="normal"),
         h.make_node("Bernoulli", ["p"], ["b"], dtype=TP.FLOAT, name="bernoulli"),
         h.make_node("Multinomial", ["logits"], ["m"], sample_size=500, dtype=TP.INT32, name="multinomial")]
g = h.make_graph(nodes, "random_ops",
                 [h.make_tensor_value_info("p", TP.FLOAT, [3000]),
                  h.make_tensor_value_info("logits", TP.FLOAT, [2, 3])],
                 [h.make_tensor_value_info("u", TP.FLOAT, [4000]), h.make_tensor_value_info("z", TP.FLOAT, [3000]),
                  h.make_tensor_value_info("b", TP.FLOAT, [3000]), h.make_tensor_value_info("m", TP.INT32, [2, 500])])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
onnx.checker.check_model(m)
onnx.save(m, "random_ops.onnx")
p = np.concatenate([np.zeros(1000), np.ones(1000), np.full(1000, 0.3)]).astype(np.float32)
np.save("random_ops.in0.npy", p)
np.save("random_ops.in1.npy", np.array([[0, 0, 2], [0, 0, 2]], np.float32))
