"""libmil for Python: load, validate, optimize, run and save Core ML ML
Program models (.mlpackage, .mlmodel, .mil) on any machine, through the
libmil C library (ctypes; see libmil._capi for which library is loaded).

    >>> import libmil, numpy as np
    >>> m = libmil.load("model.mlpackage")
    >>> m.predict({"x": np.zeros((1, 3, 224, 224), np.float32)})
    >>> report = m.optimize()           # coremltools' DEFAULT pipeline
    >>> m.save("model.opt.mlpackage")
"""
import os
import sys

import numpy as np

from . import _capi
from ._enums import colorlayout, precision, target
from ._errors import (MILError, MILFormatError, MILInvalidError, MILIOError, MILNotFoundError, MILParseError,
                      MILTypeError, MILUnsupportedError, Diag)
from ._model import Description, Feature, Model, OptimizeReport, State
from . import models, optimize  # noqa: E402  (subpackages, as coremltools exposes them)
from .models import MLModel, utils
from ._input_types import ClassifierConfig, EnumeratedShapes, ImageType, RangeDim, Shape, TensorType

__all__ = ["load", "convert", "from_mil_text", "verify", "diff", "passes", "pipelines", "Model", "MLModel", "State",
           "OptimizeReport", "Feature", "Description", "VerifyResult", "DiffResult", "MILError", "MILParseError",
           "MILIOError", "MILFormatError", "MILTypeError", "MILInvalidError", "MILUnsupportedError",
           "MILNotFoundError", "TensorType", "ImageType", "Shape", "RangeDim", "EnumeratedShapes",
           "ClassifierConfig", "library_path", "models", "optimize", "utils", "target", "precision", "colorlayout"]

library_path = _capi.library_path
__version__ = "0.1.0"


def load(path):
    """Loads a model: .mlpackage, .mlmodel or .mil (complete-form MIL text);
    .onnx too when the library was built with the ONNX importer. Weights
    stay memory-mapped (nothing is copied whole). Returns a Model.
    Raises MILIOError (missing/unreadable file), MILFormatError (malformed
    protobuf, package or weight file), MILParseError (.mil text),
    MILUnsupportedError (not an ML Program, unknown extension)."""
    return Model(path)


