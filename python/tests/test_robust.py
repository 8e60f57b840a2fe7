"""The Python API under misuse, threads and hostile files: Model(path)
loads, wrong arguments raise (never crash), a missing input is refused at
every call, eight threads predicting on one model get the single-thread
results, a truncated weight file raises instead of SIGBUS, and values an
input's dtype cannot hold are refused."""
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import libmil
from conftest import EXAMPLE

HIDDEN = 96


def _mlp_text():
    """x (4, HIDDEN) fp32 -> fp16 -> three linear + relu layers with fp16
    weights (stored in weight.bin when saved) -> fp32. Weights are small
    multiples of 1/64 from a fixed formula."""
    lines = ['main[CoreML7](%x: (4, {0}, fp32)(Tensor)) {{'.format(HIDDEN), '  block0() {',
             '    %xh: (4, {0}, fp16)(Tensor) = cast(x=%x, dtype="fp16", name="xh")'.format(HIDDEN)]
    prev = "%xh"
    for layer in range(3):
        w = [[((i * 7 + j * 3 + layer * 5) % 19 - 9) / 64.0 for j in range(HIDDEN)] for i in range(HIDDEN)]
        lines.append('    %w{0}: ({1}, {1}, fp16)*(Tensor) = const(val={2}, name="w{0}")'.format(layer, HIDDEN, w))
        lines.append('    %h{0}: (4, {1}, fp16)(Tensor) = linear(x={2}, weight=%w{0}, name="h{0}")'.format(layer, HIDDEN,
                                                                                                           prev))
        lines.append('    %r{0}: (4, {1}, fp16)(Tensor) = relu(x=%h{0}, name="r{0}")'.format(layer, HIDDEN))
        prev = "%r{0}".format(layer)
    lines.append('    %y: (4, {0}, fp32)(Tensor) = cast(x={1}, dtype="fp32", name="y")'.format(HIDDEN, prev))
    lines += ['  } -> (%y)', '}']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def mlp_package(tmp_path_factory):
    p = tmp_path_factory.mktemp("mlp") / "mlp.mlpackage"
    libmil.from_mil_text(_mlp_text()).save(p)
    return str(p)


def _inputs(k):
    rng = np.random.default_rng(k)
    return rng.uniform(-2, 2, size=(4, HIDDEN)).astype(np.float32)


def _numpy_mlp(x):
    """The network in numpy, rounding to fp16 where the program does (the
    products of fp16 values accumulate exactly enough in float64)."""
    h = x.astype(np.float16)
    for layer in range(3):
        w = np.array([[((i * 7 + j * 3 + layer * 5) % 19 - 9) / 64.0 for j in range(HIDDEN)] for i in range(HIDDEN)])
        h = np.maximum(h.astype(np.float64) @ w.T, 0).astype(np.float16)
    return h.astype(np.float32)


# ------------------------------------------------------------------ Model(path)

def test_model_from_path_loads(mlp_package, tmp_path):
    m = libmil.Model(mlp_package)
    assert m.path == mlp_package and m.functions == ["main"]
    x = _inputs(0)
    y = m.predict({"x": x})["y"]
    # fp16 accumulation inside linear may differ from float64 by an fp16 rounding step
    assert np.allclose(y, _numpy_mlp(x), rtol=2e-2, atol=2e-2)
    assert libmil.Model(EXAMPLE).functions == ["main"]
    import pathlib
    assert libmil.Model(pathlib.Path(EXAMPLE)).path == EXAMPLE


@pytest.mark.parametrize("bad", [None, 123, 1.5, ["x.mlpackage"], object()])
def test_model_from_non_path_raises_type_error(bad):
    with pytest.raises(TypeError, match="path must be a str"):
        libmil.Model(bad)


def test_model_from_missing_path_raises(tmp_path):
    with pytest.raises(libmil.MILError):
        libmil.Model(str(tmp_path / "absent.mlpackage"))
    with pytest.raises(libmil.MILError):
        libmil.Model(str(tmp_path))


# ------------------------------------------------------------------ misuse

