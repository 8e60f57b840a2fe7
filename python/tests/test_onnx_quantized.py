"""Quantized ONNX models stay quantized through `mil convert` (issue 29).

The models and their numpy references are tests/data/onnx_quant (written by
its gen.py). Each converts with the default options at its target; its
weight.bin holds no more than the quantized data, scales, zero points and
biases (float tensors counted as fp16) plus 10%; the compression ops are in
the program (`mil print`); and `mil run` on the reference input is within 3%
of the reference output's largest magnitude."""
import os
import re
import subprocess

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "data", "onnx_quant")

# model, target, ops that must be present, ops that must be absent
CASES = [
    ("mm_int8_pc", "iOS16", ["constexpr_affine_dequantize"], ["constexpr_blockwise_shift_scale"]),
    ("mm_int8_pc", "iOS17", ["constexpr_affine_dequantize"], []),
    ("mm_int8_pc", "iOS18", ["constexpr_blockwise_shift_scale"], ["constexpr_affine_dequantize"]),
    ("qdq_conv", "iOS17", ["constexpr_affine_dequantize", "quantize", "dequantize"], []),
    ("qdq_conv", "iOS18", ["constexpr_blockwise_shift_scale", "quantize", "dequantize"], []),
    ("blocked_int8", "iOS18", ["constexpr_blockwise_shift_scale"], []),
    ("blocked_uint4", "iOS18", ["constexpr_blockwise_shift_scale"], []),
    ("matmul_nbits4", "iOS18", ["constexpr_blockwise_shift_scale", "linear"], []),
    ("matmul_nbits8_float_zp", "iOS18", ["constexpr_blockwise_shift_scale", "slice_by_size"], []),
    ("matmul_nbits2", "iOS18", ["constexpr_blockwise_shift_scale"], []),
    ("gather_block_quantized", "iOS18", ["constexpr_blockwise_shift_scale", "gather"], []),
    ("transposed_blocked", "iOS18", ["constexpr_blockwise_shift_scale"], ["transpose"]),
    ("dynamic_matmul_integer", "iOS16", ["constexpr_affine_dequantize", "matmul"], []),
    ("dynamic_matmul_integer", "iOS18", ["constexpr_blockwise_shift_scale", "matmul"], []),
]
# MatMulInteger's int32 sums (here up to 255 * 128 * 128) overflow fp16: converted with fp32 compute precision
EXTRA_ARGS = {"dynamic_matmul_integer": ["--precision", "fp32"]}
# 2-bit codes are stored as uint4 (MIL's blockwise data has no 2-bit dtype): twice their ONNX bytes
SIZE_FACTOR = {"matmul_nbits2": 2.0}

# ONNX TensorProto data types -> bits a stored element
BITS = {1: 16, 10: 16, 2: 8, 3: 8, 6: 16, 21: 4, 22: 4}  # floats and int32 biases end up fp16


def initializer_bytes(path):
    """The bytes the model's initializers take quantized (floats as fp16),
    read with a small protobuf walk so that no onnx package is needed."""
    buf = open(path, "rb").read()

    def varint(b, i):
        x = s = 0
        while True:
            c = b[i]
            i += 1
            x |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return x, i

    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            f, wt = key >> 3, key & 7
            if wt == 0:
                v, i = varint(b, i)
            elif wt == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            elif wt == 5:
                v, i = b[i:i + 4], i + 4
            elif wt == 1:
                v, i = b[i:i + 8], i + 8
            else:
                raise ValueError("wire type %d" % wt)
            yield f, wt, v

    graph = next(v for f, wt, v in fields(buf) if f == 7)
    total = 0
    for f, wt, t in fields(graph):
        if f != 5:  # initializer
            continue
        dims, dt = [], 1
        for tf, twt, tv in fields(t):
            if tf == 1 and twt == 0:
                dims.append(tv)
            elif tf == 1 and twt == 2:  # packed dims
                j = 0
                while j < len(tv):
                    d, j = varint(tv, j)
                    dims.append(d)
            elif tf == 2:
                dt = tv
        total += (int(np.prod(dims, dtype=np.int64)) * BITS.get(dt, 32) + 7) // 8
    return total


