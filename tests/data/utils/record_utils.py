"""Records what coremltools.models.utils does, as test data for libmil's
model utilities (tests/utils, python/tests/test_utils.py).

Run from this directory:
    PYTHONPATH=/work/shared/oracle:/work/coremltools /usr/bin/python3 record_utils.py

Writes, per case, the source packages (src_*.mlpackage) the utilities start
from, coremltools' result (ct_*.mlpackage) and expected.json: the model
descriptions (protobuf text), function names, default function, opsets and
the weight.bin sizes.
"""
import ctenv  # noqa: F401

import json
import os
import shutil

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import get_new_symbol
from coremltools.models.utils import (MultiFunctionDescriptor, save_multifunction, rename_feature,
                                      change_input_output_tensor_type, materialize_dynamic_shape_mlmodel,
                                      bisect_model)
from coremltools.proto.FeatureTypes_pb2 import ArrayFeatureType
from google.protobuf import text_format

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(27)
expected = {}


def out(name):
    p = os.path.join(HERE, name)
    if os.path.exists(p):
        shutil.rmtree(p)
    return p


def convert(prog, target):
    return ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=target,
                      compute_precision=ct.precision.FLOAT32)


def weight_size(pkg):
    p = os.path.join(pkg, "Data", "com.apple.CoreML", "weights", "weight.bin")
    return os.path.getsize(p) if os.path.exists(p) else 0


def record(name, pkg):
    spec = ct.utils.load_spec(pkg)
    prog = spec.mlProgram
    expected[name] = {
        "spec_version": spec.specificationVersion,
        "description": text_format.MessageToString(spec.description),
        "functions": sorted(prog.functions.keys()),
        "opsets": {k: f.opset for k, f in prog.functions.items()},
        "default_function": spec.description.defaultFunctionName,
        "weight_bin_size": weight_size(pkg),
    }


W1 = rng.standard_normal((64, 64)).astype(np.float32)
B1 = rng.standard_normal((64,)).astype(np.float32)
W2 = rng.standard_normal((32, 64)).astype(np.float32)
W2b = rng.standard_normal((32, 64)).astype(np.float32)
B2 = rng.standard_normal((32,)).astype(np.float32)


def mlp(w2, target=ct.target.iOS16):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 64))], opset_version=target)
    def prog(x):
        y = mb.linear(x=x, weight=W1, bias=B1, name="fc1")
        y = mb.relu(x=y, name="relu1")
        return mb.linear(x=y, weight=w2, bias=B2, name="logits")
    return convert(prog, target)


WC = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)


def convnet():
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 8, 8))], opset_version=ct.target.iOS16)
    def prog(image):
        y = mb.conv(x=image, weight=WC, pad_type="same", name="conv")
        return mb.sigmoid(x=y, name="probs")
    return convert(prog, ct.target.iOS16)


# 1. two functions of one network differing in one layer
base, variant = mlp(W2), mlp(W2b)
base.save(out("src_base.mlpackage"))
variant.save(out("src_variant.mlpackage"))
record("src_base", os.path.join(HERE, "src_base.mlpackage"))
record("src_variant", os.path.join(HERE, "src_variant.mlpackage"))
d = MultiFunctionDescriptor()
d.add_function(os.path.join(HERE, "src_base.mlpackage"), "main", "base")
d.add_function(os.path.join(HERE, "src_variant.mlpackage"), "main", "adapted")
d.default_function_name = "base"
save_multifunction(d, out("ct_merged_shared.mlpackage"))
record("ct_merged_shared", os.path.join(HERE, "ct_merged_shared.mlpackage"))

# 2. two unrelated networks, the second function the default
convnet().save(out("src_conv.mlpackage"))
record("src_conv", os.path.join(HERE, "src_conv.mlpackage"))
d = MultiFunctionDescriptor()
d.add_function(os.path.join(HERE, "src_base.mlpackage"), "main", "classify")
d.add_function(os.path.join(HERE, "src_conv.mlpackage"), "main", "segment")
d.default_function_name = "segment"
save_multifunction(d, out("ct_merged_unrelated.mlpackage"))
record("ct_merged_unrelated", os.path.join(HERE, "ct_merged_unrelated.mlpackage"))

# 3. renaming the input and the output
m = ct.models.MLModel(os.path.join(HERE, "src_base.mlpackage"))
spec = m.get_spec()
rename_feature(spec, "x", "input_ids")
rename_feature(spec, "logits", "scores")
ct.models.MLModel(spec, weights_dir=m.weights_dir, skip_model_load=True).save(out("ct_renamed.mlpackage"))
record("ct_renamed", os.path.join(HERE, "ct_renamed.mlpackage"))

