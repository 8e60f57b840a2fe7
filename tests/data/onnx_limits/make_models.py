"""Generates the hostile ONNX models of tests/cli/onnx_limits.sh (committed;
the test does not need the onnx package):

    /usr/bin/python3 make_models.py      (onnx 1.12)

Each model is a small graph whose constants would make the converter
materialize or mis-describe a huge or invalid tensor."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, nodes, inits, outputs, inputs=(), opset=13):
    g = helper.make_graph(nodes, name, list(inputs), outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_models.py")
    m.ir_version = 7
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def out(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


# 40 Concats, each doubling the previous, from a 1-element initializer (2^40 elements at the end)
nodes = []
prev = "c0"
for i in range(1, 41):
    nodes.append(helper.make_node("Concat", [prev, prev], ["c%d" % i], axis=0, name="concat_%d" % i))
    prev = "c%d" % i
save("concat_doubling", nodes, [numpy_helper.from_array(np.array([1.0], np.float32), "c0")], [out("c40")])

# ConstantOfShape with a negative dim
save("constantofshape_negative",
     [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos_neg")],
     [numpy_helper.from_array(np.array([-5], np.int64), "shape")], [out("y")])

# ConstantOfShape of 2^50 elements
save("constantofshape_huge",
     [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos_huge")],
     [numpy_helper.from_array(np.array([1 << 25, 1 << 25], np.int64), "shape")], [out("y")])

# Tile with reps 2^40
save("tile_huge",
     [helper.make_node("Tile", ["x", "reps"], ["y"], name="tile_huge")],
     [numpy_helper.from_array(np.array([1.0], np.float32), "x"),
      numpy_helper.from_array(np.array([1 << 40], np.int64), "reps")], [out("y")])

# Range to 2^50
save("range_huge",
     [helper.make_node("Range", ["s", "e", "d"], ["y"], name="range_huge")],
     [numpy_helper.from_array(np.array(0, np.int64), "s"),
      numpy_helper.from_array(np.array(1 << 50, np.int64), "e"),
      numpy_helper.from_array(np.array(1, np.int64), "d")], [out("y", TensorProto.INT64)])

# Range with delta 0
save("range_delta_zero",
     [helper.make_node("Range", ["s", "e", "d"], ["y"], name="range_zero")],
     [numpy_helper.from_array(np.array(0, np.int64), "s"),
      numpy_helper.from_array(np.array(10, np.int64), "e"),
      numpy_helper.from_array(np.array(0, np.int64), "d")], [out("y", TensorProto.INT64)])

# Expand to a huge constant shape
save("expand_huge",
     [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand_huge")],
     [numpy_helper.from_array(np.array([1 << 40], np.int64), "shape")], [out("y")],
     inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])])

# an initializer whose dims' product overflows int64
t = TensorProto()
t.name = "w"
t.data_type = TensorProto.FLOAT
t.dims.extend([1 << 32, 1 << 32, 1 << 32])
save("initializer_dims_overflow",
     [helper.make_node("Identity", ["w"], ["y"], name="ident")], [t], [out("y")])


def external(name, location):
    t = TensorProto()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.extend([4])
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key = "location"
    e.value = location
    save(name, [helper.make_node("Identity", ["w"], ["y"], name="ident")], [t], [out("y")])


# external data at "." (the model's own folder) and at a location with an embedded NUL
external("external_dot", ".")
external("external_nul", "w.bin\0../../etc/passwd")
