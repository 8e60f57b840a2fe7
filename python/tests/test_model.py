"""The Python package on real models: predict against PyTorch's outputs,
optimize against `mil opt`, round trips, descriptions."""
import os
import subprocess

import numpy as np
import pytest

import libmil
from conftest import EXAMPLE, ROOT, corpus_models


def _close(a, b, rtol, atol):
    return np.all(np.abs(a.astype(np.float64) - b.astype(np.float64)) <= atol + rtol * np.abs(b.astype(np.float64)))


@pytest.mark.parametrize("name", corpus_models() or ["(corpus absent)"])
def test_predict_reproduces_pytorch(models_dir, name):
    d = os.path.join(models_dir, name)
    x = np.load(os.path.join(d, "x.npy"))
    y = np.load(os.path.join(d, "y_torch.npy"))
    m = libmil.load(os.path.join(d, "input.mlpackage"))
    (inp,) = list(m.input_description)
    out = m.predict({inp: x})
    (got,) = out.values()
    assert got.shape == y.shape
    assert got.flags.owndata and got.flags.writeable
    # fp32 program: max |a - b| / max |b| <= 1e-3 (as test_corpus_models_run)
    assert np.max(np.abs(got - y)) / np.max(np.abs(y)) <= 1e-3
    # coremltools' optimized fp16 program: every element within 1e-2 + 1e-2 |y|
    e = libmil.load(os.path.join(d, "expected.mlpackage"))
    (ge,) = e.predict({inp: x}).values()
    assert _close(ge, y, 1e-2, 1e-2)


@pytest.mark.parametrize("name", corpus_models() or ["(corpus absent)"])
def test_optimize_equals_mil_opt(models_dir, mil_cli, name, tmp_path):
    src = os.path.join(models_dir, name, "input.mlpackage")
    cli_out = tmp_path / "cli.mlpackage"
    subprocess.run([mil_cli, "opt", src, "-o", str(cli_out), "--quiet"], check=True)
    m = libmil.load(src)
    rep = m.optimize()
    assert rep.ops_before > rep.ops_after
    assert "common::add_fp16_cast" in rep.changed
    assert all(p["seconds"] >= 0 for p in rep.passes)
    py_out = tmp_path / "py.mlpackage"
    m.save(py_out)
    r = libmil.diff(cli_out, py_out, identical=True)
    assert r.identical, r.difference
    # and both read back as the same program coremltools produced
    assert libmil.diff(py_out, os.path.join(models_dir, name, "expected.mlpackage"))


def test_description_and_metadata(models_dir):
    m = libmil.load(os.path.join(models_dir, "squeezenet1_1", "input.mlpackage"))
    assert m.spec_version >= 6
    assert m.functions == ["main"]
    f = m.input_description["x"]
    assert (f.kind, f.dtype, f.shape) == ("multiArray", "fp32", (1, 3, 224, 224))
    assert list(m.output_description)
    md = m.metadata
    assert set(md) >= {"author", "license", "shortDescription", "versionString", "userDefined"}
    assert "main[CoreML" in str(m) and "conv(" in str(m)


def test_text_round_trip(tmp_path):
    m = libmil.load(EXAMPLE)
    text = m.to_mil_text(complete=True)
    m2 = libmil.from_mil_text(text)
    assert libmil.diff(m, m2, identical=True).identical
    assert m2.to_mil_text() == text
    assert m.program == text
    # save to each format and read back the same program
    for ext in (".mil", ".mlpackage", ".mlmodel"):
        p = tmp_path / ("out" + ext)
        m.save(p)
        assert libmil.diff(m, libmil.load(p)).equivalent, ext


def test_example_predict_and_validate():
    m = libmil.load(EXAMPLE)
    assert m.validate() == [] or isinstance(m.validate(), list)
    types = m.input_types()
    feed = {n: np.ones([1 if s is None else s for s in shape], dtype=np.float64) for n, (dt, shape) in types.items()}
    out = m.predict(feed)  # float64 converted to the declared dtype, as coremltools does
    assert out and all(isinstance(v, np.ndarray) for v in out.values())
    out2 = m.predict(feed)
    for k in out:
        assert np.array_equal(out[k], out2[k])


