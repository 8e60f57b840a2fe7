/* Op family "elementwise_binary" (coremltools ops/defs/iOS15/elementwise_binary.py):
 * add, sub, mul, real_div, floor_div, mod, pow, maximum, minimum, the six
 * comparisons and the three logical ops. All are iOS13 ops with inputs
 * x, y of one shared dtype T, numpy broadcasting, and value inference.
 *
 *   %z: (2, 3, fp32)(Tensor) = add(x=%x, y=[1.0, 2.0, 3.0], name="z")   x: (2, 3, fp32)
 *   %m: (2, 3, bool)(Tensor) = less(x=%x, y=0.0, name="m")
 */
#include <math.h>
#include <string.h>

#include "ops/fold_internal.h"
#include "ops/ops_internal.h"

static const mil_input_spec k_arith_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
    IN_SPEC("y", MIL_IK_TENSOR, MIL_DTS_FLOAT_INT32, "T", 0, NULL),
};

static const mil_input_spec k_logical_in[] = {
    IN_SPEC("x", MIL_IK_TENSOR, MIL_DTS_BOOL, "T", 0, NULL),
    IN_SPEC("y", MIL_IK_TENSOR, MIL_DTS_BOOL, "T", 0, NULL),
};

/* The output type of a broadcasting binary op with element dtype dt:
 * two scalars give a scalar, a tensor and a scalar give the tensor's shape,
 * two tensors broadcast (coremltools _utils.infer_type_with_broadcast). */
static mil_status broadcast_type(mil_infer_ctx *c, const mil_type *a, const mil_type *b, mil_dtype dt,
                                 const mil_type **out) {
  if (a->is_scalar && b->is_scalar) {
    *out = op_scalar(c, dt);
    return MIL_OK;
  }
  if (b->is_scalar) {
    *out = op_with_dtype(c, a, dt);
    return MIL_OK;
  }
  if (a->is_scalar) {
    *out = op_with_dtype(c, b, dt);
    return MIL_OK;
  }
  mil_dim dims[OP_MAX_RANK];
  int32_t rank;
  mil_status st = op_broadcast(c, a, b, dims, &rank);
  if (st != MIL_OK) return st;
  *out = op_tensor(c, dt, rank, rank > 0 ? dims : NULL);
  return MIL_OK;
}

static mil_status infer_same(mil_infer_ctx *c) {
  const mil_type *a = op_type(c, "x"), *b = op_type(c, "y");
  if (a->dtype != b->dtype)
    return op_fail(c, "inputs 'x' and 'y' must have the same dtype, got %s and %s", op_tstr(c, a), op_tstr(c, b));
  const mil_type *t;
  mil_status st = broadcast_type(c, a, b, a->dtype, &t);
  if (st == MIL_OK) op_set_out(c, 0, t);
  return st;
}

static mil_status infer_bool(mil_infer_ctx *c) {
  const mil_type *a = op_type(c, "x"), *b = op_type(c, "y");
  if (a->dtype != b->dtype)
    return op_fail(c, "inputs 'x' and 'y' must have the same dtype, got %s and %s", op_tstr(c, a), op_tstr(c, b));
  const mil_type *t;
  mil_status st = broadcast_type(c, a, b, MIL_DT_BOOL, &t);
  if (st == MIL_OK) op_set_out(c, 0, t);
  return st;
}

/* ---- value inference ---- */

typedef enum bop {
  B_ADD, B_SUB, B_MUL, B_REAL_DIV, B_FLOOR_DIV, B_MOD, B_POW, B_MAX, B_MIN,
  B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_XOR
} bop;

/* numpy's floor_divide / remainder for floats (npy_divmod), evaluated with
 * float rounding after each step (numpy computes half-precision divmod in
 * float too; the caller rounds the result to the dtype). */
