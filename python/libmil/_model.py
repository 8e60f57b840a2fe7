"""libmil.Model: a loaded Core ML ML Program, as coremltools' MLModel shows
one (spec version, description, metadata, predict), plus libmil's
optimize / validate / save and MIL text."""
import collections
import collections.abc
import ctypes
import json
import os
import threading
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


def _program_text(program, complete):
    opts = C.PrintOptions(1 if complete else 0, False)
    buf = C.Buf()
    try:
        C.print_program(program, C.byref(opts), C.byref(buf))
        if buf.oom:
            raise MemoryError("libmil: out of memory printing the program")
        return C.string_at(buf.data, buf.len).decode("utf-8") if buf.len else ""
    finally:
        C.buf_free(C.byref(buf))


def _open(path):
    """Loads the model at path and returns its C handle (libmil.load's rules)."""
    if path.endswith(".onnx"):
        from . import convert  # the package's convert; imported here to avoid a cycle
        m = convert(path)
        h, m._h = m._h, None
        return h
    h = C.c_void_p()
    with Diag() as d:
        d.raise_for(C.model_load(path.encode(), C.byref(h), d.ref))
    return h.value


def _output_value(ip, i):
    """Output i of a run: a numpy array; a classifier's label as str / int
    and its probabilities as a dict label -> float, as coremltools' predict
    returns them."""
    dp = C.interp_output_dict(ip, i)
    if dp:
        dct = dp.contents
        if dct.str_keys:
            return {_s(dct.str_keys[k]): float(dct.values[k]) for k in range(dct.n)}
        return {int(dct.int_keys[k]): float(dct.values[k]) for k in range(dct.n)}
    t = C.interp_output_at(ip, i).contents
    if C.interp_output_is_label(ip, i) and t.numel == 1:
        if t.dtype == 2:  # MIL_DT_STRING: one char *
            return _s(C.c_char_p.from_address(t.data).value)
        return int(_tensor_to_numpy(t).reshape(-1)[0])
    return _tensor_to_numpy(t)


def _tensor_to_numpy(t):
    dt = _NP_OF_DTYPE.get(t.dtype)
    if dt is None:
        raise MILUnsupportedError("output dtype %s has no numpy counterpart" % _s(C.dtype_name(t.dtype)))
    shape = tuple(t.shape[i] for i in range(t.rank)) if t.rank else ()
    arr = np.empty(shape, dtype=dt)
    if t.nbytes:
        C.memmove(arr.ctypes.data, t.data, t.nbytes)
    return arr


def _type_str(t):
    dims = ", ".join(str(t.dims[j].size) if t.dims[j].size >= 0 else "?" for j in range(max(t.rank, 0)))
    return "%s (%s)" % (_s(C.dtype_name(t.dtype)), dims)


def _index(shape, flat):
    return "[%s]" % ", ".join(str(int(k)) for k in np.unravel_index(flat, shape)) if shape else "[]"


def _convert_input(name, t, value):
    """value as a contiguous array of the input's dtype, refusing values
    that dtype cannot hold (MILInvalidError naming the input, the first bad
    element's index and value)."""
    np_dt = _NP_OF_DTYPE.get(t.dtype)
    if np_dt is None:
        raise MILUnsupportedError("predict: input '%s' has dtype %s, which predict cannot feed" %
                                  (name, _s(C.dtype_name(t.dtype))))
    if value is None:
        raise TypeError("predict: input '%s' is None; expected an array of %s" % (name, _type_str(t)))
    try:
        src = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - anything numpy cannot take
        raise TypeError("predict: input '%s': cannot make an array of %s (%s)" % (name, type(value).__name__, e))
    if src.dtype.kind not in "biuf":
        raise TypeError("predict: input '%s': expected numbers for %s, got an array of dtype %s (%s)" %
                        (name, _type_str(t), src.dtype, type(value).__name__))
    dst = np.dtype(np_dt)
    bad = None
    if src.dtype != dst and src.size:
        if dst.kind in "iu":
            info = np.iinfo(dst)
            if src.dtype.kind == "f":
                with np.errstate(invalid="ignore"):
                    tr = np.trunc(src.astype(np.float64))
                    bad = ~(np.isfinite(tr) & (tr >= float(info.min)) & (tr < float(info.max) + 1.0))
            elif src.dtype.kind in "iu":
                if src.dtype.kind == "u" and dst.kind == "i":
                    bad = src > np.uint64(info.max)
                elif src.dtype.kind == "i" and dst.kind == "u":
                    bad = (src < 0) | (src.astype(np.uint64) > np.uint64(info.max))
                else:
                    bad = (src < info.min) | (src > info.max)
        elif dst.kind == "f" and src.dtype.kind in "fiu":
            with np.errstate(over="ignore", invalid="ignore"):
                conv = src.astype(dst)
            bad = np.isinf(conv) & ~np.isinf(src.astype(np.float64))
        elif dst.kind == "b" and src.dtype.kind == "f":
            bad = np.isnan(src)
    if bad is not None and np.any(bad):
        k = int(np.flatnonzero(bad)[0])
        v = src.reshape(-1)[k]
        raise MILInvalidError("predict: input '%s': element %s (flat index %d) is %r (%s), which the input's dtype "
                              "%s cannot hold; give values %s has room for, or an array of that dtype" %
                              (name, _index(src.shape, k), k, v.item(), src.dtype, _s(C.dtype_name(t.dtype)),
                               _s(C.dtype_name(t.dtype))))
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.ascontiguousarray(src, dtype=np_dt)
    if t.is_scalar and arr.size == 1:
        arr = arr.reshape(())
    return arr


