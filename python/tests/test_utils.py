"""libmil.utils against coremltools.models.utils' own results, recorded by
tests/data/utils/record_utils.py (the source models, coremltools' outputs
and expected.json): same programs (libmil.diff), descriptions, weight.bin
sizes, and predictions of every function equal to the source model's."""
import json
import os
import re
import subprocess

import numpy as np
import pytest

import libmil
from libmil.utils import (MultiFunctionDescriptor, save_multifunction, rename_feature,
                          change_input_output_tensor_type, materialize_dynamic_shape_mlmodel, set_metadata,
                          set_feature_description)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "data", "utils")
with open(os.path.join(DATA, "expected.json")) as f:
    EXPECTED = json.load(f)


def src(name):
    return os.path.join(DATA, name + ".mlpackage")


def weight_size(pkg):
    return os.path.getsize(os.path.join(pkg, "Data", "com.apple.CoreML", "weights", "weight.bin"))


def ct_features(case, function, which):
    """(name, dataType, shape) of the features in coremltools' recorded
    description text of function `function` ("" = the single-function
    fields)."""
    text = EXPECTED[case]["description"]
    if function:
        m = re.search(r'functions \{\n  name: "%s"\n(.*?)\n\}' % function, text, re.S)
        text = m.group(1)
    out = []
    for m in re.finditer(r'(?m)^ *%s \{\n *name: "(\w+)"\n(.*?)\n *dataType: (\w+)' % which, text, re.S):
        shape = tuple(int(x) for x in re.findall(r"(?m)^ *shape: (\d+)$", m.group(2)))
        out.append((m.group(1), m.group(3), shape))
    return out


def our_features(model, function, which):
    d = model._function_desc(function)
    n = d.n_inputs if which == "input" else d.n_outputs
    arr = d.inputs if which == "input" else d.outputs
    out = []
    for i in range(n):
        f = arr[i]
        out.append((f.name.decode(), {65568: "FLOAT32", 65552: "FLOAT16"}[f.array_dtype],
                    tuple(f.shape.dims[k] for k in range(f.shape.rank))))
    return out


def x64(rows=1, seed=0):
    return np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)


def test_merge_one_network_two_layers_shares_weights(tmp_path):
    desc = MultiFunctionDescriptor()
    desc.add_function(src("src_base"), "main", "base")
    desc.add_function(src("src_variant"), "main", "adapted")
    desc.default_function_name = "base"
    out = str(tmp_path / "merged.mlpackage")
    save_multifunction(desc, out)
    exp = EXPECTED["ct_merged_shared"]
    # base + the one changed layer: a (32, 64) fp32 weight with its 64-byte blob header
    assert weight_size(out) == exp["weight_bin_size"] == EXPECTED["src_base"]["weight_bin_size"] + 32 * 64 * 4 + 64
    m = libmil.load(out)
    assert m.spec_version == exp["spec_version"] == 9
    assert sorted(m.functions) == exp["functions"]
    assert m._desc().contents.default_function_name.decode() == exp["default_function"]
    for fn in exp["functions"]:
        for which in ("input", "output"):
            assert our_features(m, fn, which) == ct_features("ct_merged_shared", fn, which)
    assert libmil.diff(m, src("ct_merged_shared")).equivalent
    x = x64()
    for fn, source in (("base", "src_base"), ("adapted", "src_variant")):
        want = libmil.load(src(source)).predict({"x": x})["logits"]
        got = m.predict({"x": x}, function=fn)["logits"]
        np.testing.assert_array_equal(got, want)