static double float_floor_div(mil_dtype dt, double a, double b) {
  if (b == 0) return fold_rnd(dt, a / b);
  double mod = fmod(a, b);
  double div = fold_rnd(dt, fold_rnd(dt, a - mod) / b);
  if (mod != 0 && ((b < 0) != (mod < 0))) div = fold_rnd(dt, div - 1.0);
  if (div == 0) return copysign(0.0, fold_rnd(dt, a / b));
  double fl = floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

static double float_mod(mil_dtype dt, double a, double b) {
  if (b == 0) return NAN;
  double mod = fmod(a, b);
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) mod = fold_rnd(dt, mod + b);
  } else {
    mod = copysign(0.0, b);
  }
  return mod;
}

static double float_op(bop k, mil_dtype dt, double a, double b) {
  switch (k) {
  case B_ADD: return fold_rnd(dt, a + b);
  case B_SUB: return fold_rnd(dt, a - b);
  case B_MUL: return fold_rnd(dt, a * b);
  case B_REAL_DIV: return fold_rnd(dt, a / b);
  case B_FLOOR_DIV: return fold_rnd(dt, float_floor_div(dt == MIL_DT_FP16 ? MIL_DT_FP32 : dt, a, b));
  case B_MOD: return fold_rnd(dt, float_mod(dt == MIL_DT_FP16 ? MIL_DT_FP32 : dt, a, b));
  case B_POW: return fold_rnd(dt, pow(a, b));
  case B_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
  case B_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
  case B_EQ: return a == b;
  case B_NE: return a != b;
  case B_LT: return a < b;
  case B_LE: return a <= b;
  case B_GT: return a > b;
  case B_GE: return a >= b;
  case B_AND: return (a != 0) && (b != 0);
  case B_OR: return (a != 0) || (b != 0);
  case B_XOR: return (a != 0) != (b != 0);
  }
  return 0;
}

/* int32 arithmetic as numpy does it (wrap-around; division by zero gives 0;
 * floor semantics for // and %). Returns false when numpy would raise
 * (integer to a negative power). */
static bool int_op(bop k, int64_t a, int64_t b, int64_t *r, double *fr, bool *is_float) {
  *is_float = false;
  switch (k) {
  case B_ADD: *r = a + b; return true;
  case B_SUB: *r = a - b; return true;
  case B_MUL: *r = a * b; return true;
  case B_REAL_DIV: *is_float = true; *fr = (double)a / (double)b; return true;
  case B_FLOOR_DIV: {
    if (b == 0) { *r = 0; return true; }
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    *r = q;
    return true;
  }
  case B_MOD: {
    if (b == 0) { *r = 0; return true; }
    int64_t m = a % b;
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    *r = m;
    return true;
  }
  case B_POW: {
    if (b < 0) return false;
    uint32_t base = (uint32_t)a, acc = 1;
    for (int64_t e = b; e > 0; e >>= 1) {
      if (e & 1) acc *= base;
      base *= base;
    }
    *r = (int32_t)acc;
    return true;
  }
  case B_MAX: *r = a > b ? a : b; return true;
  case B_MIN: *r = a < b ? a : b; return true;
  case B_EQ: *r = a == b; return true;
  case B_NE: *r = a != b; return true;
  case B_LT: *r = a < b; return true;
  case B_LE: *r = a <= b; return true;
  case B_GT: *r = a > b; return true;
  case B_GE: *r = a >= b; return true;
  case B_AND: *r = a && b; return true;
  case B_OR: *r = a || b; return true;
  case B_XOR: *r = (a != 0) != (b != 0); return true;
  }
  return false;
}

/* The fp32 arithmetic of a large fold at memory speed: x and y fp32, each
 * either of the output's element count (the same flat order) or a single
 * element, + - * / in float (each correctly rounded, which is numpy's
 * float32 result and what float_op's double-then-round gives). Eight
 * elements a step with vector extensions. false when the case is not one
 * of these (float_op then computes element by element). */
typedef float f32x4 __attribute__((vector_size(16)));

