"""Records coremltools' LUT and indices of uniform palettization (nbits 4,
per tensor) of fp16 weights, for tests/unit/test_palettize_uniform.c.

    PYTHONPATH=/work/shared/oracle:/work/coremltools /usr/bin/python3 record.py   (writes uniform_fp16.txt)

Each case: a line "case NAME ROWS COLS", a line "weight" with the fp16 bits
(hex) of the weight, "lut" with the 16 entries' fp16 bits, "indices".
The weights come from a fixed linear congruential generator (no numpy RNG,
so the test can be read without it)."""
import ctenv  # noqa: F401  (first: coremltools' native helpers)
import os

import numpy as np
from coremltools.optimize.coreml._quantization_passes import palettize_weights


def lcg_weights(seed, n, lo, hi):
    r = seed
    out = []
    for _ in range(n):
        r = (r * 1103515245 + 12345) % (1 << 32)
        out.append(lo + (hi - lo) * ((r >> 8) & 0xFFFF) / 65535.0)
    return np.array(out, dtype=np.float16)


cases = [
    ("unit", 16, 32, lcg_weights(12345, 512, -1.0, 1.0)),
    ("skewed", 8, 16, lcg_weights(777, 128, -0.013, 3.7)),
    ("small", 4, 8, lcg_weights(99, 32, 1000.0, 1003.0)),
]
lines = []
for name, rows, cols, w in cases:
    w = w.reshape(rows, cols)
    lut, idx = palettize_weights._get_lut_and_indices(w, "UNIFORM", 4, None)
    assert lut.dtype == np.float16 and lut.shape == (16,)
    lines.append("case %s %d %d" % (name, rows, cols))
    lines.append("weight " + " ".join("%04x" % v for v in w.flatten().view(np.uint16)))
    lines.append("lut " + " ".join("%04x" % v for v in lut.view(np.uint16)))
    lines.append("indices " + " ".join(str(int(v)) for v in idx.flatten()))
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "uniform_fp16.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