def convert(model, inputs=None, outputs=None, classifier_config=None, minimum_deployment_target=None,
            compute_precision=None, pass_pipeline="default", input_shapes=None, nms_max_boxes=None, input_values=None,
            sample_data=None, sample_tolerance=None, **kwargs):
    """Converts a model as coremltools' ct.convert does, with the same
    names: model is an ONNX file (path), an onnx.ModelProto (when the onnx
    package is installed) or a libmil Model / Core ML model path (.mlpackage,
    .mlmodel, .mil: the program is optimized and re-described).

    inputs: a list of libmil.TensorType / libmil.ImageType naming the model's
    inputs, with a shape (ints, libmil.RangeDim, libmil.Shape or
    libmil.EnumeratedShapes; ONNX models only), a dtype (np.float16,
    np.float32, np.int32) or, for images, scale / bias / color_layout.
    outputs: a list of libmil.TensorType in output order (name and dtype).
    classifier_config: a libmil.ClassifierConfig (outputs classLabel and
    classLabel_probs). For iOS16+ fp16 conversions fp32 inputs and outputs
    not typed otherwise become fp16 (coremltools' use_default_fp16_io).
    minimum_deployment_target: "iOS15" .. "iOS18" or a libmil.target
    member (default iOS15). compute_precision: "fp16" (default), "fp32" or
    libmil.precision.FLOAT16 / FLOAT32. pass_pipeline names a pipeline
    ("default"); None runs none. input_shapes: dict ONNX input name -> tuple
    of ints fixing dims. nms_max_boxes: the bound of a NonMaxSuppression
    whose number of boxes is known only at run time. input_values: dict ONNX
    input name -> array fixing that input to a const (`--input-value`: an If
    on a sample rate takes its branch). sample_data: dict input name (ONNX
    or the model's) -> array, a sample of every input: with fp16 precision
    the program runs on it in fp32 and fp16 and the ops whose fp16 result
    overflows (inf/NaN where fp32 is finite) or is off by more than
    sample_tolerance (default 0.01) of its largest fp32 magnitude stay fp32
    (coremltools' FP16ComputePrecision(op_selector=...)); without it, ops
    whose static ranges reach beyond fp16 are warned about. The returned
    model's .conversion_warnings lists the conversion's warnings (the kept
    ops with their reasons).
    Returns a Model; set its metadata (author, license, short_description,
    version) and save it with .save(). Raises MILUnsupportedError naming the
    node, op_type, domain and opset of an op libmil does not convert,
    MILInvalidError for an interface that does not fit the model,
    MILIOError / MILFormatError for a file that cannot be read."""
    from . import _convert
    if kwargs:
        raise TypeError("libmil.convert() got unexpected keyword arguments: %s" % ", ".join(sorted(kwargs)))
    if _capi.convert is None:
        raise MILUnsupportedError("this libmil was built without the converter")
    if minimum_deployment_target is None:
        minimum_deployment_target = "iOS15"
    if compute_precision is None:
        compute_precision = "fp16"
    if isinstance(minimum_deployment_target, target):
        minimum_deployment_target = "iOS%d" % (minimum_deployment_target + 9)  # spec 6 = iOS15
    if isinstance(compute_precision, precision):
        compute_precision = "fp16" if compute_precision is precision.FLOAT16 else "fp32"
    if minimum_deployment_target not in _capi.TARGETS:
        raise MILInvalidError("minimum_deployment_target must be one of %s, got %r" %
                              (", ".join(_capi.TARGETS), minimum_deployment_target))
    if compute_precision not in ("fp16", "fp32"):
        raise MILInvalidError("compute_precision must be 'fp16' or 'fp32', got %r" % (compute_precision,))
    shapes = list((input_shapes or {}).items())
    keep = []
    arr = (_capi.OnnxInputShape * max(len(shapes), 1))()
    for i, (name, dims) in enumerate(shapes):
        dv = (_capi.c_int64 * max(len(dims), 1))(*dims)
        keep.append(dv)
        arr[i] = _capi.OnnxInputShape(name.encode(), len(dims), dv)
    def named_arrays(d, what):
        if d is not None and not isinstance(d, dict):
            raise TypeError("libmil.convert(%s=...): expected a dict of input name -> array, got %s" %
                            (what, type(d).__name__))
        items = list((d or {}).items())
        out = (_capi.OnnxInputValue * max(len(items), 1))()
        for i, (name, value) in enumerate(items):
            a = np.asarray(value)
            if a.dtype.kind not in "fciub":
                raise TypeError("libmil.convert(%s=...): %r must be numeric, got dtype %s" % (what, name, a.dtype))
            if a.dtype.kind in "iu" and a.size and (a.min() < -2**31 or a.max() >= 2**31):
                raise MILInvalidError("libmil.convert(%s=...): %r holds values beyond int32" % (what, name))
            a = np.ascontiguousarray(a, dtype=np.float32 if a.dtype.kind in "fc" else np.int32).reshape(a.shape)
            sh = (_capi.c_int64 * max(a.ndim, 1))(*a.shape)
            keep.append((a, sh))
            out[i] = _capi.OnnxInputValue(str(name).encode(), _capi.Tensor(11 if a.dtype == np.float32 else 23, a.ndim,
                                                                         sh, a.ctypes.data, a.nbytes, a.size))
        return items, out
    items, varr = named_arrays(input_values, "input_values")
    samples, sarr = named_arrays(sample_data, "sample_data")
    if sample_tolerance is not None and not (0 < float(sample_tolerance) < 1):
        raise MILInvalidError("sample_tolerance must be in (0, 1), got %r" % (sample_tolerance,))
    iface = None
    if inputs is not None or outputs is not None or classifier_config is not None:
        iface = _convert._Interface(inputs, outputs, classifier_config)
    opts = _capi.ConvertOptions(target=_capi.TARGETS[minimum_deployment_target], fp32=compute_precision == "fp32",
                                pipeline=pass_pipeline.encode() if pass_pipeline else None,
                                no_pipeline=pass_pipeline is None, n_input_shapes=len(shapes), input_shapes=arr,
                                interface=_capi.cast(_capi.byref(iface.c), _capi.c_void_p) if iface else None,
                                nms_max_boxes=int(nms_max_boxes or 0), n_input_values=len(items),
                                input_values=varr, n_samples=len(samples), samples=sarr,
                                sample_tolerance=float(sample_tolerance or 0))
    h = _capi.c_void_p()
    if isinstance(model, Model):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "source.mlpackage")
            model.save(src)
            return convert(src, inputs, outputs, classifier_config, minimum_deployment_target, compute_precision,
                           pass_pipeline, input_shapes, nms_max_boxes, input_values, sample_data, sample_tolerance)
    if hasattr(model, "SerializeToString") and not isinstance(model, (str, bytes, os.PathLike)):
        data = model.SerializeToString()  # an onnx.ModelProto
        with Diag() as d:
            d.raise_for(_capi.convert_onnx_buffer(data, len(data), b"<onnx.ModelProto>", None, _capi.byref(opts),
                                                  _capi.byref(h), d.ref))
            warnings = d.warnings()
        m = Model._from_handle(h.value, None)
        m.conversion_warnings = warnings
        return m
    if not isinstance(model, (str, bytes, os.PathLike)):
        raise TypeError("libmil.convert(model): model must be a path, an onnx.ModelProto or a libmil Model, got %s" %
                        type(model).__name__)
    path = os.fsdecode(model)
    with Diag() as d:
        d.raise_for(_capi.convert(path.encode(), _capi.byref(opts), _capi.byref(h), d.ref))
        warnings = d.warnings()
    m = Model._from_handle(h.value, path)
    m.conversion_warnings = warnings
    return m


