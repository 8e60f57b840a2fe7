"""Generates maxpool_idx{0..3}.onnx for tests/unit/test_onnx_graphs.c (run:
/usr/bin/python3 gen_maxpool_indices.py, in this folder): MaxPool with its
Indices output in 1, 2 and 3 spatial dimensions, with strides, dilations,
asymmetric pads and storage_order 1. The references come from the loop
below, written from ONNX's MaxPool definition: the maximum over the window's
positions inside x, the first of equal maxima, and its flat index in the
whole tensor (n, c, then the spatial dims row-major, or column-major with
storage_order 1)."""
import itertools

import numpy as np
import onnx
from onnx import TensorProto as TP, helper as h


def reference(x, k, s, d, p, storage_order):
    N, C = x.shape[:2]
    sp = x.shape[2:]
    n = len(sp)
    out = [(sp[i] + p[i] + p[i + n] - ((k[i] - 1) * d[i] + 1)) // s[i] + 1 for i in range(n)]
    y = np.zeros((N, C) + tuple(out), np.float32)
    idx = np.zeros((N, C) + tuple(out), np.int64)
    for b, c in itertools.product(range(N), range(C)):
        for o in itertools.product(*[range(v) for v in out]):
            best, at = None, 0
            for t in itertools.product(*[range(v) for v in k]):
                src = [o[i] * s[i] - p[i] + t[i] * d[i] for i in range(n)]
                if any(src[i] < 0 or src[i] >= sp[i] for i in range(n)):
                    continue
                v = x[(b, c) + tuple(src)]
                if best is None or v > best:
                    best = v
                    if storage_order == 0:
                        flat = int(np.ravel_multi_index(src, sp))
                    else:
                        flat = int(np.ravel_multi_index(src[::-1], sp[::-1]))
                    at = (b * C + c) * int(np.prod(sp)) + flat
            y[(b, c) + o], idx[(b, c) + o] = best, at
    return y, idx


rng = np.random.default_rng(11)
cases = [  # shape, kernel, strides, dilations, pads, storage_order
    ((2, 3, 11), (3,), (2,), (1,), (1, 1), 0),
    ((1, 2, 9, 8), (3, 2), (2, 1), (2, 1), (1, 0, 2, 1), 1),
    ((1, 2, 9, 8), (2, 3), (1, 2), (1, 1), (0, 1, 1, 0), 0),
    ((1, 1, 5, 6, 7), (2, 2, 3), (1, 2, 2), (1, 1, 2), (1, 0, 0, 0, 1, 1), 0),
]
for i, (shape, k, s, d, p, so) in enumerate(cases):
    x = rng.standard_normal(shape).astype(np.float32)
    y, idx = reference(x, k, s, d, p, so)
    node = h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=list(k), strides=list(s), dilations=list(d),
                       pads=list(p), storage_order=so)
    g = h.make_graph([node], "maxpool_idx%d" % i, [h.make_tensor_value_info("x", TP.FLOAT, list(shape))],
                     [h.make_tensor_value_info("y", TP.FLOAT, list(y.shape)),
                      h.make_tensor_value_info("i", TP.INT64, list(idx.shape))])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 12)])
    onnx.checker.check_model(m)
    onnx.save(m, "maxpool_idx%d.onnx" % i)
    np.save("maxpool_idx%d.in0.npy" % i, x)
    np.save("maxpool_idx%d.out0.npy" % i, y)
    np.save("maxpool_idx%d.out1.npy" % i, idx.astype(np.int32))  # the program's int32 output
