"""Model utilities with coremltools.models.utils' names and signatures:
multifunction models, renaming features, fp32/fp16 I/O, fixed-shape
functions. Implemented in C (include/mil/utils.h); see `mil merge`,
`mil edit` and `mil materialize` for the same from the command line.

    >>> from libmil.utils import MultiFunctionDescriptor, save_multifunction
    >>> desc = MultiFunctionDescriptor()
    >>> desc.add_function("base.mlpackage", "main", "base")
    >>> desc.add_function("adapted.mlpackage", "main", "adapted")
    >>> desc.default_function_name = "base"
    >>> save_multifunction(desc, "both.mlpackage")   # shared weights stored once
"""
import copy as _copy
import json as _json
import os as _os
import shutil as _shutil
import tempfile as _tempfile

import numpy as _np

from .. import _capi as C
from .._errors import Diag as _Diag
from .._model import Model as _Model

__all__ = ["MultiFunctionDescriptor", "save_multifunction", "rename_feature", "change_input_output_tensor_type",
           "materialize_dynamic_shape_mlmodel", "set_feature_description", "set_metadata", "bisect_model",
           "make_pipeline", "PipelineModel", "randomize_weights"]


def _load(path):
    from .. import load
    return load(path)


class MultiFunctionDescriptor:
    """How to build a multifunction model from functions of several models
    (coremltools.utils.MultiFunctionDescriptor). add_function() names a
    function of a model and its name in the result; default_function_name
    must be set before save_multifunction()."""

    def __init__(self, model_path=None):
        self._default_function_name = None
        self._name_to_source_function = {}
        self._modelpath_to_functions = {}
        if model_path is not None:
            self.add_model(model_path)

    def _functions(self):
        return _copy.copy(self._name_to_source_function)

    def _add_modelpath_to_cache(self, model_path):
        model_path = _os.fspath(model_path)
        if model_path in self._modelpath_to_functions:
            return
        try:
            m = _load(model_path)
        except Exception as err:
            raise ValueError(f"invalid model_path {model_path} with error {err} while loading.")
        try:
            d = m._desc().contents
            if d.multi_function:
                names = [d.functions[i].name.decode() for i in range(d.n_functions)]
            else:
                names = ["main"]
        finally:
            m.close()
        self._modelpath_to_functions[model_path] = names

    @property
    def default_function_name(self):
        return self._default_function_name

    @default_function_name.setter
    def default_function_name(self, val):
        if not isinstance(val, str):
            raise ValueError(f"default_function_name must be type of str. Got {val}.")
        self._default_function_name = val

    def add_function(self, model_path, src_function_name, target_function_name):
        """Inserts function src_function_name of model_path as
        target_function_name."""
        model_path = _os.fspath(model_path)
        self._add_modelpath_to_cache(model_path)
        if src_function_name not in self._modelpath_to_functions[model_path]:
            raise ValueError(f"src_function_name {src_function_name} not found in {model_path}.")
        if target_function_name in self._name_to_source_function:
            raise ValueError(f"function {target_function_name} already exist.")
        self._name_to_source_function[target_function_name] = (model_path, src_function_name)

    def add_model(self, model_path):
        """Inserts every function of model_path under its own name."""
        model_path = _os.fspath(model_path)
        self._add_modelpath_to_cache(model_path)
        for name in self._modelpath_to_functions[model_path]:
            self.add_function(model_path, name, name)

    def remove_function(self, function_name):
        if function_name not in self._name_to_source_function:
            raise ValueError(f"function_name {function_name} not found.")
        del self._name_to_source_function[function_name]


def save_multifunction(desc, destination_path):
    """Writes desc as a multifunction .mlpackage (specification version 9 /
    iOS18 or later) whose consts equal across functions are stored once
    (coremltools.utils.save_multifunction). Weights are streamed from the
    sources' mapped files; the file is written atomically."""
    if desc.default_function_name is None:
        raise ValueError("default_function_name must be set for the MultiFunctionDescriptor instance before calling "
                         "save_multifunction.")
    items = list(desc._name_to_source_function.items())
    if desc.default_function_name not in desc._name_to_source_function:
        raise ValueError(f"default_function_name {desc.default_function_name} not found in the program. Available "
                         f"functions names are {[k for k, _ in items]}")
    arr = (C.MergeFunction * max(1, len(items)))()
    keep = []
    for i, (target, (path, src)) in enumerate(items):
        b = (path.encode(), src.encode(), target.encode())
        keep.append(b)
        arr[i].model_path, arr[i].src_function, arr[i].target_function = b
    with _Diag() as d:
        d.raise_for(C.utils_save_multifunction(arr, len(items), desc.default_function_name.encode(),
                                               _os.fspath(destination_path).encode(), d.ref))


