"""A corpus network (../shared/corpus/onnx) quantized per-channel int8 in
the QDQ format by tests/data/onnx_quant/quantize_qdq.py converts to about
half its fp16 size and keeps its top-1 class on the corpus input. Skips
when the corpus or the onnx package is absent."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("MIL_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
CORPUS = os.path.join(SHARED, "corpus", "onnx")
sys.path.insert(0, os.path.join(ROOT, "tests", "data", "onnx_quant"))


def mil(cli, *args):
    r = subprocess.run([cli] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, "mil %s: %s" % (" ".join(args), r.stderr)
    return r.stdout


def weight_bytes(pkg):
    return os.path.getsize(os.path.join(pkg, "Data", "com.apple.CoreML", "weights", "weight.bin"))


@pytest.mark.parametrize("net", ["squeezenet1_1", "mobilenet_v2"])
def test_qdq_corpus_network(mil_cli, tmp_path, net):
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    import quantize_qdq

    src = os.path.join(CORPUS, net, "opset13")
    if not os.path.isfile(os.path.join(src, "model.onnx")):
        pytest.skip("corpus not found (%s)" % src)
    model, n = quantize_qdq.quantize(onnx.load(os.path.join(src, "model.onnx")))
    assert n > 10
    q = str(tmp_path / "q.onnx")
    onnx.save(model, q)
    fp16, qpkg = str(tmp_path / "fp16.mlpackage"), str(tmp_path / "q.mlpackage")
    mil(mil_cli, "convert", os.path.join(src, "model.onnx"), fp16, "--target", "iOS16")
    mil(mil_cli, "convert", q, qpkg, "--target", "iOS16")
    ratio = weight_bytes(qpkg) / weight_bytes(fp16)
    assert ratio < 0.55, "quantized weight.bin is %.2f of the fp16 one" % ratio
    assert "constexpr_affine_dequantize" in mil(mil_cli, "print", qpkg)
    out = tmp_path / "out"
    mil(mil_cli, "run", qpkg, "--input", "x=" + os.path.join(src, "test_data_set_0", "input_0.pb"), "--output-dir",
        str(out))
    t = onnx.TensorProto()
    with open(os.path.join(src, "test_data_set_0", "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    ref = numpy_helper.to_array(t)
    y = np.load(str(out / "y.npy"))
    assert y.shape == ref.shape
    assert int(y.argmax()) == int(ref.argmax()), "top-1 %d, reference %d" % (y.argmax(), ref.argmax())
