"""coremltools.optimize.coreml's compression functions, on the C library's
passes (include/mil/compress.h, src/passes/compression_*.c): each takes a
model, returns a new compressed model and leaves the given one unchanged.
As coremltools, the compression pass is followed by the default pipeline
(without common::add_fp16_cast)."""
import collections
import json
import os
import shutil
import tempfile
import warnings

import numpy as np

from ... import _capi as C
from ..._errors import Diag, MILInvalidError, MILNotFoundError, MILUnsupportedError
from ..._model import Model, _NP_OF_DTYPE
from ._config import OpLinearQuantizerConfig, OptimizationConfig

__all__ = ["linear_quantize_weights", "palettize_weights", "prune_weights", "decompress_weights",
           "get_weights_metadata", "linear_quantize_activations", "CoreMLWeightMetaData",
           "CoreMLOpMetaData"]

_IOS17_SPEC = 8


def _copy(mlmodel):
    """A new Model holding a copy of mlmodel (saved to a temporary package
    and loaded back; its weights stay mapped after the folder is gone)."""
    if not isinstance(mlmodel, Model):
        raise MILInvalidError("expected a libmil model (libmil.models.MLModel), got %s" % type(mlmodel).__name__)
    d = tempfile.mkdtemp(prefix="libmil-compress-")
    try:
        path = os.path.join(d, "model.mlpackage")
        mlmodel.save(path)
        return Model(path)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _run(model, passes, options):
    """The passes, then the default pipeline without add_fp16_cast, on model in place."""
    pl = C.c_void_p()
    with Diag() as d:
        d.raise_for(C.pipeline_new(b"default", C.byref(pl), d.ref))
        rep = C.PipelineReport()
        try:
            for i, p in enumerate(passes):
                d.raise_for(C.pipeline_insert(pl, i, p.encode(), d.ref))
            C.pipeline_remove_pass(pl, b"common::add_fp16_cast")
            for pname, opts in options.items():
                d.raise_for(C.pipeline_set_options_json(pl, pname.encode(), json.dumps(opts).encode(), d.ref))
            model._free_interps()
            d.raise_for(C.pipeline_run(pl, model._program, None, C.byref(rep), d.ref))
            for text in d.warnings():
                if text.startswith("compression::"):
                    warnings.warn(text, stacklevel=3)
        finally:
            C.pipeline_report_free(C.byref(rep))
            C.pipeline_free(pl)
    return model


def _check_config(config):
    if not isinstance(config, OptimizationConfig):
        raise MILInvalidError("config must be of type OptimizationConfig. Got %s." % type(config).__name__)


def _weights(mlmodel, config, pass_name, joint_compression=False):
    _check_config(config)
    new = _copy(mlmodel)
    return _run(new, [pass_name], {pass_name: {"config": json.loads(config._json()),
                                               "joint_compression": bool(joint_compression)}})


def linear_quantize_weights(mlmodel, config, joint_compression=False):
    """Linearly quantizes the const weights config selects
    (compression::linear_quantize_weights). Returns a new model."""
    return _weights(mlmodel, config, "compression::linear_quantize_weights", joint_compression)


def palettize_weights(mlmodel, config, joint_compression=False):
    """Palettizes the const weights config selects
    (compression::palettize_weights). Returns a new model."""
    return _weights(mlmodel, config, "compression::palettize_weights", joint_compression)


def prune_weights(mlmodel, config, joint_compression=False):
    """Prunes the const weights config selects (compression::prune_weights).
    Returns a new model."""
    return _weights(mlmodel, config, "compression::prune_weights", joint_compression)


def decompress_weights(mlmodel):
    """Replaces every constexpr op by a const of its decompressed value
    (compression::WeightDecompressor). Returns a new model."""
    new = _copy(mlmodel)
    return _run(new, ["compression::WeightDecompressor"], {})


def _activation_stats(model, sample_data):
    """Calibration with the interpreter (mil_calibrator): the JSON ranges."""
    if not isinstance(sample_data, (list, tuple)) or not sample_data:
        raise MILInvalidError("sample_data must be a non-empty list of input dictionaries")
    fn = model._pick("main")
    ip = model._interp(fn)
    declared = {}
    for i in range(C.interp_n_inputs(ip)):
        declared[C.interp_input_name(ip, i).decode()] = C.interp_input_type(ip, i).contents
    cal = C.c_void_p()
    with Diag() as d:
        d.raise_for(C.calibrator_new(model._program, C.byref(cal), d.ref))
        try:
            for k, sample in enumerate(sample_data):
                if not isinstance(sample, dict):
                    raise MILInvalidError("sample_data[%d] must be a dict of input name -> array" % k)
                if None in sample and (len(sample) > 1 or len(declared) > 1):
                    raise MILInvalidError("When the model has multiple inputs, please provide the name for each "
                                          "data in `sample_data`")
                names, tensors, keep = [], [], []
                for name, value in sample.items():
                    if name is None:
                        name = next(iter(declared))
                    t = declared.get(name)
                    if t is None:
                        raise MILNotFoundError("sample_data[%d]: model has no input '%s'; inputs: %s" %
                                               (k, name, ", ".join(declared)))
                    np_dt = _NP_OF_DTYPE.get(t.dtype)
                    if np_dt is None:
                        raise MILUnsupportedError("input '%s' has a dtype calibration cannot feed" % name)
                    arr = np.ascontiguousarray(np.asarray(value), dtype=np_dt)
                    shape = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
                    keep.append((arr, shape))
                    names.append(name.encode())
                    tensors.append(C.Tensor(t.dtype, arr.ndim, shape, arr.ctypes.data, arr.nbytes, arr.size))
                n = len(names)
                name_arr = (C.c_char_p * max(n, 1))(*names)
                ten_arr = (C.Tensor * max(n, 1))(*tensors)
                d.raise_for(C.calibrator_add_sample(cal, n, name_arr, ten_arr, d.ref))
            return C.take_string(C.calibrator_stats_json(cal))
        finally:
            C.calibrator_free(cal)