def _load_handle(path):
    h = C.c_void_p()
    with Diag() as d:
        d.raise_for(C.model_load(path.encode("utf-8", "surrogateescape"), C.byref(h), d.ref))
    return h.value


class State:
    """The values of a stateful model's states (coremltools' MLState):
    create with Model.make_state(), pass to predict(state=...); the states
    persist across predictions made with it. One prediction uses a state at
    a time (others wait)."""

    def __init__(self, model, function, handle):
        self._model, self.function, self._h = model, function, handle
        self._lock = threading.Lock()

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
    """A Core ML ML Program model held by libmil: ``libmil.Model(path)``
    loads .mlpackage, .mlmodel, .mil (and .onnx when built with the
    importer), as coremltools.models.MLModel(path) does; libmil.load() and
    libmil.from_mil_text() create one too.

    Threads: predict may be called from several threads at once on one
    model (each call gets its own interpreter state; the weights are shared
    read-only) and gives the results a lone call gives. optimize(), save()
    and close() must not overlap a predict (optimize and close raise
    MILInvalidError while predictions are running)."""

    def __init__(self, path):
        if isinstance(path, bytes):
            path = path.decode("utf-8", "surrogateescape")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError("libmil.Model(path): path must be a str or os.PathLike naming a .mlpackage, "
                            ".mlmodel, .mil or .onnx file, got %s" % type(path).__name__)
        path = os.fspath(path)
        if path.endswith(".onnx"):
            from . import convert  # the importer's options and defaults live there
            other = convert(path)
            h, other._h = other._h, None
        else:
            h = _load_handle(path)
        self._init(h, path)

    @classmethod
    def _from_handle(cls, handle, path=None):
        """A Model owning the C model `handle` (a mil_model* as int)."""
        m = cls.__new__(cls)
        m._init(handle, path)
        return m

    def _init(self, handle, path):
        self._h = handle
        self.path = path
        self._lock = threading.Lock()
        self._roots = {}    # function key -> interpreter made by mil_interp_new (description, states)
        self._idle = {}     # function key -> forks of it not running now
        self._running = 0   # predictions under way

    # ----------------------------------------------------------- lifetime
    def _free_interps(self):
        with self._lock:
            if self._running:
                raise MILInvalidError("the model is being used by %d running prediction(s)" % self._running)
            for forks in self._idle.values():
                for h in forks:
                    C.interp_free(h)
            for h in self._roots.values():
                C.interp_free(h)
            self._roots, self._idle = {}, {}

    def close(self):
        """Frees the C model now (also done when the object is collected).
        Raises MILInvalidError while predictions are running."""
        if getattr(self, "_h", None):
            self._free_interps()
            C.model_free(self._h)
            self._h = None

    def __del__(self):
        if getattr(self, "_h", None) and not getattr(self, "_running", 0):
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
        head = C.ProgramHead.from_address(self._program)
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

    # settable as coremltools' MLModel properties (saved with the model)
    author = property(lambda self: self.metadata.get("author"), lambda self, v: self._set_info("author", v),
                      doc="Metadata author (str).")
    license = property(lambda self: self.metadata.get("license"), lambda self, v: self._set_info("license", v),
                       doc="Metadata license (str).")
    short_description = property(lambda self: self.metadata.get("shortDescription"),
                                 lambda self, v: self._set_info("short_description", v),
                                 doc="Metadata short description.")
    version = property(lambda self: self.metadata.get("versionString"), lambda self, v: self._set_info("version", v),
                       doc="Metadata version string.")
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
        """The root interpreter of a function (created on first use): its
        input and output names and types; not used to run."""
        key = function or ""
        with self._lock:
            h = self._roots.get(key)
            if h is None:
                hp = C.c_void_p()
                with Diag() as d:
                    d.raise_for(C.interp_new(self._program, function.encode() if function else None, C.byref(hp),
                                             d.ref))
                h = self._roots[key] = hp.value
                self._idle[key] = []
            return h

    def _acquire(self, function):
        """An interpreter of the function for one prediction: an idle fork,
        or a new fork of the root (sharing its program copy and caches)."""
        key = function or ""
        while True:
            self._interp(function)
            with self._lock:
                if not self._h:
                    raise MILInvalidError("the model was closed")
                root = self._roots.get(key)
                if root is None:  # optimize() freed the interpreters meanwhile: make the root again
                    continue
                self._running += 1  # from here on the root cannot be freed
                idle = self._idle.get(key)
                if idle:
                    return idle.pop()
                break
        try:
            h = C.c_void_p()
            with Diag() as d:
                d.raise_for(C.interp_fork(root, C.byref(h), d.ref))
            return h.value
        except BaseException:
            with self._lock:
                self._running -= 1
            raise

    def _release(self, function, h):
        C.interp_clear_inputs(h)  # no input outlives its call
        with self._lock:
            self._running -= 1
            self._idle.setdefault(function or "", []).append(h)

    def make_state(self, function="main"):
        """A new State for a stateful model's function (coremltools'
        MLModel.make_state): states start at their declared initial values."""
        ip = self._interp(self._pick(function))
        h = C.c_void_p()
        with Diag() as d:
            d.raise_for(C.interp_state_new(ip, C.byref(h), d.ref))
        return State(self, function, h.value)

    # ----------------------------------------------------------- metadata
    def _set_info(self, field, value):
        if value is not None and not isinstance(value, str):
            raise TypeError("%s must be a str, got %s" % (field, type(value).__name__))
        self._handle()
        with Diag() as d:
            d.raise_for(C.model_set_info(self._h, field.encode(), value.encode() if value is not None else None,
                                         d.ref))

    def _pick(self, function):
        if not isinstance(function, str):
            raise TypeError("function must be a str naming one of the model's functions, got %s" %
                            type(function).__name__)
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
        takes); every input of the function must be given at every call.
        Arrays are converted to the input's declared dtype as coremltools'
        predict does (float64 -> fp32 or fp16, int64 -> int32, ...), except
        that a value the declared dtype cannot hold (an integer out of its
        range, NaN or infinity to an integer dtype, a finite float that
        would become infinite) is refused, naming the input, the element's
        index and value. Shapes must fit the declared shape (symbolic dims
        take any size). For a model converted from ONNX, an input may also
        be given by the ONNX name the conversion renamed ("onnx::Flatten_0"
        for "onnx__Flatten_0"; metadata com.libmil.onnx_names); outputs keep
        the model's names (onnx_names maps them back).
        state: a State from make_state() for stateful models.
        seed: seed of the random ops (random_*), default 0.
        Returns a dict output name -> numpy array that owns its data.
        Safe to call from several threads at once (see Model).
        Raises TypeError for arguments of the wrong type (naming them),
        MILNotFoundError for an unknown input or function, MILInvalidError
        for a missing input or a value that does not fit, MILTypeError /
        MILInvalidError for a dtype or shape that does not fit, MILIOError
        when the model's weight file was truncated since it was loaded."""
        if not isinstance(data, collections.abc.Mapping):
            raise TypeError("predict(data): data must be a dict input name -> array, got %s" %
                            type(data).__name__)
        if not isinstance(function, str):
            raise TypeError("predict(function=...): function must be a str, got %s" % type(function).__name__)
        if state is not None and not isinstance(state, State):
            raise TypeError("predict(state=...): state must be a libmil.State from make_state(), got %s" %
                            type(state).__name__)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or
                                 not 0 <= int(seed) < 2 ** 64):
            raise TypeError("predict(seed=...): seed must be an int in [0, 2^64), got %r" % (seed,))
        self._handle()
        fn = self._pick(function)
        if state is not None and state._model is not self:
            raise MILInvalidError("the state was made by another model")
        renamed = {onnx: mil for mil, onnx in self.onnx_names.get("inputs", {}).items()}
        if renamed:
            names = set(renamed.values())
            data = {(k if k in names else renamed.get(k, k)): v for k, v in data.items()}
        arrays = self._feed(fn, data)
        ip = self._acquire(fn)
        try:
            with Diag() as d:
                # a weight file truncated since loading would kill the process (SIGBUS)
                d.raise_for(C.model_check_weights(self._h, d.ref))
                keep = []
                for name, (t, arr) in arrays.items():
                    shape = (C.c_int64 * max(arr.ndim, 1))(*arr.shape)
                    ten = C.Tensor(t, arr.ndim, shape, arr.ctypes.data, arr.nbytes, arr.size)
                    keep.append(shape)
                    d.raise_for(C.interp_set_input(ip, name.encode(), C.byref(ten), d.ref))
                C.interp_set_seed(ip, int(seed) if seed is not None else 0)
                if state is not None:
                    with state._lock:
                        if not state._h:
                            raise MILInvalidError("the state was freed")
                        d.raise_for(C.interp_run(ip, state._h, d.ref))
                else:
                    d.raise_for(C.interp_run(ip, None, d.ref))
                out = {}
                for i in range(C.interp_n_outputs(ip)):
                    out[_s(C.interp_output_name(ip, i))] = _output_value(ip, i)
                return out
        finally:
            self._release(fn, ip)

    def _feed(self, fn, data):
        """Checks data against the function's inputs and converts every
        array to its input's dtype: dict name -> (mil dtype, array)."""
        ip = self._interp(fn)
        declared = collections.OrderedDict()
        for i in range(C.interp_n_inputs(ip)):
            declared[_s(C.interp_input_name(ip, i))] = C.interp_input_type(ip, i).contents
        for name in data:
            if not isinstance(name, str):
                raise TypeError("predict(data): input names must be str, got %r" % (name,))
            if name not in declared:
                raise MILNotFoundError("predict: model has no input '%s'; inputs: %s" %
                                       (name, ", ".join(declared) or "(none)"))
        out = collections.OrderedDict()
        for name, t in declared.items():
            if t.kind == 4:  # a state: fed from the State
                continue
            if name not in data:
                given = ", ".join("'%s'" % k for k in data) or "none"
                raise MILInvalidError("predict: input '%s' (%s) is missing (given: %s); every call must give "
                                      "every input" % (name, _type_str(t), given))
            value = data[name]
            channels = C.model_image_channels(self._h, fn.encode() if fn else None, name.encode())
            if channels:
                value = self._image_planes(fn, name, value, channels)
            out[name] = (t.dtype, _convert_input(name, t, value))
        return out

    def _image_planes(self, fn, name, value, channels):
        """An image input's value: a PIL.Image or (H, W, C) uint8 pixels
        become the (1, C, H, W) planes the input takes (its colour order),
        checked against the sizes its description allows, as coremltools'
        predict takes a PIL.Image; a float array is fed as it is."""
        if hasattr(value, "convert") and hasattr(value, "size") and not isinstance(value, np.ndarray):
            value = np.asarray(value.convert("RGB" if channels == 3 else "L"))
            if value.ndim == 2:
                value = value[:, :, None]
        arr = np.asarray(value) if isinstance(value, np.ndarray) else None
        if arr is None or arr.dtype != np.uint8 or arr.ndim != 3:
            return value
        arr = np.ascontiguousarray(arr)
        h, w, c = arr.shape
        planes = np.empty((1, channels, h, w), np.float32)
        with Diag() as d:
            d.raise_for(C.model_image_planes(self._h, fn.encode() if fn else None, name.encode(), arr.ctypes.data,
                                             h, w, c, planes.ctypes.data, d.ref))
        return planes

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
        if passes is None and not isinstance(pipeline, str):
            raise TypeError("optimize(pipeline=...): pipeline must be a str (libmil.pipelines()), got %s" %
                            type(pipeline).__name__)
        if passes is not None and not isinstance(passes, str) and (
                not isinstance(passes, (list, tuple)) or not all(isinstance(p, str) for p in passes)):
            raise TypeError("optimize(passes=...): passes must be a list of pass names (str), got %r" % (passes,))
        if options is not None and (not isinstance(options, collections.abc.Mapping) or
                                    not all(isinstance(k, str) and isinstance(v, collections.abc.Mapping)
                                            for k, v in options.items())):
            raise TypeError("optimize(options=...): options must be a dict pass name -> dict option -> value, "
                            "got %r" % (options,))
        self._handle()
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
