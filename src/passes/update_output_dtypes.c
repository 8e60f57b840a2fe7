/* common::update_output_dtypes — give each function output the dtype the
 * model declares for it, by casting outputs whose dtype differs.
 *
 * coremltools takes the declared dtypes from Function.output_types (the
 * `outputs` given to ct.convert, or what add_fp16_cast's signature
 * rewrite recorded). A libmil function declares them in its attribute
 * "output_types": a string tensor value with one dtype name per output,
 * "" for an output without a requirement. A function without the
 * attribute is left alone, as coremltools leaves a function whose
 * output_types is None (a program loaded from a model file).
 *
 *   main(%input: (1, 20, int32)(Tensor)) {        attribute output_types = ["fp16"]
 *     block0() {
 *       %sq: (1, 20, int32)(Tensor) = square(x=%input, name="sq")
 *     } -> (%sq)
 *   }
 *
 * becomes
 *
 *   main(%input: (1, 20, int32)(Tensor)) {
 *     block0() {
 *       %sq_type_int32: (1, 20, int32)(Tensor) = square(x=%input, name="sq")
 *       %cast_0_dtype_0: (string)*(Scalar) = const(val="fp16", name="cast_0_dtype_0")
 *       %sq: (1, 20, fp16)(Tensor) = cast(x=%sq_type_int32, dtype=%cast_0_dtype_0, name="cast_0")
 *     } -> (%sq)
 *   }
 *
 * The old output is renamed "<name>_type_<dtype>" and the cast, appended at
 * the end of the body, takes the output's name. Outputs that are not
 * tensors or scalars, already have the dtype, or are function inputs stay.
 * A declaration whose length differs from the number of outputs is an
 * error (MIL_ERR_INVALID), as in coremltools.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/preprocess.py
 * (update_output_dtypes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "update_output_dtypes"

static mil_status adjust(pass_bld *c, mil_function *f) {
  const mil_value *decl = mil_function_get_attr(f, "output_types");
  mil_block *b = mil_function_body(f);
  if (!decl || !b || decl->kind != MIL_VAL_TENSOR || !decl->type || decl->type->dtype != MIL_DT_STRING ||
      decl->numel == 0)
    return MIL_OK;
  if (decl->numel != b->n_outputs)
    return mil_diag_error(c->d, MIL_ERR_INVALID,
                          PASS ": function '%s' declares %lld output types but has %d outputs", f->name,
                          (long long)decl->numel, b->n_outputs);
  int32_t n = b->n_outputs;
  mil_var **outs = malloc(((size_t)n + 1) * sizeof *outs);
  if (!outs) return mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  for (int32_t i = 0; i < n; i++) outs[i] = b->outputs[i].var;
  mil_status st = MIL_OK;
  bool changed = false;
  for (int32_t i = 0; i < n && st == MIL_OK; i++) {
    const char *want = mil_value_get_str(decl, i);
    mil_var *v = outs[i];
    mil_dtype dt;
    if (!want || !*want || !mil_dtype_from_name(want, strlen(want), &dt)) continue;
    if (!v->type || v->type->kind != MIL_TYPE_TENSOR || v->type->dtype == dt || v->func_input_of) continue;
    const char *old_name = v->name;
    size_t len = strlen(old_name) + 32;
    char *renamed = malloc(len);
    if (!renamed) {
      st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    snprintf(renamed, len, "%s_type_%s", old_name, mil_dtype_name(v->type->dtype));
    const char *rn = mil_program_intern(c->p, renamed, (size_t)-1);
    free(renamed);
    mil_value *dv = pass_bld_str(c->p, mil_dtype_name(dt));
    if (!rn || !dv) {
      st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    v->name = rn;
    pass_barg a[] = {PASS_BV("x", v), PASS_BK("dtype", dv)};
    mil_var *cv = pass_bld_var(c, b, NULL, "cast", NULL, 2, a, &st);
    if (!cv) break;
    cv->name = old_name;
    outs[i] = cv;
    changed = true;
  }
  if (st == MIL_OK && changed) {
    st = mil_block_set_outputs(b, n, outs);
    c->changes++;
  }
  free(outs);
  return st;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) st = adjust(&c, p->functions[i]);
  pass_bld_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_update_output_dtypes = {
    "common::" PASS, "set the function output dtypes the model declares", NULL, 0, run, NULL};