def from_mil_text(text, spec_version=0, filename="<text>", base_dir=None):
    """Parses MIL text (the complete form, or coremltools' print form) into
    a Model. spec_version 0 takes the version the opset implies. @blob
    paths resolve against base_dir (default: the current directory).
    Raises MILParseError with file:line:column on malformed text."""
    if isinstance(text, str):
        text = text.encode("utf-8")
    prog = _capi.c_void_p()
    opts = _capi.ParseOptions(filename.encode(), (base_dir or os.getcwd()).encode())
    with Diag() as d:
        d.raise_for(_capi.parse_program(text, len(text), _capi.byref(opts), _capi.byref(prog), d.ref))
        m = _capi.c_void_p()
        d.raise_for(_capi.model_from_program(prog, spec_version, _capi.byref(m), d.ref))  # takes prog
    return Model._from_handle(m.value)


def _as_model(m, reference=False):
    if isinstance(m, Model):
        return m
    if reference and isinstance(m, (str, os.PathLike)) and os.fspath(m).endswith(".onnx"):
        # an ONNX model's reference is its graph's own semantics (as `mil verify`): fp32, no pipeline
        return convert(m, compute_precision="fp32", pass_pipeline=None)
    return load(m)


class DiffResult:
    """Result of libmil.diff: ``equivalent`` and ``identical`` (bools, see
    spec/mil-text.md section 3) and ``difference`` (the first difference,
    "" when there is none)."""

    def __init__(self, res):
        self.equivalent, self.identical = bool(res.equivalent), bool(res.identical)
        self.difference = (res.diff if not res.equivalent else res.identical_diff).decode("utf-8", "replace")

    def __bool__(self):
        return self.equivalent

    def __repr__(self):
        return "DiffResult(equivalent=%s, identical=%s%s)" % (
            self.equivalent, self.identical, ", difference=%r" % self.difference if self.difference else "")


def diff(a, b, identical=False):
    """Tells whether two programs are the same program (`mil diff`): a and
    b are Models or paths. Returns a DiffResult (truthy when equivalent, or
    identical when identical=True)."""
    ma, mb = _as_model(a), _as_model(b)
    opts = _capi.EquivOptions(0.0, 0, bool(identical), b"A", b"B")
    res = _capi.EquivResult()
    with Diag() as d:
        st = _capi.program_compare(ma._program, mb._program, _capi.byref(opts), _capi.byref(res), d.ref)
        if st not in (0, 5):  # MIL_ERR_INVALID just means "different"
            d.raise_for(st)
    r = DiffResult(res)
    if identical and not r.identical:
        r.equivalent = False if not res.equivalent else r.equivalent
    return r


class VerifyResult:
    """Result of libmil.verify: ``passed`` (bool), ``rtol``/``atol`` used,
    and ``outputs``: dict name -> dict(max_abs_error, max_rel_error,
    mismatches, passed)."""

    def __init__(self, outputs, rtol, atol):
        self.outputs, self.rtol, self.atol = outputs, rtol, atol
        self.passed = all(o["passed"] for o in outputs.values())

    def __bool__(self):
        return self.passed

    def __repr__(self):
        return "VerifyResult(passed=%s, rtol=%g, atol=%g, outputs=%s)" % (self.passed, self.rtol, self.atol,
                                                                           sorted(self.outputs))


