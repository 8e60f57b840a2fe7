"""libmil.convert with coremltools' model-interface types (ImageType, TensorType,
RangeDim, EnumeratedShapes, ClassifierConfig) on the networks of
tests/data/app, whose coremltools conversions record.py saved: the same
description, and predictions from a picture as coremltools' predict takes it."""
import os

import numpy as np
import pytest

import libmil as ct

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "app")


def features(m, ins=True):
    d = m.input_description if ins else m.output_description
    return {k: (f.kind, f.dtype, tuple(f.shape)) for k, f in d.items()}


def test_image_classifier_like_coremltools(tmp_path):
    m = ct.convert(os.path.join(DATA, "rgb_classifier.onnx"), minimum_deployment_target=ct.target.iOS16,
                   inputs=[ct.ImageType(name="image", scale=1 / 255.0, bias=[-0.485, -0.456, -0.406])],
                   classifier_config=ct.ClassifierConfig(os.path.join(DATA, "rgb_classifier.labels.txt")))
    m.author, m.license = "libmil tests", "BSD-3-Clause"
    m.short_description, m.version = "A small RGB image classifier", "1.0"
    out = str(tmp_path / "c.mlpackage")
    m.save(out)
    ours, ref = ct.models.MLModel(out), ct.models.MLModel(os.path.join(DATA, "rgb_classifier.ct.mlpackage"))
    assert features(ours) == features(ref)
    assert features(ours, False) == features(ref, False)
    for k in ("author", "license", "short_description", "version"):
        assert getattr(ours, k) == getattr(ref, k), k
    # a picture (PIL.Image or (H, W, 3) uint8), as coremltools' predict takes it
    pixels = np.load(os.path.join(DATA, "rgb_classifier.input.npy"))
    want = ref.predict({"image": np.load(os.path.join(DATA, "rgb_classifier.planes.npy"))})
    got = ours.predict({"image": pixels})
    assert isinstance(got["classLabel"], str) and got["classLabel"] == want["classLabel"]
    assert set(got["classLabel_probs"]) == {"class_%d" % i for i in range(1000)}
    assert got["classLabel_probs"] == want["classLabel_probs"]
    # the ONNX network's own output (PyTorch's) on the same preprocessed pixels
    torch_out = np.load(os.path.join(DATA, "rgb_classifier.torch_out.npy"))[0]
    probs = np.array([got["classLabel_probs"]["class_%d" % i] for i in range(1000)])
    np.testing.assert_allclose(probs, torch_out, atol=2e-5)
    assert got["classLabel"] == "class_%d" % int(np.argmax(torch_out)) or \
        torch_out.max() - torch_out[int(got["classLabel"][6:])] < 2e-5
    Image = pytest.importorskip("PIL.Image")
    assert ours.predict({"image": Image.open(os.path.join(DATA, "rgb_classifier.png"))})["classLabel"] == \
        got["classLabel"]
    # a picture of a size the model does not take
    with pytest.raises(ct.MILError, match="an image of 30x20 .* the model takes 32x32 only"):
        ours.predict({"image": np.zeros((20, 30, 3), np.uint8)})


def test_flexible_shapes_and_fp16_io():
    m = ct.convert(os.path.join(DATA, "batch_range_fp16.onnx"), minimum_deployment_target=ct.target.iOS16,
                   inputs=[ct.TensorType(name="x", shape=(ct.RangeDim(1, 8), 16), dtype=np.float16)],
                   outputs=[ct.TensorType(name="y", dtype=np.float16)])
    ref = ct.models.MLModel(os.path.join(DATA, "batch_range_fp16.ct.mlpackage"))
    assert features(m) == features(ref)
    x = np.load(os.path.join(DATA, "batch_range_fp16.input.npy"))
    y = m.predict({"x": x})["y"]
    assert y.dtype == np.float16 and y.shape == (2, 4)
    np.testing.assert_allclose(y.astype(np.float32), np.load(os.path.join(DATA, "batch_range_fp16.torch_out.npy")),
                               atol=1e-2)
    e = ct.convert(os.path.join(DATA, "enumerated_image.onnx"), minimum_deployment_target="iOS16",
                   inputs=[ct.ImageType(name="image", scale=1 / 255.0,
                                        shape=ct.EnumeratedShapes([(1, 3, 32, 32), (1, 3, 64, 64), (1, 3, 48, 96)]))],
                   outputs=[ct.TensorType(name="probs")])
    assert features(e) == features(ct.models.MLModel(os.path.join(DATA, "enumerated_image.ct.mlpackage")))
    assert e.predict({"image": np.zeros((48, 96, 3), np.uint8)})["probs"].shape == (1, 10)


def test_interface_errors():
    with pytest.raises(ct.MILError, match="input type 'nosuch'"):
        ct.convert(os.path.join(DATA, "bgr_scale.onnx"), inputs=[ct.ImageType(name="nosuch")])
    with pytest.raises(ValueError, match="bias"):
        ct.ImageType(name="image", bias=[0.1, 0.2])
    with pytest.raises(TypeError):
        ct.convert(os.path.join(DATA, "bgr_scale.onnx"), inputs=["image"])
    with pytest.raises(TypeError, match="unexpected keyword"):
        ct.convert(os.path.join(DATA, "bgr_scale.onnx"), convert_to="neuralnetwork")