def test_merge_unrelated_networks_non_first_default(tmp_path):
    desc = MultiFunctionDescriptor()
    desc.add_function(src("src_base"), "main", "classify")
    desc.add_function(src("src_conv"), "main", "segment")
    desc.default_function_name = "segment"
    out = str(tmp_path / "merged.mlpackage")
    save_multifunction(desc, out)
    exp = EXPECTED["ct_merged_unrelated"]
    assert weight_size(out) == exp["weight_bin_size"]
    m = libmil.load(out)
    assert m._desc().contents.default_function_name.decode() == "segment" == exp["default_function"]
    for fn in exp["functions"]:
        for which in ("input", "output"):
            assert our_features(m, fn, which) == ct_features("ct_merged_unrelated", fn, which)
    assert libmil.diff(m, src("ct_merged_unrelated")).equivalent
    img = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(m.predict({"image": img}, function="segment")["probs"],
                                  libmil.load(src("src_conv")).predict({"image": img})["probs"])
    np.testing.assert_array_equal(m.predict({"x": x64()}, function="classify")["logits"],
                                  libmil.load(src("src_base")).predict({"x": x64()})["logits"])


def test_merge_whole_model_descriptor(tmp_path):
    # MultiFunctionDescriptor(model_path) takes every function of a model
    merged = str(tmp_path / "a.mlpackage")
    desc = MultiFunctionDescriptor()
    desc.add_function(src("src_base"), "main", "f1")
    desc.add_function(src("src_variant"), "main", "f2")
    desc.default_function_name = "f2"
    save_multifunction(desc, merged)
    d2 = MultiFunctionDescriptor(merged)
    assert sorted(d2._functions()) == ["f1", "f2"]
    d2.remove_function("f1")
    d2.add_function(src("src_conv"), "main", "conv")
    d2.default_function_name = "conv"
    out = str(tmp_path / "b.mlpackage")
    save_multifunction(d2, out)
    assert weight_size(out) == EXPECTED["src_variant"]["weight_bin_size"] + EXPECTED["src_conv"]["weight_bin_size"] - 64
    assert sorted(libmil.load(out).functions) == ["conv", "f2"]


def test_merge_errors(tmp_path):
    desc = MultiFunctionDescriptor()
    desc.add_function(src("src_base"), "main", "a")
    with pytest.raises(ValueError, match="already exist"):
        desc.add_function(src("src_variant"), "main", "a")
    with pytest.raises(ValueError, match="not found"):
        desc.add_function(src("src_variant"), "nope", "b")
    with pytest.raises(ValueError, match="invalid model_path"):
        desc.add_function(str(tmp_path / "missing.mlpackage"), "main", "b")
    with pytest.raises(ValueError, match="default_function_name must be set"):
        save_multifunction(desc, str(tmp_path / "x.mlpackage"))
    desc.default_function_name = "zzz"
    with pytest.raises(ValueError, match="not found in the program"):
        save_multifunction(desc, str(tmp_path / "x.mlpackage"))
    assert not os.path.exists(str(tmp_path / "x.mlpackage"))


def test_rename_input_and_output(tmp_path):
    m = libmil.load(src("src_base"))
    rename_feature(m, "x", "input_ids")
    rename_feature(m, "logits", "scores")
    rename_feature(m, "not_there", "whatever")  # no-op, as coremltools
    out = str(tmp_path / "r.mlpackage")
    m.save(out)
    r = libmil.load(out)
    assert our_features(r, None, "input") == ct_features("ct_renamed", None, "input")
    assert our_features(r, None, "output") == ct_features("ct_renamed", None, "output")
    assert libmil.diff(r, src("ct_renamed"), identical=True).identical
    np.testing.assert_array_equal(r.predict({"input_ids": x64()})["scores"],
                                  libmil.load(src("src_base")).predict({"x": x64()})["logits"])
    with pytest.raises(libmil.MILInvalidError, match="must be of the format"):
        rename_feature(r, "input_ids", "9bad")
    with pytest.raises(libmil.MILInvalidError, match="already has a var named"):
        rename_feature(r, "input_ids", "relu1")


