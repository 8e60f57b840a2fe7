/* common::add_int16_cast — run the index-heavy ops that accept 16-bit
 * integers (gather, gather_along_axis, gather_nd, squeeze, topk) on
 * int16 / uint16: each int32 input is cast to the 16-bit type, the op is
 * rebuilt as "<op>_cast_int16", and outputs that changed dtype are cast
 * back to int32.
 *
 *   main[CoreML7](%x: (2, 3, fp16)(Tensor)) {
 *     block0() {
 *       %i: (2,int32)*(Tensor) = const(val=[1, 0], name="i")
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %g: (2, 3, fp16)(Tensor) = gather(x=%x, indices=%i, axis=%ax, name="g")
 *     } -> (%g)
 *   }
 *
 * becomes (the const indices fit in uint16; the axis input is const-only
 * int32 in gather's spec and stays)
 *
 *   main[CoreML7](%x: (2, 3, fp16)(Tensor)) {
 *     block0() {
 *       %i: (2,int32)*(Tensor) = const(val=[1, 0], name="i")
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %i_to_uint16_dtype_0: (string)*(Scalar) = const(val="uint16", name="i_to_uint16_dtype_0")
 *       %i_to_uint16: (2,uint16)*(Tensor) = cast(x=%i, dtype=%i_to_uint16_dtype_0, name="i_to_uint16")
 *       %g: (2, 3, fp16)(Tensor) = gather(x=%x, indices=%i_to_uint16, axis=%ax, name="g_cast_int16")
 *     } -> (%g)
 *   }
 *
 * The 16-bit type: uint16 for a const whose values fit it, else int16 if
 * they fit that (a const fitting neither is not cast); uint16 for the
 * output of a cast from uint16, so cast_optimization can cancel the pair;
 * int16 otherwise. Dynamic gather indices into an axis longer than 32767
 * are not cast. A dtype string input "int32" becomes "int16" ("uint16"
 * for topk). The input's type domain and cast (iOS17 on) must admit the
 * 16-bit type.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/quantization.py
 * (add_int16_cast, CastTypeQuantization).
 */
#include <string.h>

#include "passes/cast_quantization_internal.h"

#define PASS "add_int16_cast"

static const char *const k_ops[] = {"gather", "gather_along_axis", "gather_nd", "squeeze", "topk", NULL};

static bool type_ok(const char *type) {
  for (const char *const *t = k_ops; *t; t++)
    if (strcmp(type, *t) == 0) return true;
  return false;
}

static const char *should_cast(const pass_castq *q, pass_castq_state *r, const mil_op *op, const mil_input *param) {
  mil_var *v = param->n_args == 1 ? param->args[0].use.var : NULL;
  if (!v || param->is_tuple) return NULL;
  if (pass_castq_is_of(v, MIL_DT_STRING)) {
    const mil_value *sv = v->val;
    return sv && sv->numel == 1 && strcmp(mil_value_get_str(sv, 0), "int32") == 0 ? "int16" : NULL;
  }
  if (!pass_castq_is_of(v, MIL_DT_INT32)) return NULL;
  const char *tgt = NULL;
  if (v->op && mil_op_is_const(v->op)) {
    const mil_value *val = v->val;
    if (!val || val->numel < 1) return NULL;
    int64_t lo = mil_value_get_i64(val, 0), hi = lo;
    for (int64_t i = 1; i < val->numel; i++) {
      int64_t x = mil_value_get_i64(val, i);
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
    if (lo >= 0 && hi <= 65535) tgt = "uint16";
    else if (lo >= -32768 && hi <= 32767) tgt = "int16";
    else return NULL;
  } else if (v->op && strcmp(v->op->type, "cast") == 0) {
    tgt = pass_castq_is_of(mil_op_input_var(v->op, "x"), MIL_DT_UINT16) ? "uint16" : "int16";
  }
  if ((strcmp(op->type, "gather") == 0 || strcmp(op->type, "gather_along_axis") == 0) &&
      strcmp(param->name, "indices") == 0 && !v->val) {
    mil_var *x = mil_op_input_var(op, "x");
    const mil_value *axv = pass_input_value(op, "axis");
    if (x && x->type && x->type->kind == MIL_TYPE_TENSOR && x->type->rank > 0 && axv && axv->numel == 1) {
      int64_t a = mil_value_get_i64(axv, 0), r = x->type->rank;
      if (a < 0) a += r;
      if (a >= 0 && a < r && x->type->dims[a].size > 32767) return NULL;
    }
  }
  if (!tgt) tgt = q->target;
  return pass_castq_dtype_allowed(r, op, param->name, tgt) ? tgt : NULL;
}

static const pass_castq k_int16 = {PASS, "int32", "int16", MIL_DT_INT32, type_ok, NULL, should_cast, NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  return pass_castq_run(&k_int16, p, o, false, stats, d);
}

static const mil_pass_option_def k_options[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only ops it accepts are cast (C API only)"},
};

static const char *const k_anchors[] = {"gather", "gather_along_axis", "gather_nd", "squeeze", "topk", NULL};
const mil_pass_def pass_def_add_int16_cast = {
    "common::" PASS, "run int32 ops that accept it in int16/uint16, casting around them", k_options, 1, run, k_anchors};
