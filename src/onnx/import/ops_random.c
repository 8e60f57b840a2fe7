/* ONNX random generators: RandomUniform, RandomNormal (attribute shape),
 * RandomUniformLike, RandomNormalLike (the input's shape), Bernoulli (1
 * where a uniform draw falls below the input's probability) and
 * Multinomial (sample_size class indices per row from unnormalized log
 * probabilities) become MIL's random_uniform / random_normal /
 * random_categorical (coremltools ops/defs/iOS15/random.py). ONNX's float
 * seed becomes MIL's int32 seed (truncated); no seed: -1 (MIL's "any").
 * The numbers drawn are libmil's (or Core ML's), not ONNX Runtime's or
 * numpy's: only their distribution matches. dtype (FLOAT, FLOAT16, DOUBLE
 * -> fp32, and for Bernoulli / Multinomial the integer and bool types)
 * casts the result. */
#include <math.h>
#include <string.h>

#include "onnx/import/import_internal.h"

/* ONNX's float seed as MIL's int32 seed */
static mil_value *seed_of(onnx_ctx *c, const onnx_node *n) {
  if (!onnx_attr(n, "seed")) return onnx_i32(c, -1);
  float s = onnx_attr_f(n, "seed", 0);
  return onnx_i32(c, isfinite(s) && fabsf(s) < 2147483520.0f ? (int64_t)s : 0);
}

/* the dtype attribute (an ONNX DataType), or dflt when absent; false (with
 * the error) for a dtype the op cannot make */
static bool dtype_attr(onnx_ctx *c, const onnx_node *n, mil_dtype dflt, bool ints, mil_dtype *out) {
  *out = dflt;
  if (!onnx_attr(n, "dtype")) return true;
  int64_t dt = onnx_attr_i(n, "dtype", 1);
  mil_dtype m = onnx_mil_dtype((int)dt);
  bool ok = m == MIL_DT_FP32 || m == MIL_DT_FP16 || (ints && (m == MIL_DT_INT32 || m == MIL_DT_BOOL));
  if (!ok) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "attribute dtype %lld is not a type this op makes (%s)", (long long)dt,
              ints ? "float, double, float16, integer or bool" : "float, double or float16");
    return false;
  }
  *out = m;
  return true;
}

/* RandomUniform / RandomNormal (shape attribute), *Like (the input's) */
static mil_status conv_random(onnx_ctx *c, onnx_node *n) {
  bool like = strstr(n->op_type, "Like") != NULL, normal = strstr(n->op_type, "Normal") != NULL;
  mil_var *shape;
  mil_dtype dflt = MIL_DT_FP32;
  if (like) {
    mil_var *x = onnx_req(c, n, 0);
    if (!x) return MIL_ERR_INVALID;
    shape = onnx_shape_of(c, x);
    dflt = onnx_dtype(x) == MIL_DT_FP16 ? MIL_DT_FP16 : MIL_DT_FP32;
  } else {
    const int64_t *dims;
    int32_t r = onnx_attr_ints(n, "shape", &dims);
    if (!onnx_attr(n, "shape")) return onnx_fail(c, MIL_ERR_INVALID, "attribute shape is required");
    for (int32_t i = 0; i < r; i++)
      if (dims[i] < 0 || dims[i] > INT32_MAX)
        return onnx_fail(c, MIL_ERR_INVALID, "attribute shape[%d] is %lld; expected a size in [0, 2^31)", (int)i,
                         (long long)dims[i]);
    shape = onnx_const(c, onnx_i32s(c, r, dims));
  }
  mil_dtype dt;
  if (!shape || !dtype_attr(c, n, dflt, false, &dt)) return MIL_ERR_INVALID;
  mil_var *y = normal ? ONNX_OP(c, "random_normal", A("shape", shape), K("mean", onnx_f32(c, onnx_attr_f(n, "mean", 0))),
                                K("stddev", onnx_f32(c, onnx_attr_f(n, "scale", 1))), K("seed", seed_of(c, n)))
                      : ONNX_OP(c, "random_uniform", A("shape", shape), K("low", onnx_f32(c, onnx_attr_f(n, "low", 0))),
                                K("high", onnx_f32(c, onnx_attr_f(n, "high", 1))), K("seed", seed_of(c, n)));
  return onnx_set_out(c, n, 0, y ? onnx_cast(c, y, dt) : NULL);
}

/* Bernoulli: y = (uniform draw < p) in dtype (default the input's) */
static mil_status conv_bernoulli(onnx_ctx *c, onnx_node *n) {
  mil_var *p = onnx_req(c, n, 0);
  if (!p) return MIL_ERR_INVALID;
  mil_dtype dt;
  if (!dtype_attr(c, n, onnx_dtype(p), true, &dt)) return MIL_ERR_INVALID;
  mil_var *u = ONNX_OP(c, "random_uniform", A("shape", onnx_shape_of(c, p)), K("seed", seed_of(c, n)));
  mil_var *hit = ONNX_OP(c, "less", A("x", u), A("y", onnx_cast(c, p, MIL_DT_FP32)));
  return onnx_set_out(c, n, 0, hit ? onnx_cast(c, hit, dt) : NULL);
}

/* Multinomial: random_categorical over the last axis in "logits" mode
 * (ONNX's input is unnormalized log probabilities), indices as dtype
 * (INT32 by default; INT64 becomes int32) */
static mil_status conv_multinomial(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0);
  if (!x) return MIL_ERR_INVALID;
  if (onnx_rank(x) != 2) return onnx_fail(c, MIL_ERR_INVALID, "input must be rank 2 (batch, classes), got rank %d", onnx_rank(x));
  int64_t size = onnx_attr_i(n, "sample_size", 1);
  if (size < 1 || size > INT32_MAX)
    return onnx_fail(c, MIL_ERR_INVALID, "attribute sample_size must be in [1, 2^31), got %lld", (long long)size);
  mil_dtype dt = MIL_DT_INT32;
  if (onnx_attr(n, "dtype")) {
    int64_t d = onnx_attr_i(n, "dtype", 6);
    if (d != 6 && d != 7)
      return onnx_fail(c, MIL_ERR_INVALID, "attribute dtype must be INT32 (6) or INT64 (7), got %lld", (long long)d);
  }
  mil_var *y = ONNX_OP(c, "random_categorical", A("x", onnx_cast(c, x, MIL_DT_FP32)), K("mode", onnx_str(c, "logits")),
                       K("size", onnx_i32(c, size)), K("seed", seed_of(c, n)));
  return onnx_set_out(c, n, 0, y ? onnx_cast(c, y, dt) : NULL);
}

const onnx_op_entry onnx_ops_random[] = {
    {"RandomUniform", "", 1, 0, conv_random, "random_uniform"},
    {"RandomNormal", "", 1, 0, conv_random, "random_normal"},
    {"RandomUniformLike", "", 1, 0, conv_random, "shape, random_uniform"},
    {"RandomNormalLike", "", 1, 0, conv_random, "shape, random_normal"},
    {"Bernoulli", "", 15, 0, conv_bernoulli, "shape, random_uniform, less, cast"},
    {"Multinomial", "", 7, 0, conv_multinomial, "random_categorical, cast"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