def test_fp32_to_fp16_io(tmp_path):
    m = libmil.load(src("src_ios15"))
    h = change_input_output_tensor_type(m, "fp32", "fp16", input_names=["x"])
    out = str(tmp_path / "h.mlpackage")
    h.save(out)
    exp = EXPECTED["ct_fp16_io"]
    r = libmil.load(out)
    assert r.spec_version == exp["spec_version"] == 7
    assert our_features(r, None, "input") == ct_features("ct_fp16_io", None, "input")
    assert our_features(r, None, "output") == ct_features("ct_fp16_io", None, "output")
    assert libmil.diff(r, src("ct_fp16_io")).equivalent
    # the source model is unchanged
    assert our_features(m, None, "output")[0][:2] == ("logits", "FLOAT32")
    x = x64()
    got = r.predict({"x": x.astype(np.float16)})["logits_to_fp16"]
    assert got.dtype == np.float16
    want = m.predict({"x": x.astype(np.float16).astype(np.float32)})["logits"]
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=2e-3, atol=2e-2)
    # numpy dtypes are accepted too; default: outputs only
    o = change_input_output_tensor_type(m, np.float32, np.float16)
    assert our_features(o, None, "input")[0][1] == "FLOAT32"
    assert our_features(o, None, "output")[0][:2] == ("logits_to_fp16", "FLOAT16")
    with pytest.raises(ValueError, match="not supported"):
        change_input_output_tensor_type(m, "int32", "fp16")
    with pytest.raises(libmil.MILInvalidError, match="not defined in the model"):
        change_input_output_tensor_type(m, "fp32", "fp16", function_names=["nope"])


def test_metadata_and_feature_descriptions(tmp_path):
    m = libmil.load(src("src_base"))
    set_metadata(m, "author", "me")
    set_metadata(m, "com.example.key", "v")
    set_metadata(m, "com.github.apple.coremltools.source", None)
    set_feature_description(m, "x", "the features")
    out = str(tmp_path / "m.mlpackage")
    m.save(out)
    r = libmil.load(out)
    assert r.author == "me"
    assert r.user_defined_metadata["com.example.key"] == "v"
    assert "com.github.apple.coremltools.source" not in r.user_defined_metadata
    assert r.input_description["x"].short_description == "the features"
    with pytest.raises(libmil.MILError, match="no input, output or state named"):
        set_feature_description(r, "nope", "x")


def test_materialize_batch_range(tmp_path):
    m = libmil.load(src("src_dynamic"))
    out = str(tmp_path / "mat.mlpackage")
    materialize_dynamic_shape_mlmodel(m, {"batch_1": {"x": (1, 64)}, "batch_4": {"x": (4, 64)}}, out)
    exp = EXPECTED["ct_materialized"]
    assert weight_size(out) == exp["weight_bin_size"]
    r = libmil.load(out)
    assert r.spec_version == exp["spec_version"]
    assert sorted(r.functions) == exp["functions"]
    for fn in ("batch_1", "batch_4"):
        for which in ("input", "output"):
            assert our_features(r, fn, which) == ct_features("ct_materialized", fn, which)
    assert libmil.diff(r, src("ct_materialized")).equivalent
    x = x64(4)
    full = r.predict({"x": x}, function="batch_4")["logits"]
    assert full.shape == (4, 32)
    one = r.predict({"x": x[:1]}, function="batch_1")["logits"]
    np.testing.assert_allclose(one, full[:1], rtol=1e-3, atol=1e-3)
    # the source model is unchanged
    assert libmil.load(src("src_dynamic")).functions == ["main"] and m.functions == ["main"]