def test_predict_misuse_raises(mlp_package):
    m = libmil.load(mlp_package)
    x = _inputs(1)
    with pytest.raises(TypeError, match="data must be a dict"):
        m.predict(None)
    with pytest.raises(TypeError, match="data must be a dict"):
        m.predict([x])
    with pytest.raises(TypeError, match="input 'x' is None"):
        m.predict({"x": None})
    with pytest.raises(TypeError, match="input 'x'.*expected numbers"):
        m.predict({"x": "text"})
    with pytest.raises(TypeError, match="input names must be str"):
        m.predict({1: x})
    with pytest.raises(libmil.MILTypeError, match="input 'x'"):
        m.predict({"x": np.float32(1)})  # a scalar for a (4, 96) input
    with pytest.raises(libmil.MILTypeError, match="input 'x'"):
        m.predict({"x": np.zeros((4, 5), np.float32)})
    with pytest.raises(libmil.MILNotFoundError, match="no input 'z'"):
        m.predict({"x": x, "z": x})
    with pytest.raises(TypeError, match="function must be a str"):
        m.predict({"x": x}, function=1)
    with pytest.raises(libmil.MILNotFoundError):
        m.predict({"x": x}, function="nope")
    with pytest.raises(TypeError, match="state must be a libmil.State"):
        m.predict({"x": x}, state="s")
    with pytest.raises(TypeError, match="seed must be an int"):
        m.predict({"x": x}, seed="1")
    with pytest.raises(TypeError, match="seed must be an int"):
        m.predict({"x": x}, seed=-1)
    # still usable after all that
    assert m.predict({"x": x})["y"].shape == (4, HIDDEN)
    m.close()
    with pytest.raises(libmil.MILInvalidError, match="closed"):
        m.predict({"x": x})


def test_other_misuse_raises(mlp_package):
    m = libmil.load(mlp_package)
    with pytest.raises(TypeError, match="pipeline must be a str"):
        m.optimize(pipeline=None)
    with pytest.raises(TypeError, match="passes must be a list"):
        m.optimize(passes=[1])
    with pytest.raises(TypeError, match="options must be a dict"):
        m.optimize(options=["x"])
    with pytest.raises(TypeError, match="function must be a str"):
        m.make_state(1)
    with pytest.raises(TypeError, match="function must be a str"):
        m.input_types(None)
    with pytest.raises(TypeError):
        m.save(None)
    with pytest.raises(TypeError):
        libmil.diff(m, None)
    assert m.input_types() == {"x": ("fp32", (4, HIDDEN))}


def test_load_misuse_raises():
    with pytest.raises(TypeError):
        libmil.load(None)
    with pytest.raises(TypeError):
        libmil.load(5)


# ------------------------------------------------------------------ missing inputs

def test_missing_input_raises_every_time(mlp_package):
    m = libmil.load(mlp_package)
    y = m.predict({"x": _inputs(2)})["y"]
    assert y.any()
    for _ in range(3):
        with pytest.raises(libmil.MILInvalidError, match="input 'x' .* is missing"):
            m.predict({})
    # and a full call still works, with its own input
    assert np.array_equal(m.predict({"x": _inputs(3)})["y"], libmil.load(mlp_package).predict({"x": _inputs(3)})["y"])


# ------------------------------------------------------------------ threads

