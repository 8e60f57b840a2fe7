/* mil_backend::insert_image_preprocessing_ops — the scale and bias of an
 * image input (ct.ImageType(scale=..., bias=...)) become ops right after
 * the input, before the first op of "main":
 *
 *   main(%image: (1, 3, 32, 32, fp32)(Tensor)) {   image_inputs = ["image"], image_scales = [0.00392],
 *     block0() {                                    image_biases = [[-0.5, -0.4, -0.3]]
 *       %c: ... = cast(x=%image, dtype="fp16", name="cast_1")
 *
 * becomes
 *
 *   %image__scaled__ = mul(x=%image, y=0.00392, name="image__scaled__")
 *   %image__biased__ = add(x=%image__scaled__, y=[[[[-0.5]], [[-0.4]], [[-0.3]]]], name="image__biased__")
 *   %c: ... = cast(x=%image__biased__, dtype="fp16", name="cast_1")
 *
 * The mul is made when the scale is not 1, the add when some bias is not
 * 0; the constants take the input's dtype (fp16 for GRAYSCALE_FLOAT16
 * inputs). A colour image's bias is reshaped to (1, 3, 1, 1) for a rank-4
 * input and (3, 1, 1) for rank 3 (other ranks are an error, as in
 * coremltools); a grayscale image's bias is a scalar. Every use of the
 * input after the last new op (block outputs included) moves to it.
 *
 * coremltools keeps the declarations in the conversion-time input types
 * (Function.input_types), which no model file carries; libmil reads them
 * from attributes of the main function, as the converter sets them
 * (mil_convert's model interface):
 *   "image_inputs"        string (n)    the image input names
 *   "image_scales"        fp32 (n)      their scales
 *   "image_biases"        fp32 (n, 3)   their biases (grayscale: entry 0)
 *   "image_color_layouts" string (n)    "RGB", "BGR", "G" or "G_FLOAT16"
 * Without "image_inputs" the pass changes nothing; inputs that are not in
 * the function, and a function without ops, are skipped as in
 * coremltools. Malformed attributes are MIL_ERR_INVALID.
 *
 * Mirrors coremltools/converters/mil/backend/mil/passes/
 * insert_image_preprocessing_op.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "insert_image_preprocessing_ops"

static bool tensor_of(const mil_value *v, mil_dtype dt, int64_t numel) {
  return v && v->kind == MIL_VAL_TENSOR && v->type && v->type->dtype == dt && v->numel == numel;
}

/* One scalar or (1, 3, 1, 1) / (3, 1, 1) value in dtype dt. */
static mil_value *const_of(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, const float *vals,
                           int64_t n) {
  (void)n;
  mil_value *v = mil_value_new_tensor(p, MIL_DT_FP32, rank, shape, rank == 0, vals);
  return v && dt != MIL_DT_FP32 ? pass_bld_astype(p, v, dt) : v;
}

static mil_status preprocess(pass_bld *c, mil_function *f, mil_var *in, float scale, const float *bias,
                             bool gray) {
  mil_block *b = mil_function_body(f);
  const mil_type *t = in->type;
  if (!t || t->kind != MIL_TYPE_TENSOR)
    return mil_diag_error(c->d, MIL_ERR_INVALID, PASS ": image input '%s' is not a tensor", in->name);
  mil_dtype dt = t->dtype;
  bool has_bias = bias[0] != 0.0f || (!gray && (bias[1] != 0.0f || bias[2] != 0.0f));
  if (has_bias && !gray && t->rank != 3 && t->rank != 4)
    return mil_diag_error(c->d, MIL_ERR_INVALID, PASS ": image input '%s' has rank %d; a colour image's bias needs "
                          "rank 3 or 4", in->name, (int)t->rank);
  mil_op *anchor = b->first;
  mil_var *last = in;
  mil_op *last_op = NULL;
  size_t len = strlen(in->name) + 16;
  char *name = malloc(len);
  if (!name) return mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
  mil_status st = MIL_OK;
  if (scale != 1.0f) {
    mil_value *y = const_of(c->p, dt, 0, NULL, &scale, 1);
    snprintf(name, len, "%s__scaled__", in->name);
    pass_barg a[] = {PASS_BV("x", last), PASS_BK("y", y)};
    last_op = y ? pass_bld_op(c, b, anchor, "mul", name, 2, a, &st) : NULL;
    if (!y) st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    if (last_op) last = last_op->outputs[0];
  }
  if (st == MIL_OK && has_bias) {
    int64_t shape4[4] = {1, 3, 1, 1};
    mil_value *y = gray ? const_of(c->p, dt, 0, NULL, bias, 1)
                        : const_of(c->p, dt, t->rank, t->rank == 4 ? shape4 : shape4 + 1, bias, 3);
    snprintf(name, len, "%s__biased__", in->name);
    pass_barg a[] = {PASS_BV("x", last), PASS_BK("y", y)};
    mil_op *op = y ? pass_bld_op(c, b, anchor, "add", name, 2, a, &st) : NULL;
    if (!y) st = mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    if (op) {
      last_op = op;
      last = op->outputs[0];
    }
  }
  free(name);
  if (st != MIL_OK || !last_op) return st;
  pass_bld_replace_range(b, last_op, NULL, in, last);
  c->changes++;
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_function *f = mil_program_find_function(p, "main");
  const mil_value *names = f ? mil_function_get_attr(f, "image_inputs") : NULL;
  mil_block *b = f ? mil_function_body(f) : NULL;
  if (!names || !b || !b->first) return MIL_OK;
  int64_t n = names->kind == MIL_VAL_TENSOR && names->type ? names->numel : -1;
  const mil_value *scales = mil_function_get_attr(f, "image_scales"), *biases = mil_function_get_attr(f, "image_biases");
  const mil_value *layouts = mil_function_get_attr(f, "image_color_layouts");
  if (!tensor_of(names, MIL_DT_STRING, n) || !tensor_of(scales, MIL_DT_FP32, n) ||
      !tensor_of(biases, MIL_DT_FP32, 3 * n) || !tensor_of(layouts, MIL_DT_STRING, n))
    return mil_diag_error(d, MIL_ERR_INVALID, PASS ": function 'main': the attributes image_inputs, image_scales "
                          "(fp32, one per input), image_biases (fp32, three per input) and image_color_layouts "
                          "(string, one per input) do not agree");
  const float *sc = mil_value_data(scales), *bi = mil_value_data(biases);
  if (!sc || !bi) return mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  mil_status st = MIL_OK;
  for (int64_t k = 0; k < n && st == MIL_OK; k++) {
    const char *want = mil_value_get_str(names, k), *layout = mil_value_get_str(layouts, k);
    mil_var *in = NULL;
    for (int32_t i = 0; i < f->n_inputs && !in; i++)
      if (want && strcmp(f->inputs[i]->name, want) == 0) in = f->inputs[i];
    if (!in) continue;
    bool gray = layout && layout[0] == 'G';
    st = preprocess(&c, f, in, sc[k], bi + 3 * k, gray);
  }
  if (stats) stats->changes += c.changes;
  pass_bld_free(&c);
  return st;
}

const mil_pass_def pass_def_mil_backend_insert_image_preprocessing_ops = {
    "mil_backend::" PASS, "add scale/bias preprocessing after image inputs", NULL, 0, run, NULL};
