/* common::scaled_dot_product_attention_sliced_q — compute a long
 * scaled_dot_product_attention (iOS18) in slices of Q, which needs far
 * less memory: for each slice, softmax(Q_slice K^T / sqrt(d) + mask_slice)
 * V, and the slices are concatenated along the sequence axis.
 *
 * With min_seq_length = 8 and seq_length_divider = 2:
 *
 *   main[CoreML8](%q: (1, 8, 4, fp32)(Tensor), %k: (1, 6, 4, fp32)(Tensor), %v: (1, 6, 4, fp32)(Tensor)) {
 *     block0() {
 *       %a: (1, 8, 4, fp32)(Tensor) = scaled_dot_product_attention(query=%q, key=%k, value=%v, name="a")
 *     } -> (%a)
 *   }
 *
 * becomes, per slice [0, 4) and [4, 8) (consts not shown):
 *
 *       %slice_by_index_0: (1, 4, 4, fp32)(Tensor) = slice_by_index(x=%q, begin=[0, 0, 0], end=[1, 4, 4], end_mask=[True, False, True], name="slice_by_index_0")
 *       %matmul_0: (1, 4, 6, fp32)(Tensor) = matmul(x=%slice_by_index_0, y=%k, transpose_x=False, transpose_y=True, name="matmul_0")
 *       %mul_0: (1, 4, 6, fp32)(Tensor) = mul(x=%matmul_0, y=0.5, name="mul_0")
 *       %softmax_0: (1, 4, 6, fp32)(Tensor) = softmax(x=%mul_0, axis=-1, name="softmax_0")
 *       %matmul_1: (1, 4, 4, fp32)(Tensor) = matmul(x=%softmax_0, y=%v, transpose_x=False, transpose_y=False, name="matmul_1")
 *       %concat_0: (1, 4, 4, fp32)(Tensor) = concat(values=(%matmul_1), axis=-2, interleave=False, name="concat_0")
 *       ... the second slice ...
 *       %a: (1, 8, 4, fp32)(Tensor) = concat(values=(%concat_0, %matmul_3), axis=-2, interleave=False, name="concat_1")
 *
 * A bool mask is first turned into an additive one (select(not mask,
 * -inf, 0)); a mask whose second-to-last dim is not 1 is sliced like Q.
 * Slices: count = seq_length_divider, size seq_length / count (at least
 * 1), the first seq_length % count slices one longer. Attention whose Q
 * sequence length is below min_seq_length (or not static) stays. Only ops
 * at the top level of function bodies are visited, and, as in coremltools,
 * nothing at all happens when the first function's opset is before iOS18.
 *
 * Options: min_seq_length (default 1280, >= 0), seq_length_divider
 * (default 16, >= 1).
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/transformer.py
 * (scaled_dot_product_attention_sliced_q).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "scaled_dot_product_attention_sliced_q"

static mil_value *bools(mil_program *p, int32_t n, const bool *b) {
  int64_t shape[1] = {n};
  mil_value *v = mil_value_new_tensor(p, MIL_DT_BOOL, 1, shape, false, NULL);
  for (int32_t i = 0; v && i < n; i++) mil_value_set_i64(v, i, b[i]);
  return v;
}

static int replace(pass_bld *c, mil_op *op, int64_t min_len, int64_t divider) {
  mil_program *p = c->p;
  mil_var *q = mil_op_input_var(op, "query"), *k = mil_op_input_var(op, "key"), *v = mil_op_input_var(op, "value");
  mil_var *mask = mil_op_input_var(op, "attn_mask");
  if (!q || !k || !v) {
    mil_diag_error(c->d, MIL_ERR_INVALID, PASS ": op '%s' (scaled_dot_product_attention) lacks query, key or value",
                   op->name);
    return -(int)MIL_ERR_INVALID;
  }
  const mil_type *qt = q->type;
  if (!mil_type_is_static(qt) || qt->rank < 2 || qt->rank > 60) return 0;
  int32_t r = qt->rank;
  int64_t seq = qt->dims[r - 2].size, dims = qt->dims[r - 1].size;
  if (seq < min_len) return 0;
  mil_dtype qdt = qt->dtype;
  double factor = pow((double)dims, -0.5);
  if (mask) {
    const mil_type *mt = mask->type;
    if (!mt || mt->kind != MIL_TYPE_TENSOR || mt->rank < 2) return 0;
    if (mt->dims[mt->rank - 2].size != 1 && mt->dims[mt->rank - 1].size < 0) return 0;
  }
  mil_status st = MIL_OK;
  mil_var *mask_f = mask;
  if (mask && pass_bld_dtype(mask) == MIL_DT_BOOL) {
    const mil_type *mt = mask->type;
    if (!mil_type_is_static(mt) || mt->rank > 60) return 0;
    pass_barg na[] = {PASS_BV("x", mask)};
    mil_var *notm = pass_bld_var(c, NULL, op, "logical_not", NULL, 1, na, &st);
    if (!notm) return -(int)st;
    int64_t ms[64];
    for (int32_t i = 0; i < mt->rank; i++) ms[i] = mt->dims[i].size;
    mil_value *zeros = mil_value_new_tensor(p, qdt, mt->rank, ms, false, NULL);
    pass_names *names = pass_bld_names(c);
    const char *zn = names ? pass_names_fresh(names, p, "const") : NULL;
    mil_var *zv = zeros && zn ? pass_const_named_before(op, names, zn, zeros) : NULL;
    mil_value *ninf = mil_value_new_scalar_f64(p, qdt, -INFINITY);
    if (!zv || !ninf) return -(int)MIL_ERR_NOMEM;
    pass_barg sa[] = {PASS_BV("cond", notm), PASS_BK("a", ninf), PASS_BV("b", zv)};
    if (!(mask_f = pass_bld_var(c, NULL, op, "select", NULL, 3, sa, &st))) return -(int)st;
  }
  int64_t count = divider, chunk = seq / count > 1 ? seq / count : 1, rem = seq % count, start = 0;
  mil_var *concat = NULL;
  for (int64_t i = 0; i < count && start < seq; i++) {
    int64_t end = start + chunk + (i < rem ? 1 : 0);
    int64_t b[64], e[64];
    bool em[64];
    for (int32_t j = 0; j < r - 2; j++) {
      b[j] = 0;
      e[j] = qt->dims[j].size;
      em[j] = true;
    }
    b[r - 2] = start;
    b[r - 1] = 0;
    e[r - 2] = end;
    e[r - 1] = dims;
    em[r - 2] = false;
    em[r - 1] = true;
    mil_value *bv = pass_bld_i32s(p, r, b), *ev = pass_bld_i32s(p, r, e), *emv = bools(p, r, em);
    mil_value *f = mil_value_new_tensor(p, qdt, 0, NULL, false, NULL);
    mil_value *tf = mil_value_new_bool(p, false), *tt = mil_value_new_bool(p, true);
    mil_value *axis = pass_bld_i32(p, -1), *caxis = pass_bld_i32(p, -2);
    if (!bv || !ev || !emv || !f || !tf || !tt || !axis || !caxis) return -(int)MIL_ERR_NOMEM;
    mil_value_set_f64(f, 0, factor);
    pass_barg sl[] = {PASS_BV("x", q), PASS_BK("begin", bv), PASS_BK("end", ev), PASS_BK("end_mask", emv)};
    mil_var *qs = pass_bld_var(c, NULL, op, "slice_by_index", NULL, 4, sl, &st);
    if (!qs) return -(int)st;
    pass_barg m1[] = {PASS_BV("x", qs), PASS_BV("y", k), PASS_BK("transpose_x", tf), PASS_BK("transpose_y", tt)};
    mil_var *mm = pass_bld_var(c, NULL, op, "matmul", NULL, 4, m1, &st);
    if (!mm) return -(int)st;
    pass_barg mu[] = {PASS_BV("x", mm), PASS_BK("y", f)};
    mil_var *scaled = pass_bld_var(c, NULL, op, "mul", NULL, 2, mu, &st);
    if (!scaled) return -(int)st;
    if (mask) {
      const mil_type *mt = mask->type;
      mil_var *madd = mask_f;
      if (mt->dims[mt->rank - 2].size != 1) {
        int64_t mb_[2] = {start, 0}, me[2] = {end, mt->dims[mt->rank - 1].size};
        bool mem[2] = {false, true};
        mil_value *mbv = pass_bld_i32s(p, 2, mb_), *mev = pass_bld_i32s(p, 2, me), *memv = bools(p, 2, mem);
        if (!mbv || !mev || !memv) return -(int)MIL_ERR_NOMEM;
        pass_barg ms[] = {PASS_BV("x", mask_f), PASS_BK("begin", mbv), PASS_BK("end", mev), PASS_BK("end_mask", memv)};
        if (!(madd = pass_bld_var(c, NULL, op, "slice_by_index", NULL, 4, ms, &st))) return -(int)st;
      }
      pass_barg ad[] = {PASS_BV("x", scaled), PASS_BV("y", madd)};
      if (!(scaled = pass_bld_var(c, NULL, op, "add", NULL, 2, ad, &st))) return -(int)st;
    }
    pass_barg sm[] = {PASS_BV("x", scaled), PASS_BK("axis", axis)};
    mil_var *soft = pass_bld_var(c, NULL, op, "softmax", NULL, 2, sm, &st);
    if (!soft) return -(int)st;
    pass_barg m2[] = {PASS_BV("x", soft), PASS_BV("y", v), PASS_BK("transpose_x", tf), PASS_BK("transpose_y", tf)};
    mil_var *att = pass_bld_var(c, NULL, op, "matmul", NULL, 4, m2, &st);
    if (!att) return -(int)st;
    mil_var *vals[2] = {concat, att};
    pass_barg cc[] = {{.name = "values", .vars = concat ? vals : vals + 1, .n = concat ? 2 : 1},
                      PASS_BK("axis", caxis), PASS_BK("interleave", tf)};
    if (!(concat = pass_bld_var(c, NULL, op, "concat", NULL, 3, cc, &st))) return -(int)st;
    start = end;
  }
  if (!concat) return 0;
  pass_replace_uses_after(op, op->outputs[0], concat);
  st = pass_remove_ops(&op, 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  int64_t min_len = mil_pass_opt_int(o, "min_seq_length"), divider = mil_pass_opt_int(o, "seq_length_divider");
  if (min_len < 0) return mil_diag_error(d, MIL_ERR_INVALID, PASS ": min_seq_length must be >= 0");
  if (divider < 1) return mil_diag_error(d, MIL_ERR_INVALID, PASS ": seq_length_divider must be >= 1");
  pass_bld c = {.p = p, .d = d, .pass = PASS};
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    if (mil_opset_version(f->opset) < MIL_IOS18) break; /* coremltools returns here */
    mil_block *b = mil_function_body(f);
    int32_t n = 0;
    mil_op **ops = malloc(((size_t)(b ? b->n_ops : 0) + 1) * sizeof *ops);
    if (!ops) {
      st = mil_diag_error(d, MIL_ERR_NOMEM, PASS ": out of memory");
      break;
    }
    for (mil_op *op = b ? b->first : NULL; op; op = op->next) ops[n++] = op;
    for (int32_t k = 0; k < n && st == MIL_OK; k++) {
      if (ops[k]->block != b || strcmp(ops[k]->type, "scaled_dot_product_attention") != 0) continue;
      int r = replace(&c, ops[k], min_len, divider);
      if (r < 0) st = (mil_status)(-r);
      else c.changes += r;
    }
    free(ops);
  }
  pass_bld_free(&c);
  if (stats) stats->changes += c.changes;
  return st;
}

static const mil_pass_option_def k_options[] = {
    {"min_seq_length", MIL_POPT_INT, "1280", true, false, 0, 0,
     "only attention whose Q sequence length is at least this is sliced"},
    {"seq_length_divider", MIL_POPT_INT, "16", true, false, 1, 0,
     "Q is processed in chunks of seq_length / seq_length_divider"},
};

static const char *const k_anchors[] = {"scaled_dot_product_attention", NULL};
const mil_pass_def pass_def_scaled_dot_product_attention_sliced_q = {
    "common::" PASS, "compute long-sequence attention in slices of Q", k_options, 2, run, k_anchors};