def _handle(model):
    if not isinstance(model, _Model):
        raise ValueError(f"input model must be a libmil Model (libmil.load), actual type is {type(model)}")
    return model._handle()


def rename_feature(model, current_name, new_name, rename_inputs=True, rename_outputs=True):
    """Renames input/output current_name to new_name in place, in the
    description (predicted-feature fields too) and the program
    (coremltools.utils.rename_feature; here on a loaded Model rather than a
    spec). A name no feature has is a no-op."""
    with _Diag() as d:
        d.raise_for(C.utils_rename_feature(_handle(model), current_name.encode(), new_name.encode(),
                                           bool(rename_inputs), bool(rename_outputs), d.ref))
    model._free_interps()


def _dtype(t, what):
    if isinstance(t, str):
        key = t.lower()
    elif t is _np.float16 or t is _np.float32:
        key = "fp16" if t is _np.float16 else "fp32"
    else:
        try:
            key = {_np.dtype(_np.float16): "fp16", _np.dtype(_np.float32): "fp32"}.get(_np.dtype(t))
        except TypeError:
            key = None
        if key is None and isinstance(t, int):  # ArrayFeatureType numbers
            key = {65552: "fp16", 65568: "fp32"}.get(t)
    table = {"fp16": C.DT_FP16, "float16": C.DT_FP16, "fp32": C.DT_FP32, "float32": C.DT_FP32}
    if key not in table:
        raise ValueError(f"not supported {what}: must be FLOAT16 or FLOAT32 ('fp16', 'fp32', np.float16, "
                         f"np.float32), got {t!r}")
    return table[key]


def _copy_model(model):
    """A new Model equal to model (saved to a temporary package and loaded:
    its weights stay mapped after the temporary files are removed)."""
    tmp = _tempfile.mkdtemp(prefix="libmil-utils-")
    try:
        p = _os.path.join(tmp, "copy.mlpackage")
        model.save(p)
        new = _load(p)
    finally:
        _shutil.rmtree(tmp, ignore_errors=True)
    new.path = model.path
    return new


def change_input_output_tensor_type(model, from_type, to_type, function_names=None, input_names=None,
                                    output_names=None):
    """Returns a new Model whose fp32 (from_type) inputs/outputs are fp16
    (to_type), or the reverse (coremltools.utils.change_input_output_tensor_type).
    Types: "fp32"/"fp16", np.float32/np.float16 or ArrayFeatureType numbers.
    function_names: default ["main"]; input_names: default none ("*": all);
    output_names: default all. Functions changed get opset iOS16 at least."""
    _handle(model)
    f = _dtype(from_type, "from_type")
    t = _dtype(to_type, "to_type")
    new = _copy_model(model)
    fa, nf = C.str_array(function_names or None)
    ia, ni = C.str_array(input_names)
    oa, no = C.str_array(output_names)
    with _Diag() as d:
        d.raise_for(C.utils_change_io_type(new._handle(), f, t, fa, nf, ia, ni, oa, no, d.ref))
    return new


def set_feature_description(model, name, text, function=None):
    """Sets (or with text None clears) the shortDescription of an input,
    output or state, in place."""
    with _Diag() as d:
        d.raise_for(C.utils_set_feature_description(_handle(model), function.encode() if function else None,
                                                    name.encode(), text.encode() if text is not None else None,
                                                    d.ref))


def set_metadata(model, field, value):
    """Sets (value None: removes) a metadata field in place: "short_description",
    "author", "license", "version", or a userDefined key."""
    with _Diag() as d:
        d.raise_for(C.utils_set_model_metadata(_handle(model), field.encode(),
                                               value.encode() if value is not None else None, d.ref))


