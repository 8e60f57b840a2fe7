"""Writes the quantized ONNX models of tests/data/onnx_quant and their
numpy references (inputs <model>.x.npy, expected outputs <model>.y.npy).

    /usr/bin/python3 tests/data/onnx_quant/gen.py

Needs numpy and the onnx package (1.12 is enough: opset 21's blocked
DequantizeLinear, INT4/UINT4 initializers and com.microsoft MatMulNBits are
written as plain protos, without onnx.checker). Every reference is computed
here in numpy from the dequantized weights, following ONNX's reference:
DequantizeLinear y = (x - zero_point) * scale; QuantizeLinear
y = saturate(round_half_even(x / scale) + zero_point); MatMulNBits B packed
low nibble first as [N, k_blocks, blob_size], default zero point 2^(bits-1).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(29)
INT4, UINT4 = 22, 21  # TensorProto.INT4 / UINT4 (onnx >= 1.16)


def save(name, nodes, inits, inputs, outputs, opsets, x, y):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets], producer_name="gen.py")
    m.ir_version = 8
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
    np.save(os.path.join(HERE, name + ".x.npy"), x.astype(np.float32))
    np.save(os.path.join(HERE, name + ".y.npy"), y.astype(np.float32))


def packed4(name, q, data_type):
    """An INT4/UINT4 initializer: two values a byte, the first in the low nibble."""
    flat = (q.reshape(-1).astype(np.int64) & 15).astype(np.uint8)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    raw = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, data_type, raw.tobytes()
    t.dims.extend(q.shape)
    return t


def quantize(x, scale, zp, lo, hi):
    return np.clip(np.round(x / scale) + zp, lo, hi)  # np.round: half to even


def fake_quant_u8(x, scale, zp):
    return ((quantize(x.astype(np.float32), np.float32(scale), zp, 0, 255) - zp) * np.float32(scale)).astype(np.float32)


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, m, oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    return (y + b.reshape(1, -1, 1, 1)).astype(np.float32)


def f32(name, a):
    return numpy_helper.from_array(np.asarray(a, np.float32), name)


def per_channel_int8(w, axis):
    """Symmetric int8 per channel along axis: q, scale, zero point 0."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    scale = (np.abs(w).max(axis=red) / 127).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def mm_int8_pc():
    """Weight-only per-channel int8 MatMul with non-zero zero points."""
    k, n = 128, 64
    q = rng.integers(-128, 128, (k, n)).astype(np.int8)
    zp = rng.integers(-4, 5, n).astype(np.int8)
    scale = (rng.uniform(0.5, 1.5, n) / 128).astype(np.float32)
    w = (q.astype(np.float32) - zp) * scale
    x = rng.standard_normal((2, k)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], axis=1),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    inits = [numpy_helper.from_array(q, "w_q"), f32("w_scale", scale), numpy_helper.from_array(zp, "w_zp")]
    save("mm_int8_pc", nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])], [("", 13)], x, x @ w)


