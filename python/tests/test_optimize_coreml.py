"""libmil.optimize.coreml: coremltools' compression API (configs, weight
compression, activation quantization) on the C library. Expected values come
from coremltools recordings (tests/data/w8a8/record.py) or by hand."""
import collections
import json
import os
import re

import numpy as np
import pytest

import libmil
from libmil.models import MLModel
import libmil.optimize as cto
from conftest import ROOT

DATA = os.path.join(ROOT, "tests", "data", "w8a8")


def _samples():
    return [{"x": np.load(os.path.join(DATA, "samples", k, "x.npy"))} for k in sorted(os.listdir(os.path.join(DATA, "samples")))]


def _histogram(model):
    h = collections.Counter()
    for line in model.to_mil_text(complete=True).splitlines():
        m = re.search(r"= ([a-z_0-9]+)\(", line)
        if m:
            h[m.group(1)] += 1
    return dict(h)


def test_config_defaults_and_dict_forms():
    c = cto.coreml.OpLinearQuantizerConfig()
    assert (c.mode, c.dtype, c.granularity, c.block_size, c.weight_threshold) == (
        "linear_symmetric", "int8", "per_channel", 32, 2048)
    p = cto.coreml.OpPalettizerConfig(nbits=4)
    assert (p.mode, p.granularity, p.group_size, p.cluster_dim) == ("kmeans", "per_tensor", 32, 1)
    t = cto.coreml.OpThresholdPrunerConfig()
    assert (t.threshold, t.minimum_sparsity_percentile) == (1e-12, 0.5)
    m = cto.coreml.OpMagnitudePrunerConfig(target_sparsity=0.5)
    assert m.n_m_ratio is None and m.block_size is None
    cfg = cto.coreml.OptimizationConfig.from_dict({
        "config_type": "OpLinearQuantizerConfig",
        "global_config": {"mode": "linear", "dtype": "int8"},
        "op_type_configs": {"conv": None},
        "op_name_configs": {"fc": {"mode": "linear_symmetric", "weight_threshold": 10}},
    })
    assert cfg.global_config == cto.coreml.OpLinearQuantizerConfig(mode="linear")
    assert cfg.op_type_configs == {"conv": None}
    assert cfg.op_name_configs["fc"].weight_threshold == 10


def test_config_from_yaml(tmp_path):
    y = tmp_path / "c.yaml"
    y.write_text("config_type: OpPalettizerConfig\nglobal_config:\n  nbits: 4\n  mode: uniform\n")
    cfg = cto.coreml.OptimizationConfig.from_yaml(str(y))
    assert cfg.global_config == cto.coreml.OpPalettizerConfig(nbits=4, mode="uniform")


def test_config_errors():
    with pytest.raises(libmil.MILError, match="nbits"):
        cto.coreml.OpPalettizerConfig(nbits=5)
    with pytest.raises(TypeError):
        cto.coreml.OpLinearQuantizerConfig(bits=8)
    with pytest.raises(libmil.MILError):
        cto.coreml.OptimizationConfig(global_config="int8")


def test_weight_functions_return_new_models():
    model = MLModel(os.path.join(DATA, "model.mlpackage"))
    before = _histogram(model)
    cfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig(weight_threshold=100))
    q = cto.coreml.linear_quantize_weights(model, cfg)
    assert _histogram(model) == before  # the input is unchanged
    assert _histogram(q).get("constexpr_affine_dequantize") == 5
    d = cto.coreml.decompress_weights(q)
    assert "constexpr_affine_dequantize" not in _histogram(d)
    pal = cto.coreml.palettize_weights(model, cto.coreml.OptimizationConfig(
        global_config=cto.coreml.OpPalettizerConfig(nbits=2, mode="uniform", weight_threshold=100)))
    assert _histogram(pal).get("constexpr_lut_to_dense") == 5
    pr = cto.coreml.prune_weights(model, cto.coreml.OptimizationConfig(
        global_config=cto.coreml.OpMagnitudePrunerConfig(target_sparsity=0.5, weight_threshold=100)))
    assert _histogram(pr).get("constexpr_sparse_to_dense") == 5


def test_w8a8_matches_coremltools():
    model = MLModel(os.path.join(DATA, "model.mlpackage"))
    acfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric"))
    a8 = cto.coreml.experimental.linear_quantize_activations(model, acfg, _samples())
    wcfg = cto.coreml.OptimizationConfig(
        global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=100))
    w8a8 = cto.coreml.linear_quantize_weights(a8, wcfg)
    with open(os.path.join(DATA, "ct_histogram.json")) as f:
        expected = json.load(f)
    assert _histogram(w8a8) == expected
    # the whole program (names, scales, consts) is coremltools'
    ct = MLModel(os.path.join(DATA, "ct_w8a8.mlpackage"))
    assert w8a8.to_mil_text(complete=False) == ct.to_mil_text(complete=False)
    y = w8a8.predict(_samples()[0])["fc"].astype(np.float64)
    ref = np.load(os.path.join(DATA, "ct_out.npy")).astype(np.float64)
    assert np.abs(y - ref).max() <= 0.02 * np.abs(ref).max()