#define BIN_LOOP(OP)                                                                           \
  do {                                                                                         \
    int64_t i = 0;                                                                             \
    if (sx && sy) {                                                                            \
      for (; i + 8 <= n; i += 8) {                                                             \
        f32x4 a0, a1, b0, b1;                                                                  \
        memcpy(&a0, a + i, 16), memcpy(&a1, a + i + 4, 16);                                    \
        memcpy(&b0, b + i, 16), memcpy(&b1, b + i + 4, 16);                                    \
        a0 = a0 OP b0, a1 = a1 OP b1;                                                          \
        memcpy(o + i, &a0, 16), memcpy(o + i + 4, &a1, 16);                                    \
      }                                                                                        \
    } else if (sx) {                                                                           \
      const float bb = b[0];                                                                   \
      for (; i + 8 <= n; i += 8) {                                                             \
        f32x4 a0, a1;                                                                          \
        memcpy(&a0, a + i, 16), memcpy(&a1, a + i + 4, 16);                                    \
        a0 = a0 OP bb, a1 = a1 OP bb;                                                          \
        memcpy(o + i, &a0, 16), memcpy(o + i + 4, &a1, 16);                                    \
      }                                                                                        \
    }                                                                                          \
    for (; i < n; i++) o[i] = a[sx ? i : 0] OP b[sy ? i : 0];                                  \
  } while (0)

static bool fold_binary_f32(bop k, const mil_value *x, const mil_value *y, mil_value *out) {
  if (k != B_ADD && k != B_SUB && k != B_MUL && k != B_REAL_DIV) return false;
  if (x->type->dtype != MIL_DT_FP32 || y->type->dtype != MIL_DT_FP32 || out->type->dtype != MIL_DT_FP32) return false;
  int64_t n = out->numel;
  bool sx = x->numel == n, sy = y->numel == n;
  if ((!sx && x->numel != 1) || (!sy && y->numel != 1) || (!sx && !sy) || n < 1) return false;
  if (!sx) { /* scalar x: the loop's operand order stays x OP y */
    if (k == B_ADD || k == B_MUL) {
      const mil_value *t = x;
      x = y, y = t, sx = true, sy = false;
    } else {
      return false;
    }
  }
  const float *a = mil_value_data(x), *b = mil_value_data(y);
  float *o = mil_value_data_mut(out);
  if (!a || !b || !o) return false;
  switch (k) {
  case B_ADD: BIN_LOOP(+); break;
  case B_SUB: BIN_LOOP(-); break;
  case B_MUL: BIN_LOOP(*); break;
  default: BIN_LOOP(/); break;
  }
  return true;
}

/* The fp32 comparisons of a large fold (a causal mask's equal(x, 0.0)):
 * x and y fp32, each of the output's element count or a single element,
 * the bool result one byte an element. The float comparison is the one
 * float_op makes on the values widened to double. */
#define CMP_LOOP(OP)                                                     \
  for (int64_t i = 0; i < n; i++) o[i] = a[sx ? i : 0] OP b[sy ? i : 0]

static bool fold_compare_f32(bop k, const mil_value *x, const mil_value *y, mil_value *out) {
  if (k != B_EQ && k != B_NE && k != B_LT && k != B_LE && k != B_GT && k != B_GE) return false;
  if (x->type->dtype != MIL_DT_FP32 || y->type->dtype != MIL_DT_FP32 || out->type->dtype != MIL_DT_BOOL) return false;
  int64_t n = out->numel;
  bool sx = x->numel == n, sy = y->numel == n;
  if ((!sx && x->numel != 1) || (!sy && y->numel != 1) || n < 1) return false;
  const float *a = mil_value_data(x), *b = mil_value_data(y);
  uint8_t *o = mil_value_data_mut(out);
  if (!a || !b || !o) return false;
  switch (k) {
  case B_EQ: CMP_LOOP(==); break;
  case B_NE: CMP_LOOP(!=); break;
  case B_LT: CMP_LOOP(<); break;
  case B_LE: CMP_LOOP(<=); break;
  case B_GT: CMP_LOOP(>); break;
  default: CMP_LOOP(>=); break;
  }
  return true;
}