def _random_inputs(model, function, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for name, (dt, dims) in model.input_types(function).items():
        shape = tuple(1 if x is None else x for x in dims)
        if dt in ("fp16", "fp32", "fp64"):
            out[name] = rng.uniform(-1, 1, size=shape).astype(np.float32)
        elif dt == "bool":
            out[name] = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            out[name] = rng.integers(0, 10, size=shape).astype(np.int32)
    return out


def verify(a, b, inputs=None, rtol=None, atol=None, function="main", seed=0):
    """Runs two models on the same inputs and compares every output with
    numpy.allclose's rule |a - b| <= atol + rtol * |b| (NaNs must agree),
    as `mil verify` does. a, b: Models or paths. inputs: dict name -> array
    (missing inputs are random: floats uniform in [-1, 1), ints in [0, 10),
    symbolic dims 1, from numpy's generator seeded with seed). Defaults:
    rtol 1e-3, atol 1e-4, or 1e-2 / 1e-2 when either program computes in
    fp16. Outputs match by name, else by position. A path to an ONNX model
    stands for the ONNX graph's own semantics (imported in fp32 without the
    pass pipeline), not for libmil's default fp16 conversion.
    Returns a VerifyResult."""
    ma, mb = _as_model(a, True), _as_model(b, True)
    feed = _random_inputs(ma, function, seed)
    feed.update(inputs or {})
    fp16 = any(" fp16)" in str(m) or ",fp16)" in str(m) for m in (ma, mb))
    rtol = rtol if rtol is not None else (1e-2 if fp16 else 1e-3)
    atol = atol if atol is not None else (1e-2 if fp16 else 1e-4)
    ya, yb = ma.predict(feed, function), mb.predict(feed, function)
    pairs = [(k, k) for k in ya] if set(ya) <= set(yb) else list(zip(ya, yb))
    outputs = {}
    for ka, kb in pairs:
        x, y = np.asarray(ya[ka], np.float64), np.asarray(yb[kb], np.float64)
        if x.shape != y.shape:
            outputs[ka] = dict(max_abs_error=float("inf"), max_rel_error=float("inf"), mismatches=-1, passed=False)
            continue
        nan = np.isnan(x) | np.isnan(y)
        err = np.where(nan, 0.0, np.abs(x - y))
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where((y != 0) & ~nan, err / np.abs(y), 0.0)
        bad = int(np.count_nonzero((np.isnan(x) != np.isnan(y)) | (~nan & ~(err <= atol + rtol * np.abs(y)))))
        outputs[ka] = dict(max_abs_error=float(err.max(initial=0.0)), max_rel_error=float(rel.max(initial=0.0)),
                           mismatches=bad, passed=bad == 0)
    if len(ya) != len(yb) and not set(ya) <= set(yb):
        outputs["<outputs>"] = dict(max_abs_error=float("inf"), max_rel_error=float("inf"), mismatches=-1,
                                    passed=False)
    return VerifyResult(outputs, rtol, atol)


def passes(implemented_only=False):
    """Every pass libmil knows, with coremltools' names, as a list of dicts:
    name ("common::dead_code_elimination"), doc, implemented (bool) and
    options (list of dicts: name, type, default, doc)."""
    out = []
    for i in range(_capi.pass_known_count()):
        p = _capi.pass_known_at(i).contents
        name = p.name.decode()
        impl = bool(_capi.pass_is_implemented(p.name))
        if implemented_only and not impl:
            continue
        opts = []
        for j in range(p.n_options):
            o = p.options[j]
            opts.append(dict(name=o.name.decode(), type=_capi.pass_opt_type_name(o.type).decode(),
                             default=o.default_value.decode() if o.default_value is not None else None,
                             doc=(o.doc or b"").decode()))
        out.append(dict(name=name, doc=(p.doc or b"").decode(), implemented=impl, options=opts))
    return out


def pipelines():
    """The predefined pipelines (coremltools' PassPipeline names) as a dict
    name -> list of pass names in order."""
    out = {}
    for i in range(_capi.pipeline_name_count()):
        name = _capi.pipeline_name_at(i)
        pl = _capi.c_void_p()
        with Diag() as d:
            d.raise_for(_capi.pipeline_new(name, _capi.byref(pl), d.ref))
        try:
            out[name.decode()] = [_capi.pipeline_pass_at(pl, j).decode() for j in range(_capi.pipeline_n_passes(pl))]
        finally:
            _capi.pipeline_free(pl)
    return out


# libmil.utils is libmil.models.utils (coremltools.models.utils' model
# utilities), importable under both names
sys.modules[__name__ + ".utils"] = utils