def materialize_dynamic_shape_mlmodel(dynamic_shape_mlmodel, function_name_to_materialization_map,
                                      destination_path, source_function_name="main"):
    """Writes to destination_path the model with fixed-shape functions made
    from source_function_name ({"batch_1": {"x": (1, 64)}, ...}), sharing the
    weights (coremltools.utils.materialize_dynamic_shape_mlmodel). The model
    passed is not modified."""
    _handle(dynamic_shape_mlmodel)
    mp = {}
    for fn, shapes in function_name_to_materialization_map.items():
        mp[fn] = {k: [int(x) for x in v] for k, v in shapes.items()}
    work = _copy_model(dynamic_shape_mlmodel)
    try:
        with _Diag() as d:
            d.raise_for(C.utils_materialize(work._handle(), _json.dumps(mp).encode(),
                                            _os.fspath(destination_path).encode(), source_function_name.encode(),
                                            d.ref))
    finally:
        work.close()


def _psnr(a, b):
    a = _np.asarray(a, _np.float64)
    b = _np.asarray(b, _np.float64)
    mse = float(_np.mean((a - b) ** 2)) if a.size else 0.0
    if mse == 0:
        return float("inf")
    peak = float(_np.max(_np.abs(a))) or 1.0
    return 20 * _np.log10(peak) - 10 * _np.log10(mse)


def _random_inputs(model, seed=0):
    rng = _np.random.default_rng(seed)
    out = {}
    for name, (dtype, dims) in model.input_types().items():
        shape = tuple(x if x is not None else 1 for x in dims)
        dt = {"fp16": _np.float16, "fp32": _np.float32, "int32": _np.int32}.get(dtype, _np.float32)
        out[name] = rng.uniform(-1, 1, shape).astype(dt)
    return out


def _check_chunks(full, c1, c2, seed=0):
    """Runs full and chunk 1 then chunk 2 on the same random inputs:
    {output name: PSNR in dB} (coremltools' _verify_output_correctness_of_chunks,
    here on the interpreter)."""
    inputs = _random_inputs(full, seed)
    want = full.predict(inputs)
    o1 = c1.predict({k: v for k, v in inputs.items() if k in c1.input_types()})
    feed = {k: (o1[k] if k in o1 else inputs[k]) for k in c2.input_types()}
    got = c2.predict(feed)
    return {k: _psnr(want[k], got[k]) for k in want}


def bisect_model(model, output_dir, merge_chunks_to_pipeline=False, check_output_correctness=True):
    """Splits a single-function model into two models of about equal weight
    size (coremltools.utils.bisect_model): output_dir/<name>_chunk1.mlpackage
    and <name>_chunk2.mlpackage for a model given by path (chunk1.mlpackage,
    chunk2.mlpackage for a Model), or with merge_chunks_to_pipeline one
    Pipeline model <name>_chunked_pipeline.mlpackage. With check_output_correctness, chunk 1
    then chunk 2 are run on the interpreter with random inputs and compared
    with the model (PSNR per output, a warning below 35 dB, as coremltools);
    returns {output: PSNR} then, else None."""
    if isinstance(model, (str, _os.PathLike)):
        path = _os.fspath(model)
        name = _os.path.splitext(_os.path.basename(path.rstrip("/")))[0] + "_"
        m = _load(path)
    elif isinstance(model, _Model):
        name, m = "", model
    else:
        raise ValueError(f"'model' must be type of [str, MLModel]. Got {type(model)}.")
    _os.makedirs(output_dir, exist_ok=True)
    tmp = _tempfile.mkdtemp(prefix="libmil-bisect-") if merge_chunks_to_pipeline else None
    where = tmp or output_dir
    p1 = _os.path.join(where, name + "chunk1.mlpackage")
    p2 = _os.path.join(where, name + "chunk2.mlpackage")
    info = C.BisectInfo()
    try:
        with _Diag() as d:
            d.raise_for(C.utils_bisect(m._handle(), p1.encode(), p2.encode(), C.byref(info), d.ref))
        if merge_chunks_to_pipeline:
            pp = _os.path.join(output_dir, name + "chunked_pipeline.mlpackage")
            _pipeline_to([p1, p2], pp)
        if not check_output_correctness:
            return None
        if merge_chunks_to_pipeline:
            pm = PipelineModel(pp)
            inputs = _random_inputs(m)
            want, got = m.predict(inputs), pm.predict(inputs)
            res = {k: _psnr(want[k], got[k]) for k in want}
        else:
            res = _check_chunks(m, _load(p1), _load(p2))
    finally:
        if tmp:
            _shutil.rmtree(tmp, ignore_errors=True)
    for k, v in res.items():
        if v < 35:
            import warnings
            warnings.warn(f"{k}: {v:.1f} dB is low!")
    return res