def test_activation_unnamed_sample_and_errors():
    model = MLModel(os.path.join(DATA, "model.mlpackage"))
    cfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig())
    a8 = cto.coreml.experimental.linear_quantize_activations(model, cfg, [{None: s["x"]} for s in _samples()])
    assert _histogram(a8).get("quantize") == 10
    with pytest.raises(libmil.MILError):
        cto.coreml.experimental.linear_quantize_activations(model, cfg, [{"y": _samples()[0]["x"]}])
    pal = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpPalettizerConfig(nbits=4))
    with pytest.raises(libmil.MILError, match="OpLinearQuantizerConfig"):
        cto.coreml.experimental.linear_quantize_activations(model, pal, _samples())


def test_activation_edge_cases_warn_once():
    model = libmil.load(os.path.join(DATA, "edge.mil"))
    samples = []
    for k in ("0", "1"):
        d = os.path.join(DATA, "edge_samples", k)
        samples.append({n: np.load(os.path.join(d, n + ".npy")) for n in ("x", "n", "m")})
    cfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig())
    with pytest.warns(UserWarning, match=r"3 activations left unquantized: r \(zero range\), n \(int32\), m \(int32\)"):
        q = cto.coreml.linear_quantize_activations(model, cfg, samples)
    h = _histogram(q)
    # x's two identical pairs become one in the default pipeline (remove_redundant_ops)
    assert h.get("quantize") == 1 and h.get("dequantize") == 1
    text = q.to_mil_text(complete=False)
    assert 'add(x=%r, y=%x, name="a")' in text and 'add(x=%n, y=%m, name="k")' in text


def test_get_weights_metadata():
    model = MLModel(os.path.join(DATA, "model.mlpackage"))
    md = cto.coreml.get_weights_metadata(model, weight_threshold=100)
    # the four conv weights and the linear weight (160) hold more than 100 elements
    assert len(md) == 5
    name, meta = next(iter(md.items()))
    assert meta.val.shape == (16, 3, 3, 3) and meta.val.dtype == np.float16
    assert meta.sparsity == float(np.mean(meta.val == 0))
    assert meta.unique_values == len(np.unique(meta.val))
    assert [c.op_type for c in meta.child_ops] == ["conv"]
    assert meta.child_ops[0].params_name_mapping == {"weight": name}
    assert len(cto.coreml.get_weights_metadata(model)) == 2  # 2304-element convs: conv2, conv3


@pytest.mark.parametrize("net", ["resnet18", "regnet_x_400mf", "shufflenet_v2_x1_0"])
def test_w8a8_cnn_matches_coremltools(net, tmp_path, mil_cli):
    """bench/gen_cnn's networks after the default pipeline (fp16, iOS17),
    W8A8 as record_cnn.py had coremltools do it: same op histogram, outputs
    within 2% of coremltools' result."""
    import subprocess
    gen = os.path.join(os.path.dirname(mil_cli), "bench", "gen_cnn")
    if not os.path.exists(gen):
        pytest.skip("bench/gen_cnn not built")
    raw, path = str(tmp_path / "raw.mlpackage"), str(tmp_path / "m.mlpackage")
    subprocess.run([gen, "-o", raw, "--net", net, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([mil_cli, "opt", raw, "-o", path, "--target", "iOS17", "--quiet"], check=True)
    rng = np.random.default_rng(28)
    samples = [{"x": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)} for _ in range(2)]
    model = MLModel(path)
    acfg = cto.coreml.OptimizationConfig(global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric"))
    a8 = cto.coreml.linear_quantize_activations(model, acfg, samples)
    w8a8 = cto.coreml.linear_quantize_weights(a8, cto.coreml.OptimizationConfig(
        global_config=cto.coreml.OpLinearQuantizerConfig(mode="linear_symmetric")))
    with open(os.path.join(DATA, "cnn", net + ".json")) as f:
        assert _histogram(w8a8) == json.load(f)
    with open(os.path.join(DATA, "cnn", net + ".mil.txt")) as f:
        expected_text = f.read()
    # the weight stage's zero_point consts: libmil's pipeline has the
    # constexpr ops share equal all-zero zero points where coremltools'
    # keeps one per weight (same values); references are compared by kind
    zp = re.compile(r"zero_point=%[A-Za-z0-9_]+")
    text = zp.sub("zero_point=%ZP", w8a8.to_mil_text(complete=False))
    expected_text = zp.sub("zero_point=%ZP", expected_text)
    if text != expected_text:
        import difflib
        diff = list(difflib.unified_diff(expected_text.splitlines(), text.splitlines(), "coremltools", "libmil",
                                         lineterm="", n=0))
        pytest.fail("program differs from coremltools':\n" + "\n".join(diff[:40]))
    y = list(w8a8.predict(samples[0]).values())[0].astype(np.float64)
    ref = np.load(os.path.join(DATA, "cnn", net + ".npy")).astype(np.float64)
    assert y.shape == ref.shape
    assert np.abs(y - ref).max() <= 0.02 * np.abs(ref).max()
