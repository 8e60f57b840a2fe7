"""Every error class: the message is the C diagnostic with file and position."""
import gc
import os

import numpy as np
import pytest

import libmil
from conftest import EXAMPLE


def test_parse_error_names_line_and_column():
    with pytest.raises(libmil.MILParseError) as e:
        libmil.from_mil_text("main[CoreML7](%x: (2, fp32)(Tensor)) {\n  block0() {\n    %y = relu(x=%x\n", filename="bad.mil")
    assert "bad.mil:" in str(e.value) and isinstance(e.value, libmil.MILError)


def test_io_error(tmp_path):
    with pytest.raises(libmil.MILIOError) as e:
        libmil.load(str(tmp_path / "missing.mlpackage"))
    assert "missing.mlpackage" in str(e.value)
    assert isinstance(e.value, OSError)


def test_format_error(tmp_path):
    p = tmp_path / "junk.mlmodel"
    p.write_bytes(b"\xff\xff\xff\xff not a protobuf")
    with pytest.raises(libmil.MILFormatError) as e:
        libmil.load(str(p))
    assert "junk.mlmodel" in str(e.value)


def test_unsupported_error(tmp_path):
    p = tmp_path / "model.xyz"
    p.write_text("x")
    with pytest.raises(libmil.MILUnsupportedError):
        libmil.load(str(p))


def test_type_error():
    text = ("main[CoreML7](%x: (2, 3, fp32)(Tensor)) {\n  block0() {\n"
            "    %y: (2, 3, fp32)(Tensor) = matmul(x=%x, y=%x, transpose_x=False, transpose_y=False, name=\"y\")\n"
            "  } -> (%y)\n}\n")
    with pytest.raises(libmil.MILError) as e:
        libmil.from_mil_text(text).validate()
    assert "matmul" in str(e.value) or "y" in str(e.value)


def test_not_found_errors():
    m = libmil.load(EXAMPLE)
    with pytest.raises(libmil.MILNotFoundError):
        m.optimize(pipeline="no_such_pipeline")
    with pytest.raises(libmil.MILNotFoundError):
        m.optimize(passes=["common::no_such_pass"])
    with pytest.raises(libmil.MILNotFoundError):
        m.predict({"no_such_input": np.zeros(1)})
    with pytest.raises(libmil.MILNotFoundError):
        m.predict({}, function="no_such_function")


def test_bad_shape_is_an_error_not_a_crash():
    m = libmil.load(EXAMPLE)
    name = next(iter(m.input_types()))
    with pytest.raises(libmil.MILError):
        m.predict({name: np.zeros((7, 7, 7, 7, 7), np.float32)})


def test_closed_model():
    m = libmil.load(EXAMPLE)
    m.close()
    with pytest.raises(libmil.MILInvalidError):
        m.spec_version
    del m
    gc.collect()


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def test_no_rss_growth_over_1000_cycles():
    types = libmil.load(EXAMPLE).input_types()
    feed = {n: np.ones([1 if s is None else s for s in shape], np.float32) for n, (dt, shape) in types.items()}

    def cycle():
        m = libmil.load(EXAMPLE)
        m.predict(feed)
        m.close()

    for _ in range(100):  # warm up allocator pools
        cycle()
    gc.collect()
    before = _rss_kb()
    for _ in range(1000):
        cycle()
    gc.collect()
    growth = _rss_kb() - before
    assert growth < 2048, "RSS grew by %d KiB over 1000 load/predict/free cycles" % growth