class PipelineModel:
    """A Pipeline model (make_pipeline): its stages run in order, each fed
    the pipeline inputs and the outputs of the stages before it. `stages`
    are the stage Models; save(path) writes the pipeline .mlpackage."""

    def __init__(self, path, _owned_dir=None):
        self.path = path
        self._owned_dir = _owned_dir
        arr = C.POINTER(C.P)()
        n = C.c_int32()
        with _Diag() as d:
            d.raise_for(C.utils_pipeline_load(_os.fspath(path).encode(), C.byref(arr), C.byref(n), d.ref))
        self.stages = [_Model._from_handle(arr[i], path) for i in range(n.value)]
        C.utils_pipeline_free(arr, 0)  # the array only: each stage Model owns its handle

    def predict(self, data):
        known = dict(data)
        out = {}
        for k, st in enumerate(self.stages):
            names = st.input_types()
            res = st.predict({n: known[n] for n in names if n in known})
            known.update(res)
            later = set()
            for s2 in self.stages[k + 1:]:
                later.update(s2.input_types())
            out.update({n: v for n, v in res.items() if n not in later})
        return out

    def save(self, path):
        path = _os.fspath(path)
        if _os.path.abspath(path) == _os.path.abspath(self.path):
            return
        tmp = path + ".tmp-%d" % _os.getpid()
        _shutil.rmtree(tmp, ignore_errors=True)
        _shutil.copytree(self.path, tmp)
        if _os.path.isdir(path):
            old = path + ".old-%d" % _os.getpid()
            _os.replace(path, old)
            _os.replace(tmp, path)
            _shutil.rmtree(old, ignore_errors=True)
        else:
            _os.replace(tmp, path)

    def __del__(self):
        if getattr(self, "_owned_dir", None):
            _shutil.rmtree(self._owned_dir, ignore_errors=True)


def _pipeline_to(paths, dest):
    arr = (C.c_char_p * len(paths))(*[_os.fspath(p).encode() for p in paths])
    with _Diag() as d:
        d.raise_for(C.utils_make_pipeline(arr, len(paths), _os.fspath(dest).encode(), d.ref))


def make_pipeline(*models):
    """Chains two or more models (Models or .mlpackage paths) into one
    Pipeline model (coremltools.utils.make_pipeline): returns a
    PipelineModel (predict, save, stages)."""
    if len(models) < 2:
        raise ValueError("make_pipeline needs two or more models")
    tmp = _tempfile.mkdtemp(prefix="libmil-pipeline-")
    paths = []
    for i, m in enumerate(models):
        if isinstance(m, _Model):
            p = _os.path.join(tmp, "stage%d.mlpackage" % i)
            m.save(p)
            paths.append(p)
        else:
            paths.append(_os.fspath(m))
    dest = _os.path.join(tmp, "pipeline.mlpackage")
    _pipeline_to(paths, dest)
    return PipelineModel(dest, _owned_dir=tmp)


def randomize_weights(mlmodel, seed=0):
    """Returns a new Model whose weight-file consts hold random values of
    their dtype and shape (coremltools.utils.randomize_weights: floats
    uniform in [0, 1), integers 0); `seed` makes it reproducible."""
    _handle(mlmodel)
    new = _copy_model(mlmodel)
    n = C.c_int64()
    with _Diag() as d:
        d.raise_for(C.utils_randomize_weights(new._handle(), int(seed), C.byref(n), d.ref))
    new._free_interps()
    return new