# 4. fp32 -> fp16 I/O, on an iOS15 model (upgraded to iOS16 for the casts)
mlp(W2, ct.target.iOS15).save(out("src_ios15.mlpackage"))
record("src_ios15", os.path.join(HERE, "src_ios15.mlpackage"))
m = ct.models.MLModel(os.path.join(HERE, "src_ios15.mlpackage"), skip_model_load=True)
m16 = change_input_output_tensor_type(m, ArrayFeatureType.FLOAT32, ArrayFeatureType.FLOAT16, input_names=["x"])
m16.save(out("ct_fp16_io.mlpackage"))
record("ct_fp16_io", os.path.join(HERE, "ct_fp16_io.mlpackage"))

# 5. a batch-RangeDim model materialized to batch 1 and 4
@mb.program(input_specs=[mb.TensorSpec(shape=(get_new_symbol(), 64))], opset_version=ct.target.iOS17)
def dyn(x):
    y = mb.linear(x=x, weight=W1, bias=B1, name="fc1")
    y = mb.relu(x=y, name="relu1")
    return mb.linear(x=y, weight=W2, bias=B2, name="logits")
dm = convert(dyn, ct.target.iOS17)
dm.save(out("src_dynamic.mlpackage"))
record("src_dynamic", os.path.join(HERE, "src_dynamic.mlpackage"))
dm = ct.models.MLModel(os.path.join(HERE, "src_dynamic.mlpackage"), skip_model_load=True)
materialize_dynamic_shape_mlmodel(dm, {"batch_1": {"x": (1, 64)}, "batch_4": {"x": (4, 64)}},
                                  out("ct_materialized.mlpackage"))
record("ct_materialized", os.path.join(HERE, "ct_materialized.mlpackage"))

# 6. a small transformer block split in two
D, F, T = 32, 64, 8
P = {k: rng.standard_normal(s).astype(np.float32) * 0.2 for k, s in
     [("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)), ("wo", (D, D)), ("w1", (F, D)), ("w2", (D, F)),
      ("g1", (D,)), ("b1", (D,)), ("g2", (D,)), ("b2", (D,))]}


@mb.program(input_specs=[mb.TensorSpec(shape=(1, T, D))], opset_version=ct.target.iOS18)
def block(x):
    h = mb.layer_norm(x=x, axes=[-1], gamma=P["g1"], beta=P["b1"], name="ln1")
    q = mb.linear(x=h, weight=P["wq"], name="q")
    k = mb.linear(x=h, weight=P["wk"], name="k")
    v = mb.linear(x=h, weight=P["wv"], name="v")
    a = mb.scaled_dot_product_attention(query=q, key=k, value=v, name="attn")
    a = mb.linear(x=a, weight=P["wo"], name="o")
    x = mb.add(x=x, y=a, name="res1")
    h = mb.layer_norm(x=x, axes=[-1], gamma=P["g2"], beta=P["b2"], name="ln2")
    h = mb.linear(x=h, weight=P["w1"], name="ff1")
    h = mb.gelu(x=h, name="gelu")
    h = mb.linear(x=h, weight=P["w2"], name="ff2")
    return mb.add(x=x, y=h, name="y")


tm = ct.convert(block, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18)
tm.save(out("src_transformer.mlpackage"))
record("src_transformer", os.path.join(HERE, "src_transformer.mlpackage"))
split_dir = out("ct_split")
os.makedirs(split_dir)
tm = ct.models.MLModel(os.path.join(HERE, "src_transformer.mlpackage"), skip_model_load=True)
bisect_model(tm, split_dir, check_output_correctness=False)
for f in sorted(os.listdir(split_dir)):
    record("ct_split/" + f, os.path.join(split_dir, f))

# 7. the two chunks as one pipeline model (bisect_model(merge_chunks_to_pipeline=True))
pipe_dir = out("ct_split_pipeline")
os.makedirs(pipe_dir)
bisect_model(os.path.join(HERE, "src_transformer.mlpackage"), pipe_dir, merge_chunks_to_pipeline=True,
             check_output_correctness=False)
for f in sorted(os.listdir(pipe_dir)):
    p = os.path.join(pipe_dir, f)
    spec = ct.utils.load_spec(p)
    wdir = os.path.join(p, "Data", "com.apple.CoreML", "weights")
    expected["ct_split_pipeline/" + f] = {
        "spec_version": spec.specificationVersion,
        "type": spec.WhichOneof("Type"),
        "description": text_format.MessageToString(spec.description),
        "stages": len(spec.pipeline.models),
        "stage_descriptions": [text_format.MessageToString(m.description) for m in spec.pipeline.models],
        "weight_files": {w: os.path.getsize(os.path.join(wdir, w)) for w in sorted(os.listdir(wdir))},
    }

with open(os.path.join(HERE, "expected.json"), "w") as fh:
    json.dump(expected, fh, indent=1, sort_keys=True)
print("recorded", sorted(expected))
