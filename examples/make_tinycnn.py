"""Writes examples/tinycnn/: a small ONNX image classifier (opset 13) with
fixed pseudo-random weights, and one test case in ONNX's test-data layout
(test_data_set_0/input_0.pb, output_0.pb) whose expected output is computed
here with numpy, independently of libmil. The README's ONNX examples use it.

    /usr/bin/python3 examples/make_tinycnn.py      # needs numpy and onnx

image (1, 3, 32, 32) -> Conv 3x3 (16) -> Relu -> MaxPool 2x2 -> Conv 3x3 (32)
-> Relu -> GlobalAveragePool -> Flatten -> Gemm (10) -> Softmax -> probs (1, 10)
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tinycnn")


def conv2d(x, w, b):  # NCHW, stride 1, padding 1
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # n, c, h, w, 3, 3
    return np.einsum("nchwij,ocij->nohw", win, w) + b[None, :, None, None]


def reference(x, p):
    y = np.maximum(conv2d(x, p["w1"], p["b1"]), 0)
    n, c, h, w = y.shape
    y = y.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    y = np.maximum(conv2d(y, p["w2"], p["b2"]), 0)
    y = y.mean(axis=(2, 3))
    z = y @ p["wf"].T + p["bf"]
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def main():
    rng = np.random.default_rng(20261128)
    p = {
        "w1": rng.normal(0, 0.3, (16, 3, 3, 3)), "b1": rng.normal(0, 0.1, 16),
        "w2": rng.normal(0, 0.1, (32, 16, 3, 3)), "b2": rng.normal(0, 0.1, 32),
        "wf": rng.normal(0, 0.5, (10, 32)), "bf": rng.normal(0, 0.1, 10),
    }
    p = {k: v.astype(np.float32) for k, v in p.items()}
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["z"], name="fc", transB=1),
        helper.make_node("Softmax", ["z"], ["probs"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "tinycnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in p.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_tinycnn.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    os.makedirs(os.path.join(HERE, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(HERE, "model.onnx"))
    x = rng.uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)
    y = reference(x.astype(np.float64), {k: v.astype(np.float64) for k, v in p.items()}).astype(np.float32)
    for name, arr, tname in (("input_0.pb", x, "image"), ("output_0.pb", y, "probs")):
        with open(os.path.join(HERE, "test_data_set_0", name), "wb") as f:
            f.write(numpy_helper.from_array(arr, tname).SerializeToString())
    print("wrote", HERE, "probs", np.round(y, 4))


if __name__ == "__main__":
    main()
