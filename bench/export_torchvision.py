"""Exports the networks of bench/interp_vs_ort.sh to ONNX, with random weights.

    /usr/bin/python3 bench/export_torchvision.py OUTDIR [NAME...]

For each network: OUTDIR/NAME.onnx (opset 13), OUTDIR/NAME.x.npy (the
input, seeded) and OUTDIR/NAME.torch.json (PyTorch's forward: best of 5
in ms, default threads). Networks: torchvision's resnet18, resnet50,
mobilenet_v2, mobilenet_v3_small, efficientnet_b0, mnasnet0_5,
shufflenet_v2_x1_0, regnet_x_400mf, googlenet, vit_b_16 (1x3x224x224), a
4-layer BERT-like encoder (hidden 256, 4 heads, 128 tokens, on embeddings),
a 4-layer GPT-style decoder (the same layers with a causal mask; gpt4) and
a U-Net at 1x3x1024x1024 (unet1024). Needs torch
and torchvision (Debian's python3-torch / torchvision); exits 2 without
them.
"""
import json
import os
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torchvision
except ImportError as e:  # the benchmark says which peer is missing
    print("export_torchvision.py: %s" % e, file=sys.stderr)
    sys.exit(2)


class Layer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.n1 = nn.LayerNorm(d)
        self.f1 = nn.Linear(d, 4 * d)
        self.f2 = nn.Linear(4 * d, d)
        self.n2 = nn.LayerNorm(d)

    def forward(self, x, mask=None):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        def heads(z):
            return z.reshape(b, t, self.h, d // self.h).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        s = q @ k.transpose(-1, -2) / (d // self.h) ** 0.5
        if mask is not None:
            s = s + mask
        a = torch.softmax(s, dim=-1) @ v
        x = self.n1(x + self.o(a.transpose(1, 2).reshape(b, t, d)))
        return self.n2(x + self.f2(torch.nn.functional.gelu(self.f1(x))))


class Bert(nn.Module):
    def __init__(self, d=256, h=4, n=4):
        super().__init__()
        self.layers = nn.Sequential(*[Layer(d, h) for _ in range(n)])

    def forward(self, x):
        return self.layers(x)


class Gpt(nn.Module):
    """Decoder layers: causal self-attention (an additive -inf mask above
    the diagonal, as GPT-2 exports carry it) on embeddings."""
    def __init__(self, d=256, h=4, n=4, t=128):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d, h) for _ in range(n)])
        self.register_buffer("mask", torch.triu(torch.full((t, t), float("-inf")), diagonal=1))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x, self.mask)
        return x


def block(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                         nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())


class UNet(nn.Module):
    """A small U-Net (4 levels, 16..128 channels): the shape of a
    high-resolution segmentation network."""

    def __init__(self, c=(16, 32, 64, 128)):
        super().__init__()
        self.down = nn.ModuleList()
        i = 3
        for o in c:
            self.down.append(block(i, o))
            i = o
        self.up = nn.ModuleList()
        self.upc = nn.ModuleList()
        for o in reversed(c[:-1]):
            self.upc.append(nn.ConvTranspose2d(i, o, 2, stride=2))
            self.up.append(block(2 * o, o))
            i = o
        self.head = nn.Conv2d(i, 1, 1)

    def forward(self, x):
        skips = []
        for k, d in enumerate(self.down):
            x = d(x)
            if k < len(self.down) - 1:
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
        for u, c in zip(self.up, self.upc):
            x = u(torch.cat([c(x), skips.pop()], 1))
        return torch.sigmoid(self.head(x))


def build(name):
    tv = torchvision.models
    if name == "bert4":
        return Bert(), (1, 128, 256)
    if name == "gpt4":
        return Gpt(), (1, 128, 256)
    if name == "googlenet":
        return tv.googlenet(aux_logits=False, init_weights=True), (1, 3, 224, 224)
    if name == "unet1024":
        return UNet(), (1, 3, 1024, 1024)
    m = getattr(tv, name)()
    if name == "vit_b_16":  # torchvision zero-initializes the head: every output would be 0
        nn.init.normal_(m.heads.head.weight, std=0.02)
    return m, (1, 3, 224, 224)


def main():
    out = sys.argv[1]
    names = sys.argv[2:] or ["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
                             "mnasnet0_5", "shufflenet_v2_x1_0", "regnet_x_400mf", "googlenet", "vit_b_16",
                             "bert4", "gpt4", "unet1024"]
    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        m, shape = build(name)
        m.eval()
        x = torch.from_numpy(np.random.RandomState(0).standard_normal(shape).astype(np.float32))
        path = os.path.join(out, name + ".onnx")
        # traced with gradients on: under no_grad torchvision's ViT takes
        # nn.MultiheadAttention's fused fast path, which has no ONNX export
        torch.onnx.export(m, (x,), path, opset_version=13, input_names=["x"], output_names=["y"])
        with torch.no_grad():
            best = None
            for _ in range(5):
                t = time.perf_counter()
                m(x)
                ms = (time.perf_counter() - t) * 1e3
                best = ms if best is None or ms < best else best
        np.save(os.path.join(out, name + ".x.npy"), x.numpy())
        with open(os.path.join(out, name + ".torch.json"), "w") as f:
            json.dump({"best_ms": best, "threads": torch.get_num_threads()}, f)
        print("%s: %.2f ms in PyTorch" % (name, best))


if __name__ == "__main__":
    main()