def test_cli_merge_run_per_function(tmp_path, mil_cli):
    out = str(tmp_path / "m.mlpackage")
    subprocess.run([mil_cli, "merge", src("src_base") + ":main:base", src("src_variant") + ":main:adapted",
                    "-o", out, "--default", "adapted"], check=True, capture_output=True)
    assert weight_size(out) == EXPECTED["ct_merged_shared"]["weight_bin_size"]
    np.save(str(tmp_path / "x.npy"), x64())
    for fn, source in (("base", "src_base"), ("adapted", "src_variant")):
        od = tmp_path / fn
        subprocess.run([mil_cli, "run", out, "--function", fn, "--input", "x=%s" % (tmp_path / "x.npy"),
                        "--output-dir", str(od)], check=True, capture_output=True)
        sd = tmp_path / (fn + "_src")
        subprocess.run([mil_cli, "run", src(source), "--input", "x=%s" % (tmp_path / "x.npy"),
                        "--output-dir", str(sd)], check=True, capture_output=True)
        np.testing.assert_array_equal(np.load(str(od / "logits.npy")), np.load(str(sd / "logits.npy")))
    r = subprocess.run([mil_cli, "merge", src("src_base") + ":main:a", src("src_variant") + ":main:a", "-o",
                        str(tmp_path / "bad.mlpackage")], capture_output=True, text=True)
    assert r.returncode == 1 and "already exist" in r.stderr
    assert not os.path.exists(str(tmp_path / "bad.mlpackage"))


def test_cli_edit_and_materialize(tmp_path, mil_cli):
    out = str(tmp_path / "e.mlpackage")
    subprocess.run([mil_cli, "edit", src("src_base"), "-o", out, "--rename", "x=input_ids", "--rename",
                    "logits=scores"], check=True, capture_output=True)
    assert libmil.diff(out, src("ct_renamed"), identical=True).identical
    out = str(tmp_path / "h.mlpackage")
    subprocess.run([mil_cli, "edit", src("src_ios15"), "-o", out, "--io-type", "fp16", "--input", "x"],
                   check=True, capture_output=True)
    assert libmil.diff(out, src("ct_fp16_io")).equivalent
    out = str(tmp_path / "mat.mlpackage")
    subprocess.run([mil_cli, "materialize", src("src_dynamic"), "-o", out, "--function", "batch_1:x=1,64",
                    "--function", "batch_4:x=4,64"], check=True, capture_output=True)
    assert libmil.diff(out, src("ct_materialized")).equivalent
    assert weight_size(out) == EXPECTED["ct_materialized"]["weight_bin_size"]


def test_bisect_transformer(tmp_path):
    from libmil.utils import bisect_model
    res = bisect_model(src("src_transformer"), str(tmp_path))
    p1 = str(tmp_path / "src_transformer_chunk1.mlpackage")
    p2 = str(tmp_path / "src_transformer_chunk2.mlpackage")
    for p, case in ((p1, "ct_split/chunk1.mlpackage"), (p2, "ct_split/chunk2.mlpackage")):
        exp = EXPECTED[case]
        assert weight_size(p) == exp["weight_bin_size"]
        m = libmil.load(p)
        assert m.spec_version == exp["spec_version"]
        for which in ("input", "output"):
            assert our_features(m, None, which) == ct_features(case, None, which)
        assert libmil.diff(m, os.path.join(DATA, case)).equivalent
    # chunk 1 then chunk 2 reproduce the model, exactly on the interpreter
    assert res == {"y": float("inf")}
    x = np.random.default_rng(3).standard_normal((1, 8, 32)).astype(np.float32)
    full = libmil.load(src("src_transformer")).predict({"x": x})["y"]
    o1 = libmil.load(p1).predict({"x": x})
    o2 = libmil.load(p2).predict({k: o1[k] for k in ("x_to_fp16", "o_cast_fp16")})["y"]
    np.testing.assert_array_equal(o2, full)
    # a Model object: chunk1/chunk2 names
    bisect_model(libmil.load(src("src_transformer")), str(tmp_path / "m"), check_output_correctness=False)
    assert sorted(os.listdir(str(tmp_path / "m"))) == ["chunk1.mlpackage", "chunk2.mlpackage"]
    with pytest.raises(libmil.MILInvalidError, match="single 'main' function"):
        bisect_model(src("ct_merged_shared"), str(tmp_path / "bad"))