def qdq_conv():
    """ONNX Runtime's static QDQ format: uint8 activations (scale, zero
    point), int8 symmetric per-channel weights, int32 biases with scale
    x_scale * w_scale."""
    x = rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32)
    inits, nodes = [], []
    act = {}

    def act_q(name, lo, hi):
        s = np.float32((hi - lo) / 255)
        z = np.uint8(np.clip(np.round(-lo / s), 0, 255))
        inits.extend([f32(name + "_scale", s), numpy_helper.from_array(np.array(z, np.uint8), name + "_zp")])
        nodes.append(helper.make_node("QuantizeLinear", [name, name + "_scale", name + "_zp"], [name + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name + "_dq"]))
        act[name] = (s, int(z))
        return name + "_dq"

    def weight(name, w, axis, x_scale):
        q, s = per_channel_int8(w, axis)
        inits.extend([numpy_helper.from_array(q, name + "_q"), f32(name + "_scale", s),
                      numpy_helper.from_array(np.zeros(s.shape, np.int8), name + "_zp")])
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name], axis=axis))
        shape = [1] * w.ndim
        shape[axis] = -1
        return (q.astype(np.float32) * s.reshape(shape)).astype(np.float32), s

    def bias(name, b, scale):
        q = np.round(b / scale).astype(np.int32)
        inits.extend([numpy_helper.from_array(q, name + "_q"), f32(name + "_scale", scale),
                      numpy_helper.from_array(np.zeros(scale.shape, np.int32), name + "_zp")])
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", name + "_scale", name + "_zp"], [name], axis=0))
        return (q.astype(np.float32) * scale).astype(np.float32)

    # the float model, run once to choose the activation ranges
    w1 = rng.standard_normal((32, 3, 3, 3)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(32).astype(np.float32) * 0.1
    w2 = rng.standard_normal((64, 32, 3, 3)).astype(np.float32) * 0.08
    b2 = rng.standard_normal(64).astype(np.float32) * 0.1
    w3 = rng.standard_normal((64, 10)).astype(np.float32) * 0.3
    h1 = np.maximum(conv2d(x, w1, b1, 1), 0)
    h2 = np.maximum(conv2d(h1, w2, b2, 1), 0)
    p = h2.mean(axis=(2, 3))

    # the quantized graph and its numpy simulation
    xin = act_q("x", -1.0, 1.0)
    sx, zx = act["x"]
    w1d, s1 = weight("w1", w1, 0, sx)
    b1d = bias("b1", b1, (sx * s1).astype(np.float32))
    nodes.append(helper.make_node("Conv", [xin, "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c1"], ["r1"]))
    r1 = act_q("r1", 0.0, float(h1.max()))
    sr1, zr1 = act["r1"]
    w2d, s2 = weight("w2", w2, 0, sr1)
    b2d = bias("b2", b2, (sr1 * s2).astype(np.float32))
    nodes.append(helper.make_node("Conv", [r1, "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c2"], ["r2"]))
    r2 = act_q("r2", 0.0, float(h2.max()))
    nodes.append(helper.make_node("GlobalAveragePool", [r2], ["gp"]))
    nodes.append(helper.make_node("Flatten", ["gp"], ["fl"]))
    fl = act_q("fl", 0.0, float(p.max()))
    w3d, _ = weight("w3", w3, 1, act["fl"][0])
    nodes.append(helper.make_node("MatMul", [fl, "w3"], ["y"]))

    a = fake_quant_u8(x, sx, zx)
    a = fake_quant_u8(np.maximum(conv2d(a, w1d, b1d, 1), 0), *act["r1"])
    a = fake_quant_u8(np.maximum(conv2d(a, w2d, b2d, 1), 0), *act["r2"])
    a = fake_quant_u8(a.mean(axis=(2, 3)), *act["fl"])
    y = a @ w3d
    save("qdq_conv", nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], [("", 13)], x, y)


def blocked(name, bits):
    """Opset 21 DequantizeLinear with block_size 32 along axis 0 (K) of a
    [K, N] MatMul weight; int8 or uint4 data with zero points."""
    k, n, bs = 128, 64, 32
    if bits == 8:
        q = rng.integers(-128, 128, (k, n)).astype(np.int8)
        zp = rng.integers(-4, 5, (k // bs, n)).astype(np.int8)
        q_t = numpy_helper.from_array(q, "w_q")
        zp_t = numpy_helper.from_array(zp, "w_zp")
    else:
        q = rng.integers(0, 16, (k, n)).astype(np.uint8)
        zp = rng.integers(6, 10, (k // bs, n)).astype(np.uint8)
        q_t, zp_t = packed4("w_q", q, UINT4), packed4("w_zp", zp, UINT4)
    scale = (rng.uniform(0.5, 1.5, (k // bs, n)) / (2 ** (bits - 1))).astype(np.float32)
    w = (q.astype(np.float32) - np.repeat(zp.astype(np.float32), bs, axis=0)) * np.repeat(scale, bs, axis=0)
    x = rng.standard_normal((2, k)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], axis=0, block_size=bs),
             helper.make_node("MatMul", ["x", "w"], ["y"])]
    save(name, nodes, [q_t, f32("w_scale", scale), zp_t], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])], [("", 21)], x, x @ w)


def matmul_nbits():
    """com.microsoft MatMulNBits, 4 bits, block 32, packed uint8 zero
    points, bias, 3-D A."""
    k, n, bs, bits = 128, 64, 32, 4
    kb = k // bs
    q = rng.integers(0, 16, (n, k)).astype(np.uint8)
    zp = rng.integers(5, 11, (n, kb)).astype(np.uint8)
    scale = (rng.uniform(0.5, 1.5, (n, kb)) / 8).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    b = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8).reshape(n, kb, bs * bits // 8)
    zpp = (zp[:, 0::2] | (zp[:, 1::2] << 4)).astype(np.uint8).reshape(-1)  # ceil(kb * 4 / 8) bytes a row
    w = (q.astype(np.float32) - np.repeat(zp, bs, axis=1)) * np.repeat(scale, bs, axis=1)  # [N, K]
    x = rng.standard_normal((1, 3, k)).astype(np.float32)
    nodes = [helper.make_node("MatMulNBits", ["x", "b", "scales", "zero_points", "", "bias"], ["y"], domain="com.microsoft",
                              K=k, N=n, bits=bits, block_size=bs)]
    inits = [numpy_helper.from_array(b, "b"), f32("scales", scale.reshape(-1)), numpy_helper.from_array(zpp, "zero_points"),
             f32("bias", bias)]
    save("matmul_nbits4", nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, n])], [("", 17), ("com.microsoft", 1)], x,
         x @ w.T + bias)


