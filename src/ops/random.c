/* Op family "random" (coremltools ops/defs/iOS15/random.py): tensors of
 * random numbers. random_bernoulli / random_normal / random_uniform take
 * the output shape as a rank-1 int32 tensor; random_categorical samples
 * `size` class indices per row of x.
 *
 *   %r: (2, 3, fp32)(Tensor) = random_uniform(shape=[2, 3], low=0.0, high=1.0, seed=-1, name="r")
 *
 * When the shape value is unknown the output dims are fresh symbols (one
 * per entry of shape); when even shape's length is symbolic, the output is
 * a rank-1 tensor with one variadic symbolic dim. */
#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

static const mil_input_spec k_bernoulli_in[] = {
    IN_SPEC("shape", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
    IN_SPEC("prob", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "0.5"),
    IN_SPEC("seed", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
};
static const mil_input_spec k_categorical_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", 0, NULL),
    IN_SPEC("mode", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"logits\""),
    IN_SPEC("size", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "1"),
    IN_SPEC("seed", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
};
static const mil_input_spec k_normal_in[] = {
    IN_SPEC("shape", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
    IN_SPEC("mean", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "0.0"),
    IN_SPEC("stddev", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "1.0"),
    IN_SPEC("seed", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
};
static const mil_input_spec k_uniform_in[] = {
    IN_SPEC("shape", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
    IN_SPEC("low", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "0.0"),
    IN_SPEC("high", MIL_IK_TENSOR, MIL_DTS_FLOAT, "T", MIL_IF_CONST | MIL_IF_OPTIONAL, "1.0"),
    IN_SPEC("seed", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "-1"),
};

/* dtype of an optional float parameter (fp32, the dtype of its Python-float
 * default, when absent). */
static mil_dtype param_dtype(const mil_infer_ctx *c, const char *name) {
  const mil_type *t = op_type(c, name);
  return t && t->kind == MIL_TYPE_TENSOR ? t->dtype : MIL_DT_FP32;
}

/* The output type of a distribution whose element dtype is dt, shaped by
 * the `shape` input (RandomDistribution.type_inference). */
static mil_status distribution(mil_infer_ctx *c, mil_dtype dt) {
  const mil_type *s = op_type(c, "shape");
  if (s->rank != 1) return op_fail(c, "input 'shape' must be rank 1, got %s", op_tstr(c, s));
  if (s->dims[0].size < 0) {
    op_set_out(c, 0, op_tensor_variadic(c, dt));
    return MIL_OK;
  }
  int64_t n = s->dims[0].size;
  if (n > OP_MAX_RANK)
    return op_fail(c, "input 'shape' has %lld entries, more than supported (%d)", (long long)n, OP_MAX_RANK);
  mil_dim dims[OP_MAX_RANK];
  const mil_value *v = op_val(c, "shape");
  for (int64_t i = 0; i < n; i++) {
    int64_t x = v ? mil_value_get_i64(v, i) : 0;
    if (x < 0) return op_fail(c, "input 'shape' has a negative entry: shape[%lld] = %lld", (long long)i, (long long)x);
    dims[i] = v ? op_dim(x) : op_dim_sym(c);
  }
  op_set_out(c, 0, op_tensor(c, dt, (int32_t)n, n ? dims : NULL));
  return MIL_OK;
}

static mil_status infer_bernoulli(mil_infer_ctx *c) { return distribution(c, param_dtype(c, "prob")); }

static mil_status infer_normal(mil_infer_ctx *c) {
  mil_dtype a = param_dtype(c, "mean"), b = param_dtype(c, "stddev");
  if (a != b)
    return op_fail(c, "inputs 'mean' (%s) and 'stddev' (%s) must have the same dtype", mil_dtype_name(a),
                   mil_dtype_name(b));
  return distribution(c, a);
}

static mil_status infer_uniform(mil_infer_ctx *c) {
  mil_dtype a = param_dtype(c, "low"), b = param_dtype(c, "high");
  if (a != b)
    return op_fail(c, "inputs 'low' (%s) and 'high' (%s) must have the same dtype", mil_dtype_name(a),
                   mil_dtype_name(b));
  return distribution(c, a);
}

static mil_status infer_categorical(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (x->rank < 0) {
    op_set_out(c, 0, op_tensor(c, x->dtype, -1, NULL));
    return MIL_OK;
  }
  if (x->rank < 1 || x->rank > OP_MAX_RANK)
    return op_fail(c, "input 'x' must have rank 1 to %d, got %s", OP_MAX_RANK, op_tstr(c, x));
  mil_dim dims[OP_MAX_RANK];
  for (int32_t i = 0; i + 1 < x->rank; i++) dims[i] = x->dims[i];
  dims[x->rank - 1] = op_dim(op_int(c, "size", 1));
  op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, dims));
  return MIL_OK;
}

static mil_status defaults_bernoulli(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "seed", -1);
  return st == MIL_OK ? op_add_default_f32(c, "prob", 0.5) : st;
}

static mil_status defaults_normal(mil_infer_ctx *c) {
  mil_status st = op_add_default_f32(c, "mean", 0.0);
  if (st == MIL_OK) st = op_add_default_f32(c, "stddev", 1.0);
  return st == MIL_OK ? op_add_default_int(c, "seed", -1) : st;
}

static mil_status defaults_uniform(mil_infer_ctx *c) {
  mil_status st = op_add_default_f32(c, "low", 0.0);
  if (st == MIL_OK) st = op_add_default_f32(c, "high", 1.0);
  return st == MIL_OK ? op_add_default_int(c, "seed", -1) : st;
}

static mil_status defaults_categorical(mil_infer_ctx *c) {
  mil_status st = op_add_default_str(c, "mode", "logits");
  if (st == MIL_OK) st = op_add_default_int(c, "size", 1);
  return st == MIL_OK ? op_add_default_int(c, "seed", -1) : st;
}

const mil_op_def op_defs_random[] = {
    {"random_bernoulli", MIL_IOS13, "random", k_bernoulli_in, 3, 1, infer_bernoulli, NULL, defaults_bernoulli,
     "0/1 samples with probability prob, of the given shape"},
    {"random_categorical", MIL_IOS13, "random", k_categorical_in, 4, 1, infer_categorical, NULL,
     defaults_categorical, "size class indices sampled from the last axis of x (logits or probs)"},
    {"random_normal", MIL_IOS13, "random", k_normal_in, 4, 1, infer_normal, NULL, defaults_normal,
     "normal samples with mean and stddev, of the given shape"},
    {"random_uniform", MIL_IOS13, "random", k_uniform_in, 4, 1, infer_uniform, NULL, defaults_uniform,
     "uniform samples in [low, high), of the given shape"},
};
OP_FAMILY_COUNT(random);