static mil_status fold_binary(mil_infer_ctx *c, bop k) {
  const mil_value *x = fold_tensor(c, "x"), *y = fold_tensor(c, "y");
  if (!x || !y) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  int64_t shape[OP_MAX_RANK];
  int32_t rank = fold_shape(out, shape);
  const mil_value *ins[2] = {x, y};
  fold_iter it;
  if (!fold_iter_init(&it, rank, shape, 2, ins)) return MIL_OK;
  mil_dtype dt = x->type->dtype;
  if (out->numel >= 64 && (fold_binary_f32(k, x, y, out) || fold_compare_f32(k, x, y, out))) {
    c->val[0] = out;
    return MIL_OK;
  }
  bool is_int = !fold_is_float(dt);
  for (int64_t i = 0; i < out->numel; i++, fold_iter_next(&it)) {
    if (is_int) {
      int64_t r;
      double fr;
      bool isf;
      if (!int_op(k, mil_value_get_i64(x, it.off[0]), mil_value_get_i64(y, it.off[1]), &r, &fr, &isf)) return MIL_OK;
      if (isf) fold_store_f64(out, i, fr);
      else mil_value_set_i64(out, i, r);
    } else {
      double r = float_op(k, dt, mil_value_get_f64(x, it.off[0]), mil_value_get_f64(y, it.off[1]));
      mil_value_set_f64(out, i, r);
    }
  }
  c->val[0] = out;
  return MIL_OK;
}

#define FOLD_FN(name, kind) \
  static mil_status fold_##name(mil_infer_ctx *c) { return fold_binary(c, kind); }
FOLD_FN(add, B_ADD)
FOLD_FN(sub, B_SUB)
FOLD_FN(mul, B_MUL)
FOLD_FN(real_div, B_REAL_DIV)
FOLD_FN(floor_div, B_FLOOR_DIV)
FOLD_FN(mod, B_MOD)
FOLD_FN(pow, B_POW)
FOLD_FN(maximum, B_MAX)
FOLD_FN(minimum, B_MIN)
FOLD_FN(equal, B_EQ)
FOLD_FN(not_equal, B_NE)
FOLD_FN(less, B_LT)
FOLD_FN(less_equal, B_LE)
FOLD_FN(greater, B_GT)
FOLD_FN(greater_equal, B_GE)
FOLD_FN(logical_and, B_AND)
FOLD_FN(logical_or, B_OR)
FOLD_FN(logical_xor, B_XOR)
#undef FOLD_FN

#define ARITH(name, doc) {#name, MIL_IOS13, "elementwise_binary", k_arith_in, 2, 1, infer_same, fold_##name, NULL, doc}
#define COMPARE(name, doc) \
  {#name, MIL_IOS13, "elementwise_binary", k_arith_in, 2, 1, infer_bool, fold_##name, NULL, doc}
#define LOGICAL(name, doc) \
  {#name, MIL_IOS13, "elementwise_binary", k_logical_in, 2, 1, infer_bool, fold_##name, NULL, doc}

const mil_op_def op_defs_elementwise_binary[] = {
    ARITH(add, "x + y with broadcasting"),
    COMPARE(equal, "x == y with broadcasting (bool output)"),
    ARITH(floor_div, "x / y rounded toward negative infinity, with broadcasting"),
    COMPARE(greater, "x > y with broadcasting (bool output)"),
    COMPARE(greater_equal, "x >= y with broadcasting (bool output)"),
    COMPARE(less, "x < y with broadcasting (bool output)"),
    COMPARE(less_equal, "x <= y with broadcasting (bool output)"),
    LOGICAL(logical_and, "x AND y on bool tensors with broadcasting"),
    LOGICAL(logical_or, "x OR y on bool tensors with broadcasting"),
    LOGICAL(logical_xor, "x XOR y on bool tensors with broadcasting"),
    ARITH(maximum, "elementwise max(x, y) with broadcasting"),
    ARITH(minimum, "elementwise min(x, y) with broadcasting"),
    ARITH(mod, "x mod y (sign of y, like numpy) with broadcasting"),
    ARITH(mul, "x * y with broadcasting"),
    COMPARE(not_equal, "x != y with broadcasting (bool output)"),
    ARITH(real_div, "x / y with broadcasting (integer inputs truncate the quotient)"),
    ARITH(pow, "x ** y with broadcasting"),
    ARITH(sub, "x - y with broadcasting"),
};
OP_FAMILY_COUNT(elementwise_binary);
