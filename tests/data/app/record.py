"""Records what coremltools' ct.convert makes of five small PyTorch networks with the
model-interface options of an app-ready conversion, and the ONNX export of the same networks.

Run (from this folder):
    PYTHONPATH=../../../../shared/oracle:$CT /usr/bin/python3 record.py
with $CT a checkout of apple/coremltools. Writes, per case NAME:
    NAME.onnx                 the network exported by torch.onnx.export (opset 13)
    NAME.ct.description.txt   ct.convert's model description (protobuf text form; conversion
                              date/version metadata removed)
    NAME.ct.mil               the converted program as coremltools prints it
    NAME.ct.mlpackage         the model ct.convert saved
    NAME.input.npy            one input (for an image: (H, W, C) uint8 pixels, RGB order)
    NAME.png, NAME.jpg        (images) the pixels as PNG and JPEG files; NAME.jpg.npy the JPEG as
                              PIL decodes it
    NAME.planes.npy           (images) those pixels as the (1, C, H, W) fp32 planes in the
                              image type's channel order, before scale and bias
    NAME.torch_out.npy        PyTorch's output on that input after the same preprocessing
Tests read these without coremltools, torch or onnx.
"""
import ctenv  # noqa: F401
import os
import re
import numpy as np
import torch
import coremltools as ct

HERE = os.path.dirname(os.path.abspath(__file__))


class SmallCnn(torch.nn.Module):
    def __init__(self, classes, in_ch=3):
        super().__init__()
        self.c1 = torch.nn.Conv2d(in_ch, 8, 3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y))
        y = y.mean(dim=(2, 3))
        return torch.softmax(self.fc(y), dim=-1)


class BatchMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


class TokenNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 16)
        self.l = torch.nn.Linear(16, 8)

    def forward(self, ids):
        return self.l(self.emb(ids)).sum(dim=1)


def clean_description(desc):
    text = str(desc)
    # metadata that depends on the day and the coremltools/torch build
    return re.sub(r'  userDefined \{\n    key: "com.github.apple.coremltools.[a-z_]+"\n    value: "[^"]*"\n  \}\n', "", text)


def record(name, model, example, ct_kwargs, onnx_kwargs, sample, torch_input, planes=None):
    model.eval()
    traced = torch.jit.trace(model, example)
    meta = ct_kwargs.pop("_metadata", None)
    mlm = ct.convert(traced, convert_to="mlprogram", **ct_kwargs)
    if meta:
        for k, v in meta.items():
            setattr(mlm, k, v)
    # the whole model (protobuf + weight.bin), for tests that read it with libmil
    import shutil
    pkg = os.path.join(HERE, name + ".ct.mlpackage")
    shutil.rmtree(pkg, ignore_errors=True)
    mlm.save(pkg)
    with open(os.path.join(HERE, name + ".ct.description.txt"), "w") as f:
        f.write(clean_description(mlm.get_spec().description))
    with open(os.path.join(HERE, name + ".ct.mil"), "w") as f:
        f.write(str(mlm._mil_program))
    torch.onnx.export(model, example, os.path.join(HERE, name + ".onnx"), opset_version=13, **onnx_kwargs)
    np.save(os.path.join(HERE, name + ".input.npy"), sample)
    if planes is not None:
        # the pixels as PNG (lossless) and JPEG (and the JPEG decoded by PIL)
        from PIL import Image
        Image.fromarray(sample).save(os.path.join(HERE, name + ".png"))
        Image.fromarray(sample).save(os.path.join(HERE, name + ".jpg"), quality=90)
        np.save(os.path.join(HERE, name + ".jpg.npy"), np.asarray(Image.open(os.path.join(HERE, name + ".jpg"))))
        # the image as the model's (1, C, H, W) fp32 input before scale and bias
        np.save(os.path.join(HERE, name + ".planes.npy"), planes)
    with torch.no_grad():
        out = model(torch_input).numpy()
    np.save(os.path.join(HERE, name + ".torch_out.npy"), out)