def test_verify(models_dir):
    d = os.path.join(models_dir, "tinygpt4")
    x = np.load(os.path.join(d, "x.npy"))
    a, b = os.path.join(d, "input.mlpackage"), os.path.join(d, "expected.mlpackage")
    r = libmil.verify(a, b, inputs={"x": x} if "x" in libmil.load(a).input_description else None)
    assert r.passed and (r.rtol, r.atol) == (1e-2, 1e-2)
    strict = libmil.verify(a, b, inputs=None, rtol=1e-7, atol=0)
    assert not strict.passed


def test_passes_and_pipelines():
    ps = {p["name"]: p for p in libmil.passes()}
    assert ps["common::const_deduplication"]["implemented"]
    assert any(o["name"] == "const_threshold" for o in ps["common::const_deduplication"]["options"])
    pls = libmil.pipelines()
    assert "default" in pls and "common::add_fp16_cast" in pls["default"]
    assert "cleanup" in pls


def test_optimize_with_passes_and_options():
    m = libmil.load(EXAMPLE)
    rep = m.optimize(passes=["const_elimination", "common::dead_code_elimination"],
                     options={"common::const_elimination": {"skip_const_by_size": 1e6}})
    assert [p["name"] for p in rep.passes] == ["common::const_elimination", "common::dead_code_elimination"]
    m.validate()


STATEFUL = ('main[CoreML8](%x: (2,fp16)(Tensor), %acc: (2,fp16)(State)) {\n  block0() {\n'
            '    %r: (2,fp16)(Tensor) = read_state(input=%acc, name="r")\n'
            '    %s: (2,fp16)(Tensor) = add(x=%r, y=%x, name="s")\n'
            '    %u: (2,fp16)(Tensor) = coreml_update_state(state=%acc, value=%s, name="u")\n'
            '  } -> (%u)\n}\n')


def test_state_persists_across_predictions():
    m = libmil.from_mil_text(STATEFUL)
    assert "x" in m.input_types() and "acc" not in m.input_types()
    st = m.make_state()
    for k in (1, 2, 3):
        (u,) = m.predict({"x": np.array([1.0, 2.5])}, state=st).values()
        assert u.dtype == np.float16 and u.tolist() == [1.0 * k, 2.5 * k]
    # a fresh state starts again from zeros
    (u,) = m.predict({"x": np.array([1.0, 2.5])}, state=m.make_state()).values()
    assert u.tolist() == [1.0, 2.5]
    other = libmil.from_mil_text(STATEFUL)
    with pytest.raises(libmil.MILInvalidError):
        other.predict({"x": np.array([1.0, 2.5])}, state=st)


def _onnx_cases():
    import glob
    from conftest import SHARED
    return sorted(glob.glob(os.path.join(SHARED, "corpus", "onnx", "*", "opset*", "model.onnx")))


@pytest.mark.parametrize("path", _onnx_cases() or ["(corpus absent)"])
def test_onnx_convert_reproduces_pytorch(path, tmp_path):
    if not os.path.exists(path):
        pytest.skip("ONNX corpus not found")
    import glob
    d = os.path.join(os.path.dirname(path), "test_data_set_0")
    m = libmil.convert(path, compute_precision="fp32")
    (name,) = list(m.input_description)
    ins = sorted(glob.glob(os.path.join(d, "input_*.pb")))
    outs = sorted(glob.glob(os.path.join(d, "output_*.pb")))
    assert len(ins) == 1 and outs
    # the .pb tensors to .npy through `mil tensor convert`
    cli = os.environ.get("MIL_CLI") or os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "build", "mil")
    if not os.path.exists(cli):
        pytest.skip("mil CLI not built")
    subprocess.run([cli, "tensor", "convert", ins[0], str(tmp_path / "x.npy")], check=True)
    subprocess.run([cli, "tensor", "convert", outs[0], str(tmp_path / "y.npy")], check=True)
    x, y = np.load(tmp_path / "x.npy"), np.load(tmp_path / "y.npy")
    (got,) = m.predict({name: x}).values()
    assert got.shape == y.shape
    assert np.max(np.abs(got - y) / (1 + np.abs(y))) <= 1e-4
    # load() of an .onnx runs the same import with ct.convert's defaults (fp16)
    assert "fp16" in str(libmil.load(path))


