"""Generates grid_bicubic_{border,zeros}.onnx for tests/unit/test_onnx_graphs.c
(run: /usr/bin/python3 gen_grid_bicubic.py, in this folder): ONNX GridSample
mode 'bicubic' with align_corners 1 and border padding, and align_corners 0
with zeros padding; the references are PyTorch's grid_sample (the semantics
ONNX's GridSample was defined after), in float64."""
import numpy as np
import onnx
import torch
from onnx import TensorProto as TP, helper as h

rng = np.random.default_rng(7)
x = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
grid = rng.uniform(-1.3, 1.3, (1, 3, 6, 2)).astype(np.float32)
for name, pad, align in (("grid_bicubic_border", "border", 1), ("grid_bicubic_zeros", "zeros", 0)):
    node = h.make_node("GridSample", ["x", "grid"], ["y"], mode="bicubic", padding_mode=pad, align_corners=align)
    g = h.make_graph([node], name, [h.make_tensor_value_info("x", TP.FLOAT, list(x.shape)),
                                    h.make_tensor_value_info("grid", TP.FLOAT, list(grid.shape))],
                     [h.make_tensor_value_info("y", TP.FLOAT, [1, 2, 3, 6])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 16)])
    onnx.checker.check_model(m)
    onnx.save(m, name + ".onnx")
    y = torch.nn.functional.grid_sample(torch.from_numpy(x).double(), torch.from_numpy(grid).double(),
                                        mode="bicubic", padding_mode=pad, align_corners=bool(align))
    np.save(name + ".in0.npy", x)
    np.save(name + ".in1.npy", grid)
    np.save(name + ".out0.npy", y.numpy().astype(np.float32))