def image_case(name, color, scale, bias, classes, labels, target, size=32, shape_fn=None, meta=None):
    torch.manual_seed(len(name))
    net = SmallCnn(classes)
    rng = np.random.default_rng(len(name))
    pixels = rng.integers(0, 256, size=(size, size, 3), dtype=np.uint8)
    # what Core ML hands the model: planes in the image type's channel order, then scale and bias
    planes = pixels.astype(np.float32).transpose(2, 0, 1)
    if color == ct.colorlayout.BGR:
        planes = planes[::-1].copy()
    b = np.array(bias, dtype=np.float32).reshape(-1, 1, 1)
    torch_input = torch.from_numpy((planes * np.float32(scale) + b)[None])
    shape = shape_fn() if shape_fn else (1, 3, size, size)
    kwargs = dict(
        inputs=[ct.ImageType(name="image", shape=shape, scale=scale, bias=bias, color_layout=color)],
        outputs=[ct.TensorType(name="probs")] if labels is None else None,
        minimum_deployment_target=target,
    )
    if labels is not None:
        kwargs["classifier_config"] = ct.ClassifierConfig(labels)
    if meta:
        kwargs["_metadata"] = meta
    record(name, net, torch.rand(1, 3, size, size), kwargs,
           dict(input_names=["image"], output_names=["probs"]), pixels, torch_input, planes[None])


def main():
    # a picture no model here takes (30 x 20), for the size check
    from PIL import Image
    Image.fromarray(np.full((20, 30, 3), 128, np.uint8)).save(os.path.join(HERE, "size_30x20.png"))
    # 1. RGB image, per-channel bias, a 1000-class classifier with string labels, metadata (iOS16)
    labels = ["class_%d" % i for i in range(1000)]
    with open(os.path.join(HERE, "rgb_classifier.labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")
    image_case("rgb_classifier", ct.colorlayout.RGB, 1 / 255.0, [-0.485, -0.456, -0.406], 1000, labels,
               ct.target.iOS16,
               meta=dict(author="libmil tests", license="BSD-3-Clause",
                         short_description="A small RGB image classifier", version="1.0"))
    # 2. BGR image, scale only (iOS17)
    image_case("bgr_scale", ct.colorlayout.BGR, 1 / 127.5, [0.0, 0.0, 0.0], 10, None, ct.target.iOS17)
    # 4. three enumerated image sizes
    image_case("enumerated_image", ct.colorlayout.RGB, 1 / 255.0, [0.0, 0.0, 0.0], 10, None, ct.target.iOS16,
               shape_fn=lambda: ct.EnumeratedShapes(shapes=[(1, 3, 32, 32), (1, 3, 64, 64), (1, 3, 48, 96)],
                                                     default=(1, 3, 32, 32)))
    # 3. batch RangeDim(1, 8) with fp16 input and output (iOS16)
    torch.manual_seed(3)
    x = np.random.default_rng(3).standard_normal((2, 16)).astype(np.float32)
    record("batch_range_fp16", BatchMlp(), torch.rand(1, 16),
           dict(inputs=[ct.TensorType(name="x", shape=(ct.RangeDim(1, 8), 16), dtype=np.float16)],
                outputs=[ct.TensorType(name="y", dtype=np.float16)],
                minimum_deployment_target=ct.target.iOS16),
           dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}),
           x, torch.from_numpy(x))
    # 5. int32 tokens with a RangeDim sequence length
    torch.manual_seed(5)
    ids = np.random.default_rng(5).integers(0, 100, size=(1, 7)).astype(np.int32)
    record("token_range", TokenNet(), torch.zeros(1, 4, dtype=torch.int64),
           dict(inputs=[ct.TensorType(name="ids", shape=(1, ct.RangeDim(1, 128, default=4)), dtype=np.int32)],
                outputs=[ct.TensorType(name="out")],
                minimum_deployment_target=ct.target.iOS16),
           dict(input_names=["ids"], output_names=["out"], dynamic_axes={"ids": {1: "seq"}}),
           ids, torch.from_numpy(ids.astype(np.int64)))


if __name__ == "__main__":
    main()