def test_cli_split(tmp_path, mil_cli):
    r = subprocess.run([mil_cli, "split", src("src_transformer"), "-o", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "incision op: o_cast_fp16 (linear)" in r.stdout and "identical" in r.stdout
    assert libmil.diff(str(tmp_path / "src_transformer_chunk2.mlpackage"),
                       os.path.join(DATA, "ct_split", "chunk2.mlpackage")).equivalent


def test_bisect_to_pipeline_and_run(tmp_path, mil_cli):
    from libmil.utils import bisect_model, make_pipeline, PipelineModel
    res = bisect_model(src("src_transformer"), str(tmp_path), merge_chunks_to_pipeline=True)
    assert res == {"y": float("inf")}
    pp = str(tmp_path / "src_transformer_chunked_pipeline.mlpackage")
    assert os.listdir(str(tmp_path)) == ["src_transformer_chunked_pipeline.mlpackage"]
    exp = EXPECTED["ct_split_pipeline/src_transformer_chunked_pipeline.mlpackage"]
    wdir = os.path.join(pp, "Data", "com.apple.CoreML", "weights")
    assert {w: os.path.getsize(os.path.join(wdir, w)) for w in sorted(os.listdir(wdir))} == exp["weight_files"]
    pm = PipelineModel(pp)
    assert len(pm.stages) == exp["stages"] == 2
    for k, st in enumerate(pm.stages):
        case = "ct_split/chunk%d.mlpackage" % (k + 1)
        assert libmil.diff(st, os.path.join(DATA, case)).equivalent
        for which in ("input", "output"):
            assert our_features(st, None, which) == ct_features(case, None, which)
    x = np.random.default_rng(5).standard_normal((1, 8, 32)).astype(np.float32)
    full = libmil.load(src("src_transformer")).predict({"x": x})["y"]
    np.testing.assert_array_equal(pm.predict({"x": x})["y"], full)
    # mil run on the pipeline reproduces the model
    np.save(str(tmp_path / "x.npy"), x)
    subprocess.run([mil_cli, "run", pp, "--input", "x=%s" % (tmp_path / "x.npy"), "--output-dir",
                    str(tmp_path / "o")], check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(str(tmp_path / "o" / "y.npy")), full)
    # make_pipeline of Models, saved and reloaded
    c1 = str(tmp_path / "c")
    bisect_model(src("src_transformer"), c1, check_output_correctness=False)
    p2 = make_pipeline(libmil.load(os.path.join(c1, "src_transformer_chunk1.mlpackage")),
                       os.path.join(c1, "src_transformer_chunk2.mlpackage"))
    p2.save(str(tmp_path / "p2.mlpackage"))
    np.testing.assert_array_equal(PipelineModel(str(tmp_path / "p2.mlpackage")).predict({"x": x})["y"], full)
    with pytest.raises(ValueError):
        make_pipeline(src("src_base"))


def test_randomize_weights(tmp_path):
    from libmil.utils import randomize_weights
    m = libmil.load(src("src_base"))
    r = randomize_weights(m, seed=1)
    out = str(tmp_path / "r.mlpackage")
    r.save(out)
    # same program but for the weight values; same weight file layout
    assert weight_size(out) == EXPECTED["src_base"]["weight_bin_size"]
    d = libmil.diff(out, src("src_base"))
    assert not d.equivalent and "const" in d.difference
    y = libmil.load(out).predict({"x": x64()})["logits"]
    assert y.shape == (1, 32) and not np.array_equal(y, m.predict({"x": x64()})["logits"])
    # weights in [0, 1): with x >= 0 every activation is >= 0
    y = libmil.load(out).predict({"x": np.abs(x64())})["logits"]
    assert (y >= 0).all()
    again = randomize_weights(m, seed=1)
    np.testing.assert_array_equal(again.predict({"x": x64()})["logits"], libmil.load(out).predict({"x": x64()})["logits"])
