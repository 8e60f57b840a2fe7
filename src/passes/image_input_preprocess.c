/* common::image_input_preprocess — an image input the user declared
 * channel-last (ct.ImageType(channel_first=False)) becomes a channel-first
 * input followed by a transpose back to the layout the program expects.
 *
 *   main(%img: (1, 224, 224, 3, fp32)(Tensor)) { ... uses of %img ... }
 *
 * becomes
 *
 *   main(%img: (1, 3, 224, 224, fp32)(Tensor)) {
 *     block0() {
 *       %img__transpose_from_nchw___perm_0: (4,int32)*(Tensor) = const(val=[0, 2, 3, 1], name="img__transpose_from_nchw___perm_0")
 *       %img__transpose_from_nchw__: (1, 224, 224, 3, fp32)(Tensor) = transpose(x=%img, perm=%img__transpose_from_nchw___perm_0, name="img__transpose_from_nchw__")
 *       ... uses of %img__transpose_from_nchw__ ...
 *
 * The declaration lives only in coremltools' conversion-time input types
 * (Function.input_types), which no model file or MIL text carries: a
 * program loaded from disk has none, and coremltools' pass then changes
 * nothing. libmil reads the same declaration from the main function's
 * attribute "channel_last_image_inputs": a string tensor value with the
 * names of the image inputs to make channel-first. Without it the pass
 * changes nothing. Inputs of rank < 3 or unknown rank are skipped.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/preprocess.py
 * (image_input_preprocess).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "image_input_preprocess"

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  mil_function *f = mil_program_find_function(p, "main");
  const mil_value *decl = f ? mil_function_get_attr(f, "channel_last_image_inputs") : NULL;
  if (!decl || decl->kind != MIL_VAL_TENSOR || !decl->type || decl->type->dtype != MIL_DT_STRING) return MIL_OK;
  mil_block *b = mil_function_body(f);
  if (!b) return MIL_OK;
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  mil_status st = MIL_OK;
  for (int64_t k = 0; k < decl->numel && st == MIL_OK; k++) {
    const char *want = mil_value_get_str(decl, k);
    mil_var *in = NULL;
    for (int32_t i = 0; i < f->n_inputs && !in; i++)
      if (want && strcmp(f->inputs[i]->name, want) == 0) in = f->inputs[i];
    if (!in || !in->type || in->type->kind != MIL_TYPE_TENSOR || in->type->rank < 3 || in->type->rank > 64) continue;
    const mil_type *t = in->type;
    int32_t r = t->rank;
    /* (..., H, W, C) -> (..., C, H, W) */
    mil_dim dims[64];
    for (int32_t i = 0; i < r - 3; i++) dims[i] = t->dims[i];
    dims[r - 3] = t->dims[r - 1];
    dims[r - 2] = t->dims[r - 3];
    dims[r - 1] = t->dims[r - 2];
    const mil_type *nt = mil_type_tensor(p, t->dtype, r, dims);
    int64_t perm[64];
    for (int32_t i = 0; i < r - 3; i++) perm[i] = i;
    perm[r - 3] = r - 2;
    perm[r - 2] = r - 1;
    perm[r - 1] = r - 3;
    mil_value *pv = pass_bld_i32s(p, r, perm);
    size_t len = strlen(in->name) + 32;
    char *name = malloc(len);
    if (!nt || !pv || !name) {
      free(name);
      st = mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    snprintf(name, len, "%s__transpose_from_nchw__", in->name);
    /* the input keeps its var (and name) with the new type; every use moves
     * to the transpose */
    const mil_type *old_t = in->type;
    in->type = nt;
    pass_barg a[] = {PASS_BV("x", in), PASS_BK("perm", pv)};
    mil_op *tp = pass_bld_op(&c, b, b->first, "transpose", name, 2, a, &st);
    free(name);
    if (!tp) {
      in->type = old_t;
      break;
    }
    /* every use of the input except the transpose itself */
    mil_use *u = in->uses;
    while (u) {
      mil_use *next = u->next_use;
      if (u->op != tp) {
        if (u->op) mil_arg_set_var(u->op, (mil_arg *)u, tp->outputs[0]);
        else mil_block_set_output(u->block, (int32_t)(u - u->block->outputs), tp->outputs[0]);
      }
      u = next;
    }
    c.changes++;
  }
  pass_bld_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_image_input_preprocess = {
    "common::" PASS, "make image inputs channel-first with a transpose", NULL, 0, run, NULL};
