"""libmil.Model: a loaded Core ML ML Program, as coremltools' MLModel shows
one (spec version, description, metadata, predict), plus libmil's
optimize / validate / save and MIL text."""
import collections
import ctypes
import json
import os
import time

import numpy as np

from . import _capi as C
from ._errors import Diag, MILInvalidError, MILNotFoundError, MILUnsupportedError

# mil_dtype numbers (types.h) <-> numpy
_NP_OF_DTYPE = {1: np.bool_, 10: np.float16, 11: np.float32, 12: np.float64, 21: np.int8, 22: np.int16,
                23: np.int32, 24: np.int64, 31: np.uint8, 32: np.uint16, 33: np.uint32, 34: np.uint64}
_ARRAY_DTYPE = {65568: "fp32", 65600: "fp64", 65552: "fp16", 131104: "int32", 131080: "int8"}
_FEATURE_KIND = {0: "none", 1: "int64", 2: "double", 3: "string", 4: "image", 5: "multiArray", 6: "dictionary",
                 7: "sequence", 8: "state"}

Feature = collections.namedtuple("Feature", "name kind dtype shape optional short_description")
Feature.__doc__ = ("One input, output or state of a model's description: name, kind ('multiArray', 'image', "
                   "'state', ...), dtype ('fp32', 'fp16', 'int32', 'int8', 'fp64' or None), shape (tuple of ints; "
                   "() when the description gives none), optional (bool), short_description (str).")


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


class Description(collections.OrderedDict):
    """Ordered mapping feature name -> Feature (coremltools' input_description
    maps names to descriptions; here each value carries the whole feature)."""


def _features(ptr, n):
    out = Description()
    for i in range(n):
        f = ptr[i]
        shape = tuple(f.shape.dims[j] for j in range(f.shape.rank))
        out[_s(f.name)] = Feature(_s(f.name), _FEATURE_KIND.get(f.kind, str(f.kind)), _ARRAY_DTYPE.get(f.array_dtype),
                                  shape, bool(f.is_optional), _s(f.short_description))
    return out


class _ProgramHead(ctypes.Structure):  # the leading public fields of struct mil_program (ir.h)
    _fields_ = [("version", C.c_int64), ("doc_string", C.c_char_p), ("n_functions", C.c_int32),
                ("functions", C.POINTER(C.POINTER(C.c_char_p)))]  # mil_function* whose first field is the name


def _program_text(program, complete):
    opts = C.PrintOptions(1 if complete else 0, False)
    buf = C.Buf()
    try:
        C.print_program(program, C.byref(opts), C.byref(buf))
        if buf.oom:
            raise MemoryError("libmil: out of memory printing the program")
        return ctypes.string_at(buf.data, buf.len).decode("utf-8") if buf.len else ""
    finally:
        C.buf_free(C.byref(buf))


def _tensor_to_numpy(t):
    dt = _NP_OF_DTYPE.get(t.dtype)
    if dt is None:
        raise MILUnsupportedError("output dtype %s has no numpy counterpart" % _s(C.dtype_name(t.dtype)))
    shape = tuple(t.shape[i] for i in range(t.rank)) if t.rank else ()
    arr = np.empty(shape, dtype=dt)
    if t.nbytes:
        ctypes.memmove(arr.ctypes.data, t.data, t.nbytes)
    return arr


class State:
    """The values of a stateful model's states (coremltools' MLState):
    create with Model.make_state(), pass to predict(state=...); the states
    persist across predictions made with it."""

    def __init__(self, model, function, handle):
        self._model, self.function, self._h = model, function, handle

    def __del__(self):
        if getattr(self, "_h", None):
            C.interp_state_free(self._h)
            self._h = None