def mil(cli, *args):
    r = subprocess.run([cli] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, "mil %s: %s" % (" ".join(args), r.stderr)
    return r.stdout


@pytest.mark.parametrize("name,target,present,absent", CASES, ids=["%s-%s" % (c[0], c[1]) for c in CASES])
def test_quantized_model(mil_cli, tmp_path, name, target, present, absent):
    onnx_path = os.path.join(DATA, name + ".onnx")
    pkg = str(tmp_path / (name + ".mlpackage"))
    mil(mil_cli, "convert", onnx_path, pkg, "--target", target, *EXTRA_ARGS.get(name, []))
    text = mil(mil_cli, "print", pkg)
    ops = set(re.findall(r"= ([a-z_0-9]+)\(", text))
    for op in present:
        assert op in ops, "%s missing from %s at %s: %s" % (op, name, target, sorted(ops))
    for op in absent:
        assert op not in ops, "%s in %s at %s" % (op, name, target)
    wbin = os.path.join(pkg, "Data", "com.apple.CoreML", "weights", "weight.bin")
    size, budget = os.path.getsize(wbin), initializer_bytes(onnx_path)
    assert size <= 1.1 * SIZE_FACTOR.get(name, 1.0) * budget, "weight.bin %d bytes; quantized data, scales, zero points and biases %d" % (size, budget)
    out = tmp_path / "out"
    mil(mil_cli, "run", pkg, "--input", "x=" + os.path.join(DATA, name + ".x.npy"), "--output-dir", str(out))
    y, ref = np.load(str(out / "y.npy")), np.load(os.path.join(DATA, name + ".y.npy"))
    assert y.shape == ref.shape
    err = np.abs(y.astype(np.float64) - ref).max() / np.abs(ref).max()
    assert err <= 0.03, "%s at %s: max error %.4f of the reference's largest value" % (name, target, err)


def test_quantized_info_and_compress(mil_cli, tmp_path):
    """`mil info` reports weight bytes by compression kind; `mil compress`
    leaves a model's existing compression alone."""
    pkg = str(tmp_path / "m.mlpackage")
    mil(mil_cli, "convert", os.path.join(DATA, "blocked_uint4.onnx"), pkg, "--target", "iOS18")
    info = mil(mil_cli, "info", pkg)
    kinds = dict((k, int(b)) for k, b in re.findall(r"^  (\S+)\s+(\d+) bytes\s+\d+ consts$", info, re.M))
    # 128 x 64 uint4 codes (4096 bytes), 4 x 64 fp16 scales, 4 x 64 uint4 offsets
    assert kinds.get("constexpr_blockwise_shift_scale") == 4096 + 512 + 128, info
    assert kinds.get("uncompressed", 0) < 64, info
    # every weight is already compressed: the existing compression is left
    # alone, and a run that compresses nothing says so and writes nothing
    for form in (["--quantize", "int8"], ["--palettize", "4"]):
        out = tmp_path / ("c%s.mlpackage" % form[1])
        r = subprocess.run([mil_cli, "compress", pkg, "-o", str(out), *form], capture_output=True, text=True)
        assert r.returncode == 1, r.stderr
        assert "already compressed" in r.stderr, r.stderr
        assert not out.exists()
    assert mil(mil_cli, "info", pkg) == info


@pytest.mark.parametrize("name", ["blocked_int8", "matmul_nbits4"])
def test_blockwise_needs_ios18(mil_cli, tmp_path, name):
    r = subprocess.run([mil_cli, "convert", os.path.join(DATA, name + ".onnx"), str(tmp_path / "m.mlpackage"),
                        "--target", "iOS17"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "--target iOS18" in r.stderr and "node '" in r.stderr, r.stderr
    assert not (tmp_path / "m.mlpackage").exists()


@pytest.mark.parametrize("name,why", [("refused_nbits3", "bits = 3"), ("refused_gidx", "g_idx reorders")])
def test_matmul_nbits_refused(mil_cli, tmp_path, name, why):
    r = subprocess.run([mil_cli, "convert", os.path.join(DATA, name + ".onnx"), str(tmp_path / "m.mlpackage"),
                        "--target", "iOS18"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "node 'the_matmul' (MatMulNBits, domain com.microsoft" in r.stderr and why in r.stderr, r.stderr
    assert not (tmp_path / "m.mlpackage").exists()


def test_ios15_keeps_arithmetic(mil_cli, tmp_path):
    """Before iOS16 there is no compression op: the weight is decompressed, with a warning."""
    pkg = str(tmp_path / "m.mlpackage")
    r = subprocess.run([mil_cli, "convert", os.path.join(DATA, "mm_int8_pc.onnx"), pkg], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "--target iOS16" in r.stderr
    assert "constexpr_" not in mil(mil_cli, "print", pkg)


@pytest.mark.parametrize("target", ["iOS15", "iOS17"])
def test_quantize_rounding_and_saturation(mil_cli, tmp_path, target):
    """x / 0.5 = [0.5, 1.5, -0.5, -1.5, 2.5, 200, -200, 127.5] rounds half to
    even to [0, 2, -0, -2, 2, 200, -200, 128]; uint8 (zero point 128)
    saturates 328 to 255 and -72 to 0, int8 200 to 127 and -200 to -128."""
    pkg = str(tmp_path / "r.mlpackage")
    mil(mil_cli, "convert", os.path.join(DATA, "qdq_round.onnx"), pkg, "--target", target)
    ops = set(re.findall(r"= ([a-z_0-9]+)\(", mil(mil_cli, "print", pkg)))
    assert ("quantize" in ops) == (target == "iOS17"), ops
    out = tmp_path / "out"
    mil(mil_cli, "run", pkg, "--input", "x=" + os.path.join(DATA, "qdq_round.x.npy"), "--output-dir", str(out))
    yu, yi = np.load(str(out / "yu.npy")), np.load(str(out / "yi.npy"))
    np.testing.assert_array_equal(yu, [0, 1, 0, -1, 1, 63.5, -64, 63.5])
    np.testing.assert_array_equal(yi, [0, 1, 0, -1, 1, 63.5, -64, 63.5])


def test_verify_onnx_against_package(mil_cli, tmp_path):
    pkg = str(tmp_path / "m.mlpackage")
    mil(mil_cli, "convert", os.path.join(DATA, "matmul_nbits4.onnx"), pkg, "--target", "iOS18")
    mil(mil_cli, "verify", os.path.join(DATA, "matmul_nbits4.onnx"), pkg)
