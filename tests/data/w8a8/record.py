"""Records what coremltools' linear_quantize_activations + linear_quantize_weights
(W8A8, int8 linear_symmetric) give on a small fp16 iOS17 conv net.

Run from this folder, with libmil's `mil` built in ../../../build:
  PYTHONPATH=/work/shared/oracle:/work/coremltools /usr/bin/python3 record.py

coremltools calibrates by predicting with Core ML in its model debugger
(ModelDebugger.predict_intermediate_outputs); here that one call is
replaced by `mil run` of the same model with the intermediate vars added as
outputs, so coremltools computes the statistics and the quantized program.

Writes: model.mlpackage (the fp16 input model), samples/<k>/x.npy (4
calibration samples), ct_w8a8.mlpackage (coremltools' result),
ct_histogram.json (its op counts), ct_out.npy (ct_w8a8 run by `mil run`
on sample 0); ct_a8_linear_histogram.json and ct_a8_linear_out.npy: the
same for activations only in mode "linear"."""
import ctenv  # noqa: F401
import collections, json, os, shutil, subprocess, sys, tempfile

import numpy as np
import coremltools as ct
import coremltools.optimize as cto
from coremltools.converters.mil.mil import Builder as mb
from coremltools.optimize.coreml.experimental import _model_debugger as md

HERE = os.path.dirname(os.path.abspath(__file__))
MIL = os.path.join(HERE, "../../../build/mil")
rng = np.random.default_rng(7)


def w(*s):
    return (rng.standard_normal(s) * 0.3).astype(np.float32)


@mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 16, 16))], opset_version=ct.target.iOS17)
def prog(x):
    c1 = mb.conv(x=x, weight=w(16, 3, 3, 3), bias=w(16), pad_type="same", name="conv1")
    r1 = mb.relu(x=c1, name="relu1")
    c2 = mb.conv(x=r1, weight=w(16, 16, 3, 3), pad_type="same", name="conv2")
    r2 = mb.relu(x=c2, name="relu2")
    a = mb.add(x=r1, y=r2, name="add1")
    p = mb.max_pool(x=a, kernel_sizes=[2, 2], strides=[2, 2], pad_type="valid", name="pool1")
    c3 = mb.conv(x=p, weight=w(16, 16, 3, 3), pad_type="same", name="conv3")
    s = mb.sigmoid(x=c3, name="sig3")
    cc = mb.concat(values=[s, p], axis=1, name="cat")
    c4 = mb.conv(x=cc, weight=w(16, 32, 1, 1), name="conv4")
    g = mb.avg_pool(x=c4, kernel_sizes=[8, 8], strides=[8, 8], pad_type="valid", name="gap")
    f = mb.reshape(x=g, shape=[1, 16], name="flat")
    return mb.linear(x=f, weight=w(10, 16), bias=w(10), name="fc")


def run_mil(path, inputs):
    with tempfile.TemporaryDirectory() as d:
        args = [MIL, "run", path, "--output-dir", d]
        for k, v in inputs.items():
            np.save(os.path.join(d, "in_" + k + ".npy"), v)
            args += ["--input", f"{k}={os.path.join(d, 'in_' + k + '.npy')}"]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        return {f[:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".npy") and not f.startswith("in_")}


def predict_intermediate_outputs(self, inputs, intermediate_output_names, compute_units=None):
    spec = self.model_info.spec.__class__()
    spec.CopyFrom(self.model_info.spec)
    info = md.ModelInfo(md.ModelDebugger.get_program_info(spec.mlProgram), spec)
    block = md.ModelDebugger.get_any_block(info)
    for name in intermediate_output_names:
        t = md.ModelDebugger.get_output_feature_type(name, self.block_info.operations)
        if t is None:
            continue
        block.spec.outputs.append(name)
        o = ct.proto.Model_pb2.FeatureDescription()
        o.name = name
        o.type.multiArrayType.dataType = t
        spec.description.output.append(o)
    with tempfile.TemporaryDirectory() as d:
        m = ct.models.MLModel(spec, weights_dir=self.weights_dir, skip_model_load=True)
        p = os.path.join(d, "m.mlpackage")
        m.save(p)
        return run_mil(p, inputs)


md.ModelDebugger.predict_intermediate_outputs = predict_intermediate_outputs


def histogram(model):
    p = model._mil_program if model._mil_program is not None else None
    if p is None:
        from coremltools.converters.mil.frontend.milproto import load
        p = load(model.get_spec(), specification_version=model.get_spec().specificationVersion, file_weights_dir=model.weights_dir)
    h = collections.Counter(op.op_type for op in p.functions["main"].operations)
    return dict(sorted(h.items()))


def main():
    model = ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT16,
                       minimum_deployment_target=ct.target.iOS17, skip_model_load=True)
    for f in ("model.mlpackage", "ct_w8a8.mlpackage", "samples"):
        shutil.rmtree(os.path.join(HERE, f), ignore_errors=True)
    model.save(os.path.join(HERE, "model.mlpackage"))
    model = ct.models.MLModel(os.path.join(HERE, "model.mlpackage"), skip_model_load=True)
    samples = []
    for k in range(4):
        x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
        os.makedirs(os.path.join(HERE, "samples", str(k)))
        np.save(os.path.join(HERE, "samples", str(k), "x.npy"), x)
        samples.append({"x": x})
    acfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric"))
    a8 = cto.coreml.linear_quantize_activations(model, acfg, samples)
    wcfg = cto.coreml.OptimizationConfig(
        global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=100))
    w8a8 = cto.coreml.linear_quantize_weights(a8, wcfg)
    out = os.path.join(HERE, "ct_w8a8.mlpackage")
    w8a8.save(out)
    with open(os.path.join(HERE, "ct_histogram.json"), "w") as f:
        json.dump(histogram(w8a8), f, indent=1, sort_keys=True)
        f.write("\n")
    y = run_mil(out, samples[0])
    assert len(y) == 1
    np.save(os.path.join(HERE, "ct_out.npy"), list(y.values())[0])
    print(histogram(w8a8))
    # activations only, mode "linear" (zero points)
    lcfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear"))
    a8l = cto.coreml.linear_quantize_activations(model, lcfg, samples)
    out = os.path.join(HERE, "ct_a8_linear.mlpackage")
    a8l.save(out)
    with open(os.path.join(HERE, "ct_a8_linear_histogram.json"), "w") as f:
        json.dump(histogram(a8l), f, indent=1, sort_keys=True)
        f.write("\n")
    np.save(os.path.join(HERE, "ct_a8_linear_out.npy"), list(run_mil(out, samples[0]).values())[0])
    shutil.rmtree(out)


if __name__ == "__main__":
    main()