def pack_codes(codes, bits):
    """Rows of codes packed low bits first into whole bytes a row."""
    rows, n = codes.shape
    per = 8 // bits
    pad = (-n) % per
    c = np.concatenate([codes, np.zeros((rows, pad), codes.dtype)], axis=1).astype(np.uint8)
    out = np.zeros((rows, c.shape[1] // per), np.uint8)
    for j in range(per):
        out |= (c[:, j::per] << (j * bits)).astype(np.uint8)
    return out


def matmul_nbits_variant(name, bits, k, zp_kind, a_shape):
    """MatMulNBits with bits 2 or 8, a partial last block (K not a multiple
    of the block), zero points absent (2^(bits-1)) or of the scales' type."""
    n, bs = 64, 32
    kb = (k + bs - 1) // bs
    q = rng.integers(0, 2 ** bits, (n, kb * bs)).astype(np.uint8)
    scale = (rng.uniform(0.5, 1.5, (n, kb)) / 2 ** (bits - 1)).astype(np.float32)
    inputs = ["x", "b", "scales"]
    inits = [numpy_helper.from_array(pack_codes(q, bits).reshape(n, kb, bs * bits // 8), "b"),
             f32("scales", scale.reshape(-1))]
    if zp_kind == "float":
        zp = rng.uniform(0, 2 ** bits - 1, (n, kb)).astype(np.float32)
        inits.append(f32("zero_points", zp.reshape(-1)))
        inputs.append("zero_points")
    else:
        zp = np.full((n, kb), 2 ** (bits - 1), np.float32)
    w = ((q.astype(np.float32) - np.repeat(zp, bs, axis=1)) * np.repeat(scale, bs, axis=1))[:, :k]
    x = rng.standard_normal(a_shape + [k]).astype(np.float32)
    nodes = [helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", K=k, N=n, bits=bits, block_size=bs)]
    save(name, nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, a_shape + [k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, a_shape + [n])], [("", 17), ("com.microsoft", 1)], x,
         x @ w.T)


def gather_block_quantized():
    """com.microsoft GatherBlockQuantized: a [64, 128] embedding table of
    4-bit codes packed two a byte in uint8, block 32, packed zero points."""
    rows, cols, bs = 64, 128, 32
    kb = cols // bs
    q = rng.integers(0, 16, (rows, cols)).astype(np.uint8)
    zp = rng.integers(6, 10, (rows, kb)).astype(np.uint8)
    scale = rng.uniform(0.05, 0.1, (rows, kb)).astype(np.float32)
    table = (q.astype(np.float32) - np.repeat(zp, bs, axis=1)) * np.repeat(scale, bs, axis=1)
    idx = np.array([[3, 0, 63], [17, 17, 1]], np.int64)
    nodes = [helper.make_node("GatherBlockQuantized", ["table", "x", "scales", "zero_points"], ["y"],
                              domain="com.microsoft", block_size=bs, gather_axis=0, quantize_axis=1, bits=4)]
    inits = [numpy_helper.from_array(pack_codes(q, 4), "table"), f32("scales", scale),
             numpy_helper.from_array(pack_codes(zp, 4), "zero_points")]
    g = helper.make_graph(nodes, "gbq", [helper.make_tensor_value_info("x", TensorProto.INT64, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, cols])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                          producer_name="gen.py")
    m.ir_version = 8
    with open(os.path.join(HERE, "gather_block_quantized.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    np.save(os.path.join(HERE, "gather_block_quantized.x.npy"), idx.astype(np.int32))
    np.save(os.path.join(HERE, "gather_block_quantized.y.npy"), table[idx].astype(np.float32))


def refused():
    """MatMulNBits the converter refuses, naming the node: bits 3, and a
    g_idx that reorders K (act-order)."""
    k, n, bs = 64, 8, 32
    for name, bits, gidx in (("refused_nbits3", 3, None), ("refused_gidx", 4, np.arange(k)[::-1] // bs)):
        blob = bs * bits // 8
        inits = [numpy_helper.from_array(np.zeros((n, k // bs, blob), np.uint8), "b"), f32("scales", np.ones(n * k // bs))]
        inputs = ["x", "b", "scales"]
        if gidx is not None:
            inits.append(numpy_helper.from_array(gidx.astype(np.int32), "g_idx"))
            inputs += ["", "g_idx"]
        nodes = [helper.make_node("MatMulNBits", inputs, ["y"], name="the_matmul", domain="com.microsoft", K=k, N=n,
                                  bits=bits, block_size=bs)]
        g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], initializer=inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        m.ir_version = 8
        with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
            f.write(m.SerializeToString())


def dynamic_matmul_integer():
    """ONNX Runtime's dynamic quantization (quantize_dynamic): the
    activation quantized at run time (DynamicQuantizeLinear, uint8), an
    int8 weight with per-column zero points, MatMulInteger, then the int32
    product scaled back to float."""
    k, n = 128, 96
    x = rng.standard_normal((2, k)).astype(np.float32)
    wq = rng.integers(-128, 128, (k, n)).astype(np.int8)
    wzp = rng.integers(-3, 4, n).astype(np.int8)
    ws = np.float32(0.01)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             helper.make_node("MatMulInteger", ["xq", "wq", "xzp", "wzp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    inits = [numpy_helper.from_array(wq, "wq"), numpy_helper.from_array(wzp, "wzp"), f32("ws", ws)]
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    xs = np.float32((hi - lo) / 255)
    xzp = np.clip(np.round(-lo / xs), 0, 255)
    xq = np.clip(np.round(x / xs) + xzp, 0, 255)
    acc = (xq - xzp) @ (wq.astype(np.float64) - wzp)
    save("dynamic_matmul_integer", nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])], [("", 13)], x, acc * (xs * ws))


def transposed_blocked():
    """Opset 21 blocked int8 weight [N, K] (blocks of 16 along K) read
    through a Transpose: y = x + transpose(w), x [K, N]."""
    n, k, bs = 64, 128, 16
    q = rng.integers(-128, 128, (n, k)).astype(np.int8)
    zp = rng.integers(-3, 4, (n, k // bs)).astype(np.int8)
    scale = rng.uniform(0.005, 0.01, (n, k // bs)).astype(np.float32)
    w = (q.astype(np.float32) - np.repeat(zp, bs, axis=1)) * np.repeat(scale, bs, axis=1)
    x = rng.standard_normal((k, n)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"], axis=1, block_size=bs),
             helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]),
             helper.make_node("Add", ["x", "wt"], ["y"])]
    inits = [numpy_helper.from_array(q, "w_q"), f32("w_scale", scale), numpy_helper.from_array(zp, "w_zp")]
    save("transposed_blocked", nodes, inits, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [k, n])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [k, n])], [("", 21)], x, x + w.T)


def qdq_round():
    """QuantizeLinear -> DequantizeLinear on an input, uint8 (zero point
    128) and int8 (zero point 0), scale 0.5: the expected outputs are worked
    out by hand in the test (round half to even, saturation)."""
    nodes, inits = [], [f32("s", np.float32(0.5)), numpy_helper.from_array(np.array(128, np.uint8), "zu"),
                        numpy_helper.from_array(np.array(0, np.int8), "zi")]
    for zp, out in (("zu", "yu"), ("zi", "yi")):
        nodes.append(helper.make_node("QuantizeLinear", ["x", "s", zp], [out + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [out + "_q", "s", zp], [out]))
    g = helper.make_graph(nodes, "qdq_round", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, [8]) for o in ("yu", "yi")],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen.py")
    m.ir_version = 8
    with open(os.path.join(HERE, "qdq_round.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    np.save(os.path.join(HERE, "qdq_round.x.npy"), np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100, -100, 63.75], np.float32))


if __name__ == "__main__":
    mm_int8_pc()
    qdq_conv()
    blocked("blocked_int8", 8)
    blocked("blocked_uint4", 4)
    matmul_nbits()
    qdq_round()
    matmul_nbits_variant("matmul_nbits8_float_zp", 8, 208, "float", [3])
    matmul_nbits_variant("matmul_nbits2", 2, 256, None, [2, 2])
    gather_block_quantized()
    refused()
    dynamic_matmul_integer()
    transposed_blocked()
    print("onnx", onnx.__version__, "models written to", HERE)
