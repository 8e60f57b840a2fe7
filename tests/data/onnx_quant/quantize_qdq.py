"""Per-channel int8 weight quantization of an ONNX model in the QDQ format
(what ONNX Runtime's quantize_static writes for the weights): every float
weight initializer of a Conv, Gemm or MatMul with at least MIN_ELEMENTS
elements becomes an int8 initializer (symmetric, one scale per output
channel, zero point 0) followed by DequantizeLinear.

    /usr/bin/python3 quantize_qdq.py IN.onnx OUT.onnx

Needs numpy and the onnx package; external data is loaded and the output is
written self-contained."""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

MIN_ELEMENTS = 1024


def out_axis(node, rank):
    if node.op_type == "Conv":
        return 0
    if node.op_type == "Gemm":
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return rank - 1  # MatMul: [.., K, N]


def quantize(model):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    done = {}
    new_nodes = []
    for node in g.node:
        if node.op_type in ("Conv", "Gemm", "MatMul") and len(node.input) > 1 and node.input[1] in inits:
            name = node.input[1]
            t = inits[name]
            w = numpy_helper.to_array(t)
            if w.dtype == np.float32 and w.ndim >= 2 and w.size >= MIN_ELEMENTS:
                if name not in done:
                    axis = out_axis(node, w.ndim)
                    red = tuple(i for i in range(w.ndim) if i != axis)
                    scale = np.maximum(np.abs(w).max(axis=red), 1e-12) / 127
                    shape = [1] * w.ndim
                    shape[axis] = -1
                    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
                    g.initializer.remove(t)
                    g.initializer.extend([numpy_helper.from_array(q, name + "_quantized"),
                                          numpy_helper.from_array(scale.astype(np.float32), name + "_scale"),
                                          numpy_helper.from_array(np.zeros(scale.shape, np.int8), name + "_zero_point")])
                    new_nodes.append(helper.make_node("DequantizeLinear",
                                                      [name + "_quantized", name + "_scale", name + "_zero_point"],
                                                      [name + "_dequantized"], name=name + "_DequantizeLinear",
                                                      axis=axis))
                    done[name] = name + "_dequantized"
                node.input[1] = done[name]
        new_nodes.append(node)
    del g.node[:]
    g.node.extend(new_nodes)
    return model, len(done)


if __name__ == "__main__":
    m = onnx.load(sys.argv[1])
    m, n = quantize(m)
    onnx.save(m, sys.argv[2])
    print("%d weights quantized" % n)