def test_onnx_renamed_inputs_by_either_name():
    """ONNX names that are not identifiers (tests/data/onnx_graphs/names.onnx):
    predict takes the ONNX name or the model's; outputs keep the model's
    names, onnx_names maps them back."""
    data = os.path.join(ROOT, "tests", "data", "onnx_graphs")
    if libmil._capi.onnx_import is None:
        pytest.skip("built without the ONNX importer")
    m = libmil.convert(os.path.join(data, "names.onnx"), compute_precision="fp32")
    a = np.load(os.path.join(data, "names.in0.npy"))
    b = np.load(os.path.join(data, "names.in1.npy"))
    want = np.load(os.path.join(data, "names.out0.npy"))
    label = '{"0": "cat", "1": "dog"}'
    assert m.onnx_names == {"inputs": {"onnx__Flatten_0": "onnx::Flatten_0", "x_1": "x.1"},
                            "outputs": {"__0____cat____1____dog__": label}}
    for feed in ({"onnx::Flatten_0": a, "x.1": b}, {"onnx__Flatten_0": a, "x_1": b}, {"onnx::Flatten_0": a, "x_1": b}):
        out = m.predict(feed)
        assert list(out) == ["__0____cat____1____dog__"]
        np.testing.assert_allclose(out["__0____cat____1____dog__"], want, rtol=0, atol=1e-6)
    with pytest.raises(libmil.MILNotFoundError):
        m.predict({"onnx::Nope": a, "x.1": b})


def test_onnx_convert_input_values():
    """input_values fixes an input to a const: the If of if_lstm.onnx takes
    its then branch at conversion and the model keeps three inputs."""
    if libmil._capi.onnx_import is None:
        pytest.skip("built without the ONNX importer")
    data = os.path.join(ROOT, "tests", "data", "onnx_graphs")
    m = libmil.convert(os.path.join(data, "if_lstm.onnx"), compute_precision="fp32", input_values={"flag": 1})
    feed = {n: np.load(os.path.join(data, "if_lstm_then.in%d.npy" % i)) for i, n in enumerate(["X", "h0", "c0"])}
    assert sorted(m.input_description) == ["X", "c0", "h0"]
    out = m.predict(feed)
    np.testing.assert_allclose(out["yh"], np.load(os.path.join(data, "if_lstm_then.out0.npy")), atol=1e-5)


def test_onnx_convert_sample_data_keeps_overflowing_ops_fp32():
    """fp16 safety: a Pow / ReduceSum chain beyond fp16's range gives inf in
    the default conversion; with sample_data the overflowing ops stay fp32
    and the output is finite and within 1e-3 of the numpy reference."""
    if libmil._capi.onnx_import is None:
        pytest.skip("built without the ONNX importer")
    data = os.path.join(ROOT, "tests", "data", "onnx_graphs")
    path = os.path.join(data, "fp16_chain.onnx")
    x = np.load(os.path.join(data, "fp16_chain.in0.npy"))
    want = np.load(os.path.join(data, "fp16_chain.out0.npy"))
    plain = libmil.convert(path).predict({"x": x})["y"]
    assert not np.isfinite(plain).all()
    m = libmil.convert(path, sample_data={"x": x.astype(np.float64)})
    y = m.predict({"x": x})["y"]
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, want, rtol=1e-3)
    kept = [w for w in m.conversion_warnings if "stays fp32" in w]
    assert len(kept) == 3 and any("'sq' (pow)" in w for w in kept)
    with pytest.raises(libmil.MILInvalidError):
        libmil.convert(path, sample_data={"x": x}, sample_tolerance=2)
    with pytest.raises(libmil.MILInvalidError):
        libmil.convert(path, sample_data={"nope": x})
    with pytest.raises(TypeError):
        libmil.convert(path, sample_data=[x])