class OptimizeReport:
    """What Model.optimize did: ``passes`` lists every pass run as dicts
    (name, seconds, changes, ops_before, ops_after, skipped); ``changed``
    the names of the passes that changed the program; ``ops_before`` /
    ``ops_after`` the op counts; ``seconds`` the passes' total time."""

    def __init__(self, pipeline, rep, wall):
        self.pipeline = pipeline
        self.passes = []
        for i in range(rep.n_records):
            r = rep.records[i]
            self.passes.append(dict(name=_s(r.pass_), seconds=r.seconds, changes=r.changes,
                                    ops_before=r.ops_before, ops_after=r.ops_after, skipped=bool(r.skipped)))
        self.changed = [p["name"] for p in self.passes if p["changes"] > 0]
        self.ops_before, self.ops_after = rep.ops_before, rep.ops_after
        self.seconds, self.wall_seconds = rep.seconds, wall

    def __repr__(self):
        return ("OptimizeReport(pipeline=%r, passes run=%d, changed=%d, ops %d -> %d, %.3f s)" %
                (self.pipeline, len(self.passes), len(self.changed), self.ops_before, self.ops_after, self.seconds))


class Model:
    """A Core ML ML Program model held by libmil. Create with libmil.load()
    or libmil.from_mil_text(). Not thread-safe (one prediction at a time)."""

    def __init__(self, handle, path=None):
        self._h = handle
        self.path = path
        self._interps = {}

    # ----------------------------------------------------------- lifetime
    def _free_interps(self):
        for h in self._interps.values():
            C.interp_free(h)
        self._interps = {}

    def close(self):
        """Frees the C model now (also done when the object is collected)."""
        if getattr(self, "_h", None):
            self._free_interps()
            C.model_free(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._h:
            raise MILInvalidError("the model was closed")
        return self._h

    @property
    def _program(self):
        return C.model_program(self._handle())

    # ----------------------------------------------------------- description
    @property
    def spec_version(self):
        """The Model protobuf's specificationVersion (int, 6..10 for ML Programs)."""
        return C.model_spec_version(self._handle())

    @property
    def functions(self):
        """Names of the program's functions, in program order (list of str)."""
        head = _ProgramHead.from_address(self._program)
        return [_s(head.functions[i][0]) for i in range(head.n_functions)]

    def _desc(self):
        return C.model_description(self._handle())

    def _function_desc(self, function=None):
        d = self._desc()
        if not d:
            return None
        want = function or _s(d.contents.default_function_name)
        for i in range(d.contents.n_functions):
            if _s(d.contents.functions[i].name) == want:
                return d.contents.functions[i]
        return None

    def _describe(self, which, function=None):
        fd = self._function_desc(function)
        if fd is None:
            return Description()
        return _features(getattr(fd, which), getattr(fd, "n_" + which))

    @property
    def input_description(self):
        """Description (name -> Feature) of the default function's inputs."""
        return self._describe("inputs")

    @property
    def output_description(self):
        """Description (name -> Feature) of the default function's outputs."""
        return self._describe("outputs")

    @property
    def state_description(self):
        """Description (name -> Feature) of the default function's states."""
        return self._describe("states")

    @property
    def metadata(self):
        """The model's Metadata as a dict: shortDescription, versionString,
        author, license (str) and userDefined (dict str -> str)."""
        d = self._desc()
        if not d:
            return {}
        d = d.contents
        return {"shortDescription": _s(d.short_description), "versionString": _s(d.version_string),
                "author": _s(d.author), "license": _s(d.license),
                "userDefined": {_s(d.user_keys[i]): _s(d.user_values[i]) for i in range(d.n_user_defined)}}

    author = property(lambda self: self.metadata.get("author"), doc="Metadata author (str).")
    license = property(lambda self: self.metadata.get("license"), doc="Metadata license (str).")
    short_description = property(lambda self: self.metadata.get("shortDescription"), doc="Metadata short description.")
    version = property(lambda self: self.metadata.get("versionString"), doc="Metadata version string.")
    user_defined_metadata = property(lambda self: self.metadata.get("userDefined", {}),
                                     doc="Metadata userDefined (dict str -> str).")

    @property
    def onnx_names(self):
        """For a model converted from ONNX: the inputs and outputs the
        conversion renamed, {"inputs": {model name: ONNX name}, "outputs":
        {...}} (metadata com.libmil.onnx_names); {} otherwise."""
        js = self.user_defined_metadata.get("com.libmil.onnx_names")
        if not js:
            return {}
        try:
            return json.loads(js)
        except ValueError:
            return {}

    # ----------------------------------------------------------- text
    @property
    def program(self):
        """The program as complete-form MIL text (lossless; what .mil files hold)."""
        return _program_text(self._program, True)

    def to_mil_text(self, complete=True):
        """MIL text of the program: complete form (default) or, with
        complete=False, byte for byte what coremltools' print(program) shows."""
        return _program_text(self._program, complete)

    def __str__(self):
        return _program_text(self._program, False)

    def __repr__(self):
        return "<libmil.Model %s: spec %d, functions %s>" % (self.path or "(in memory)", self.spec_version,
                                                           ", ".join(self.functions))

    # ----------------------------------------------------------- checks
    def validate(self):
        """Checks structure and types with the op registry (mil validate).
        Returns the list of warnings; raises MILError on an invalid program."""
        with Diag() as d:
            d.raise_for(C.program_validate(self._program, d.ref))
            return d.warnings()

    # ----------------------------------------------------------- running
    def _interp(self, function):
        key = function or ""
        h = self._interps.get(key)
        if h is None:
            h = C.c_void_p()
            with Diag() as d:
                d.raise_for(C.interp_new(self._program, function.encode() if function else None, C.byref(h), d.ref))
            h = h.value
            self._interps[key] = h
        return h

    def make_state(self, function="main"):
        """A new State for a stateful model's function (coremltools'
        MLModel.make_state): states start at their declared initial values."""
        ip = self._interp(self._pick(function))
        h = C.c_void_p()
        with Diag() as d:
            d.raise_for(C.interp_state_new(ip, C.byref(h), d.ref))
        return State(self, function, h.value)

    def _pick(self, function):
        if function == "main" and "main" not in self.functions and len(self.functions) == 1:
            return None
        return function

    def input_types(self, function="main"):
        """dict input name -> (dtype name, shape tuple with None for symbolic dims) of a function."""
        ip = self._interp(self._pick(function))
        out = {}
        for i in range(C.interp_n_inputs(ip)):
            t = C.interp_input_type(ip, i).contents
            if t.kind == 4:  # state
                continue
            dims = tuple(t.dims[j].size if t.dims[j].size >= 0 else None for j in range(max(t.rank, 0)))
            out[_s(C.interp_input_name(ip, i))] = (_s(C.dtype_name(t.dtype)), dims)
        return out

    def predict(self, data, function="main", state=None, seed=None):
        """Runs a function on the CPU reference interpreter.

        data: dict input name -> numpy array (or anything numpy.asarray
        takes). Arrays are converted to the input's declared dtype as
        coremltools' predict does (float64 -> fp32 or fp16, int64 -> int32,
        ...); shapes must fit the declared shape (symbolic dims take any size).
        For a model converted from ONNX, an input may also be given by the
        ONNX name the conversion renamed ("onnx::Flatten_0" for
        "onnx__Flatten_0"; metadata com.libmil.onnx_names); outputs keep
        the model's names (onnx_names maps them back).
        state: a State from make_state() for stateful models.
        seed: seed of the random ops (random_*), default 0.
        Returns a dict output name -> numpy array that owns its data.
        Raises MILNotFoundError for an unknown input or function, MILTypeError
        / MILInvalidError for a dtype or shape that does not fit."""
        fn = self._pick(function)
        ip = self._interp(fn)
        if state is not None and state._model is not self:
            raise MILInvalidError("the state was made by another model")
        declared = {}
        for i in range(C.interp_n_inputs(ip)):
            declared[_s(C.interp_input_name(ip, i))] = C.interp_input_type(ip, i).contents
        keep = []
        renamed = {onnx: mil for mil, onnx in self.onnx_names.get("inputs", {}).items()}
        with Diag() as d:
            for name, value in data.items():
                if name not in declared and name in renamed:
                    name = renamed[name]
                t = declared.get(name)
                if t is None:
                    raise MILNotFoundError("predict: model has no input '%s'; inputs: %s" %
                                           (name, ", ".join(declared) or "(none)"))
                np_dt = _NP_OF_DTYPE.get(t.dtype)
                if np_dt is None:
                    raise MILUnsupportedError("predict: input '%s' has dtype %s, which predict cannot feed" %
                                              (name, _s(C.dtype_name(t.dtype))))
                arr = np.ascontiguousarray(np.asarray(value), dtype=np_dt)
                if t.is_scalar and arr.size == 1:
                    arr = arr.reshape(())
                shape = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
                ten = C.Tensor(t.dtype, arr.ndim, shape, arr.ctypes.data, arr.nbytes, arr.size)
                keep.append((arr, shape))
                d.raise_for(C.interp_set_input(ip, name.encode(), C.byref(ten), d.ref))
            if seed is not None:
                C.interp_set_seed(ip, seed)
            d.raise_for(C.interp_run(ip, state._h if state is not None else None, d.ref))
            out = {}
            for i in range(C.interp_n_outputs(ip)):
                out[_s(C.interp_output_name(ip, i))] = _tensor_to_numpy(C.interp_output_at(ip, i).contents)
            return out

    # ----------------------------------------------------------- optimizing
    def optimize(self, pipeline="default", passes=None, options=None, compute_precision=None):
        """Runs a pass pipeline on the program in place, as `mil opt` does.

        pipeline: a predefined pipeline name (libmil.pipelines(); coremltools'
        names: "default", "cleanup", ...); ignored when passes is given.
        passes: a list of pass names ("common::dead_code_elimination" or
        without the namespace) to run in order instead.
        options: dict pass name -> dict option -> value, coremltools'
        PassPipeline.set_options (e.g. {"common::const_elimination":
        {"skip_const_by_size": 1e6}}).
        compute_precision: "fp32" drops add_fp16_cast / add_int16_cast, as
        `mil opt --compute-precision fp32` and ct.convert do.
        Returns an OptimizeReport. Raises MILNotFoundError for an unknown
        pipeline, pass or option, MILUnsupportedError when a pass is not
        implemented, or the error of a failing pass (the program then holds
        what that pass left)."""
        import json
        pl = C.c_void_p()
        with Diag() as d:
            if passes is not None:
                if isinstance(passes, str):
                    passes = [passes]
                arr = (C.c_char_p * max(len(passes), 1))(*[p.encode() for p in passes])
                d.raise_for(C.pipeline_new_from_list(b"custom", len(passes), arr, C.byref(pl), d.ref))
                name = "custom"
            else:
                d.raise_for(C.pipeline_new(pipeline.encode(), C.byref(pl), d.ref))
                name = pipeline
            rep = C.PipelineReport()
            try:
                if compute_precision not in (None, "fp16", "fp32"):
                    raise MILInvalidError("compute_precision must be 'fp16' or 'fp32', got %r" % (compute_precision,))
                if compute_precision == "fp32":
                    C.pipeline_remove_pass(pl, b"common::add_fp16_cast")
                    C.pipeline_remove_pass(pl, b"common::add_int16_cast")
                for pname, opts in (options or {}).items():
                    d.raise_for(C.pipeline_set_options_json(pl, pname.encode(), json.dumps(opts).encode(), d.ref))
                self._free_interps()
                t0 = time.perf_counter()
                st = C.pipeline_run(pl, self._program, None, C.byref(rep), d.ref)
                wall = time.perf_counter() - t0
                d.raise_for(st)
                return OptimizeReport(name, rep, wall)
            finally:
                C.pipeline_report_free(C.byref(rep))
                C.pipeline_free(pl)

    # ----------------------------------------------------------- saving
    def save(self, path):
        """Writes the model to path: .mlpackage (a package directory),
        .mlmodel (with weights/weight.bin beside it) or .mil (complete-form
        text). The file is written to a temporary sibling and renamed, so a
        failed save leaves any previous file as it was."""
        path = os.fspath(path)
        if path.endswith(".mil"):
            text = self.to_mil_text(complete=True)
            tmp = "%s.tmp-%d" % (path, os.getpid())
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            return
        with Diag() as d:
            d.raise_for(C.model_save(self._handle(), path.encode(), d.ref))