def linear_quantize_activations(mlmodel, config, sample_data, calibration_op_group_size=-1):
    """Activation quantization (coremltools' linear_quantize_activations):
    runs mlmodel on every sample of sample_data (a list of dicts input name
    -> numpy array; the name may be None for a single-input model) with the
    interpreter, keeping each activation's min/max, then inserts
    quantize/dequantize pairs (compression::linear_quantize_activations) and
    raises the model to iOS17 when it is older. calibration_op_group_size is
    accepted for coremltools' signature; libmil observes every activation in
    one run per sample. Activations with a zero range and integer tensors
    stay unquantized (a warning names them). Returns a new model."""
    _check_config(config)
    del calibration_op_group_size
    for c in [config.global_config] + list(config.op_type_configs.values()) + list(config.op_name_configs.values()):
        if c is not None and not isinstance(c, OpLinearQuantizerConfig):
            raise MILInvalidError("linear_quantize_activations only accept OpLinearQuantizerConfig type config. "
                                  "Got %s." % type(c).__name__)
    stats = _activation_stats(mlmodel, sample_data)
    new = _copy(mlmodel)
    name = "compression::linear_quantize_activations"
    _run(new, [name], {name: {"config": json.loads(config._json()), "activation_stats": json.loads(stats)}})
    if new.spec_version < _IOS17_SPEC:
        with Diag() as d:
            d.raise_for(C.model_set_spec_version(new._handle(), _IOS17_SPEC, d.ref))
    return new


class CoreMLOpMetaData:
    """An op reading a weight: op_type, name, and params_name_mapping (its
    inputs bound to const weights of more than weight_threshold elements ->
    the weight's name), as coremltools' CoreMLOpMetaData."""

    def __init__(self, op_type, name, params_name_mapping):
        self.op_type, self.name, self.params_name_mapping = op_type, name, params_name_mapping

    def __repr__(self):
        params = ", ".join("%s=%s" % kv for kv in self.params_name_mapping.items())
        return "%s(name=%s, %s, ...)" % (self.op_type, self.name, params)


class CoreMLWeightMetaData:
    """One weight: val (a numpy copy of its value; None for sub-byte
    dtypes), sparsity, unique_values and child_ops, as coremltools'."""

    def __init__(self, val, sparsity, unique_values, child_ops):
        self.val, self.sparsity, self.unique_values, self.child_ops = val, sparsity, unique_values, child_ops

    def __repr__(self):
        v = "None" if self.val is None else "np.ndarray(shape=%s, dtype=%s)" % (self.val.shape, self.val.dtype)
        return "[\n    val: %s\n    sparsity: %s\n    unique_values: %s\n    child_ops: %s\n]" % (
            v, self.sparsity, self.unique_values, self.child_ops)


def _type_numel(t):
    n = 1
    for i in range(t.rank):
        n *= t.dims[i].size
    return n


def _var_array(var):
    t = var.type.contents
    np_dt = _NP_OF_DTYPE.get(t.dtype)
    ptr = C.value_data(var.val) if var.val else None
    if np_dt is None or not ptr:
        return None
    shape = tuple(t.dims[i].size for i in range(t.rank))
    n = _type_numel(t)
    return np.frombuffer(C.bytes_at(ptr, n * np.dtype(np_dt).itemsize), dtype=np_dt).reshape(shape).copy()


def get_weights_metadata(mlmodel, weight_threshold=2048):
    """The weights (const ops) of mlmodel with more than weight_threshold
    elements, as coremltools' get_weights_metadata: a dict weight name ->
    CoreMLWeightMetaData (val, sparsity, unique_values, child_ops), in
    program order (include/mil/compress.h mil_weights_metadata)."""
    if not isinstance(mlmodel, Model):
        raise MILInvalidError("expected a libmil model (libmil.models.MLModel), got %s" % type(mlmodel).__name__)
    metas = C.POINTER(C.WeightMeta)()
    n = C.c_int32()
    out = {}
    with Diag() as d:
        d.raise_for(C.weights_metadata(mlmodel._program, weight_threshold, None, C.byref(metas), C.byref(n), d.ref))
        try:
            for i in range(n.value):
                m = metas[i]
                name = m.name.decode()
                children, val = [], None
                for k in range(m.n_children):
                    op = m.children[k].contents
                    mapping = collections.OrderedDict()
                    for j in range(op.n_inputs):
                        inp = op.inputs[j]
                        if inp.n_args < 1 or not inp.args[0].use.var:
                            continue
                        v = inp.args[0].use.var.contents
                        if not v.op or v.op.contents.type != b"const" or not v.type:
                            continue
                        if _type_numel(v.type.contents) > weight_threshold:
                            mapping[inp.name.decode()] = v.op.contents.name.decode()
                            if val is None and v.op.contents.name.decode() == name:
                                val = _var_array(v)
                    children.append(CoreMLOpMetaData(op.type.decode(), op.name.decode(), mapping))
                out[name] = CoreMLWeightMetaData(val, m.sparsity, m.unique_values, children)
        finally:
            C.weight_meta_free(metas, n)
    return out