@pytest.mark.parametrize("n_threads", [8])
def test_predict_from_threads_matches_single_thread(mlp_package, n_threads):
    want = {}
    for k in range(n_threads):
        want[k] = libmil.load(mlp_package).predict({"x": _inputs(k)})["y"]
    assert not np.array_equal(want[0], want[1])
    m = libmil.load(mlp_package)
    start = threading.Barrier(n_threads)
    errors, mismatches = [], []

    def work(k):
        try:
            start.wait()
            for _ in range(15):
                y = m.predict({"x": _inputs(k)})["y"]
                if not np.array_equal(y, want[k]):
                    mismatches.append(k)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append("thread %d: %r" % (k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not mismatches, "%d predictions differ from the single-thread result (threads %s)" % (
        len(mismatches), sorted(set(mismatches)))


def test_close_while_predicting_is_refused(mlp_package):
    m = libmil.load(mlp_package)
    m.predict({"x": _inputs(0)})
    m._running += 1  # as during a prediction in another thread
    try:
        with pytest.raises(libmil.MILInvalidError, match="running prediction"):
            m.close()
        with pytest.raises(libmil.MILInvalidError, match="running prediction"):
            m.optimize(passes=["common::dead_code_elimination"])
    finally:
        m._running -= 1
    m.close()


# ------------------------------------------------------------------ truncated weights

def test_truncated_weight_file_raises(mlp_package, tmp_path):
    import shutil
    pkg = tmp_path / "t.mlpackage"
    shutil.copytree(mlp_package, pkg)
    weights = [os.path.join(d, f) for d, _, fs in os.walk(pkg) for f in fs if f == "weight.bin"]
    assert len(weights) == 1
    # in a child process: the old behaviour was death by SIGBUS
    code = """
import sys, numpy as np, libmil
m = libmil.load(sys.argv[1])
x = np.ones((4, %d), np.float32)
with open(sys.argv[2], "r+b") as f:
    f.truncate(4096)
try:
    m.predict({"x": x})
except libmil.MILIOError as e:
    print("MILIOError:", e)
    try:  # and at the next call too
        m.predict({"x": x})
    except libmil.MILIOError:
        sys.exit(3)
    print("second call: no error")
    sys.exit(4)
print("no error")
""" % HIDDEN
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(libmil.__file__))))
    r = subprocess.run([sys.executable, "-c", code, str(pkg), weights[0]], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "weight.bin" in r.stdout and "truncated" in r.stdout and "load the model again" in r.stdout


# ------------------------------------------------------------------ narrowing

_INT_TEXT = """main[CoreML7](%x: (2, 2, int32)(Tensor), %f: (2, fp32)(Tensor)) {
  block0() {
    %y: (2, 2, int32)(Tensor) = add(x=%x, y=%x, name="y")
    %g: (2, fp32)(Tensor) = add(x=%f, y=%f, name="g")
  } -> (%y, %g)
}
"""


def test_narrowing_refuses_values_that_do_not_fit():
    m = libmil.from_mil_text(_INT_TEXT)
    f = np.zeros(2, np.float32)
    cases = [
        (np.array([[2 ** 40, 3e9], [-1, 5]], np.int64), "element [0, 0] (flat index 0) is 1099511627776 (int64)"),
        (np.array([[1, 2 ** 63], [0, 5]], np.uint64), "element [0, 1] (flat index 1) is 9223372036854775808 (uint64)"),
        (np.array([[1, 2], [np.nan, 5]]), "element [1, 0] (flat index 2) is nan (float64)"),
        (np.array([[1, 1e300], [0, 5]]), "element [0, 1] (flat index 1) is 1e+300 (float64)"),
        (np.array([[1, 2], [3, -2 ** 31 - 1]], np.int64), "element [1, 1] (flat index 3) is -2147483649 (int64)"),
    ]
    for arr, msg in cases:
        with pytest.raises(libmil.MILInvalidError, match=re.escape("input 'x': " + msg) + ".*int32 cannot hold"):
            m.predict({"x": arr, "f": f})
    with pytest.raises(libmil.MILInvalidError, match=r"input 'f': element \[1\] .* is 1e\+300.*fp32 cannot hold"):
        m.predict({"x": np.zeros((2, 2), np.int32), "f": np.array([0.0, 1e300])})
    # values that fit are converted as before; NaN stays NaN in a float input
    out = m.predict({"x": np.array([[7, -3], [-2 ** 31, 2 ** 30]], np.int64), "f": np.array([np.nan, 1.5])})
    assert out["y"].tolist() == [[14, -6], [0, -2 ** 31]]  # int32 addition wraps (C two's complement)
    assert np.isnan(out["g"][0]) and out["g"][1] == 3.0
    out = m.predict({"x": np.array([[1.9, -1.9], [0, 3]]), "f": f})
    assert out["y"].tolist() == [[2, -2], [0, 6]]  # float -> int takes the integer part, as numpy's astype


# ------------------------------------------------------------------ verify against ONNX

def test_verify_onnx_path_is_the_graph_not_the_fp16_conversion(tmp_path):
    if libmil._capi.onnx_import is None:
        pytest.skip("libmil built without the ONNX importer")
    onnx_path = os.path.join(os.path.dirname(EXAMPLE), "tinycnn", "model.onnx")
    fp16 = libmil.convert(onnx_path)  # ct.convert's default: fp16
    r = libmil.verify(onnx_path, fp16)
    assert r.passed  # within fp16 tolerances
    assert r.outputs["probs"]["max_abs_error"] > 0  # not compared with itself
    r32 = libmil.verify(onnx_path, libmil.convert(onnx_path, compute_precision="fp32"))
    assert r32.passed and r32.rtol == 1e-3
