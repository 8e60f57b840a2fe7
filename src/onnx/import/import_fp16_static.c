/* The static fp16 check of an ONNX import without sample inputs: value
 * ranges propagated through main's body where they are cheaply known
 * (consts, integer graph inputs by their declared ONNX type -- int16 audio
 * spans +-32768 -- and the ops below), and a warning for each op whose
 * range goes beyond fp16's 65504 although the fp16 conversion computes it
 * in fp16 (add_fp16_cast leaves an op with an out-of-range const input in
 * fp32 itself). Run at the end of an import for mil_convert's fp16
 * conversions without sample inputs (mil_onnx_options.fp16_range_check).
 * Ops: cast, identity, relu, abs, neg, sqrt, exp, square, pow with a const
 * exponent, add, sub, mul, real_div by a range that
 * excludes 0, maximum, minimum, reduce_sum / reduce_mean / reduce_sum_square
 * over static dims, matmul and conv with a const weight (|x| times the
 * largest row sum of |w|). A range not known stops there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import/import_internal.h"

typedef struct range {
  double lo, hi;
} range;

#define FP16_MAX 65504.0

static const range *rg(const mil_var *v) { return v ? (const range *)v->aux : NULL; }

static const range *in_rg(const mil_op *op, const char *name) { return rg(mil_op_input_var(op, name)); }

static double amax(const range *r) { return fmax(fabs(r->lo), fabs(r->hi)); }

static range prod(range a, range b) {
  double c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
  range r = {c[0], c[0]};
  for (int i = 1; i < 4; i++) r.lo = fmin(r.lo, c[i]), r.hi = fmax(r.hi, c[i]);
  return r;
}

/* Elements summed into one output of reduce op over its static axes; 0
 * when unknown. */
static double reduce_count(const mil_op *op) {
  const mil_var *x = mil_op_input_var(op, "x"), *axes = mil_op_input_var(op, "axes");
  if (!x || x->type->rank < 0) return 0;
  double n = 1;
  for (int32_t k = 0; k < x->type->rank; k++) {
    bool in = !axes;
    for (int64_t j = 0; axes && axes->val && j < axes->val->numel; j++) {
      int64_t a = (int64_t)mil_value_get_f64(axes->val, j);
      in |= (a < 0 ? a + x->type->rank : a) == k;
    }
    if (axes && !axes->val) return 0;
    if (in && x->type->dims[k].size < 0) return 0;
    if (in) n *= (double)x->type->dims[k].size;
  }
  return n;
}

/* Largest sum of |w| over what one output element reads (all but axis 0
 * for conv's (Cout, Cin, k...) weight; a column of matmul's y). */
static double weight_rowsum(const mil_value *w, bool conv) {
  if (!w || w->type->rank < 1) return NAN;
  int64_t n = w->numel, rows = conv ? w->type->dims[0].size : w->type->dims[w->type->rank - 1].size;
  if (rows <= 0) return NAN;
  double best = 0;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    if (conv)
      for (int64_t i = r * (n / rows); i < (r + 1) * (n / rows); i++) s += fabs(mil_value_get_f64(w, i));
    else
      for (int64_t i = r; i < n; i += rows) s += fabs(mil_value_get_f64(w, i));
    best = fmax(best, s);
  }
  return best;
}

static bool infer(const mil_op *op, range *out) {
  const char *t = op->type;
  const range *x = in_rg(op, "x"), *y = in_rg(op, "y");
  if (!strcmp(t, "cast") || !strcmp(t, "identity") || !strcmp(t, "reshape") || !strcmp(t, "transpose") ||
      !strcmp(t, "expand_dims") || !strcmp(t, "squeeze") || !strcmp(t, "slice_by_index")) {
    if (!x) return false;
    *out = *x;
    return true;
  }
  if (!strcmp(t, "relu") && x) return *out = (range){fmax(x->lo, 0), fmax(x->hi, 0)}, true;
  if (!strcmp(t, "abs") && x) return *out = (range){x->lo > 0 ? x->lo : x->hi < 0 ? -x->hi : 0, amax(x)}, true;
  if (!strcmp(t, "sqrt") && x) return *out = (range){sqrt(fmax(x->lo, 0)), sqrt(fmax(x->hi, 0))}, true;
  if (!strcmp(t, "exp") && x) return *out = (range){exp(x->lo), exp(x->hi)}, true;
  if (!strcmp(t, "square") && x) return *out = (range){0, amax(x) * amax(x)}, true;
  if (!strcmp(t, "pow") && x) {
    const mil_var *e = mil_op_input_var(op, "y");
    if (!e || !e->val || e->val->numel != 1) return false;
    double p = mil_value_get_f64(e->val, 0);
    if (p < 0 || p != floor(p)) return false;
    double m = pow(amax(x), p);
    return *out = (range){fmod(p, 2) == 0 ? 0 : -m, m}, true;
  }
  if (x && y) {
    if (!strcmp(t, "add")) return *out = (range){x->lo + y->lo, x->hi + y->hi}, true;
    if (!strcmp(t, "sub")) return *out = (range){x->lo - y->hi, x->hi - y->lo}, true;
    if (!strcmp(t, "mul")) return *out = prod(*x, *y), true;
    if (!strcmp(t, "maximum")) return *out = (range){fmax(x->lo, y->lo), fmax(x->hi, y->hi)}, true;
    if (!strcmp(t, "minimum")) return *out = (range){fmin(x->lo, y->lo), fmin(x->hi, y->hi)}, true;
    if (!strcmp(t, "real_div") && (y->lo > 0 || y->hi < 0)) return *out = prod(*x, (range){1 / y->hi, 1 / y->lo}), true;
  }
  if (x && (!strcmp(t, "reduce_sum") || !strcmp(t, "reduce_mean") || !strcmp(t, "reduce_sum_square"))) {
    double n = reduce_count(op);
    if (!(n > 0)) return false;
    if (!strcmp(t, "reduce_mean")) return *out = *x, true;
    if (!strcmp(t, "reduce_sum")) return *out = (range){x->lo * n, x->hi * n}, true;
    return *out = (range){0, amax(x) * amax(x) * n}, true;
  }
  if (x && (!strcmp(t, "matmul") || !strcmp(t, "conv") || !strcmp(t, "linear"))) {
    const mil_var *w = mil_op_input_var(op, !strcmp(t, "matmul") ? "y" : "weight");
    double s = weight_rowsum(w ? w->val : NULL, strcmp(t, "matmul") != 0);
    if (!(s >= 0)) return false;
    double m = amax(x) * s;
    const mil_var *b = mil_op_input_var(op, "bias");
    for (int64_t i = 0; b && b->val && i < b->val->numel; i++) m = fmax(m, amax(x) * s + fabs(mil_value_get_f64(b->val, i)));
    return *out = (range){-m, m}, true;
  }
  return false;
}

/* Whether add_fp16_cast leaves op in fp32 (mil_convert's selector): the
 * importer marked it, or it reads a marked op's int32 result through a
 * cast. */
static bool stays_fp32(const mil_op *op) {
  if (mil_op_get_attr(op, MIL_ONNX_KEEP_FP32_ATTR)) return true;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      if (!v || !v->op || strcmp(v->op->type, "cast") != 0) continue;
      const mil_var *src = mil_op_input_var(v->op, "x");
      if (src && src->op && src->type->dtype == MIL_DT_INT32 && mil_op_get_attr(src->op, MIL_ONNX_KEEP_FP32_ATTR))
        return true;
    }
  return false;
}

int32_t onnx_static_fp16_check(mil_program *p, const onnx_input_range *ins, int32_t n_ins, const char *path,
                               mil_diag *d) {
  mil_function *f = mil_program_find_function(p, "main");
  if (!f) return 0;
  mil_block *b = mil_function_body(f);
  int32_t n_ops = 0;
  for (const mil_op *op = b->first; op; op = op->next) n_ops++;
  range *store = calloc((size_t)(n_ops + f->n_inputs + 1), sizeof *store);
  if (!store) return 0;
  int32_t used = 0, warned = 0;
  for (int32_t i = 0; i < f->n_inputs; i++)
    for (int32_t k = 0; k < n_ins; k++)
      if (ins[k].name == f->inputs[i]->name) {
        store[used] = (range){ins[k].lo, ins[k].hi};
        f->inputs[i]->aux = &store[used++];
      }
  for (mil_op *op = b->first; op; op = op->next) {
    if (op->n_outputs < 1) continue;
    mil_var *v = op->outputs[0];
    range r;
    bool known;
    if (mil_op_is_const(op)) {
      known = v->val && mil_type_is_tensor(v->type) && v->val->numel > 0 &&
              (v->type->dtype == MIL_DT_FP32 || v->type->dtype == MIL_DT_INT32 || v->type->dtype == MIL_DT_FP16);
      if (known) {
        r = (range){INFINITY, -INFINITY};
        for (int64_t i = 0; i < v->val->numel; i++) {
          double e = mil_value_get_f64(v->val, i);
          r.lo = fmin(r.lo, e), r.hi = fmax(r.hi, e);
        }
      }
    } else
      known = infer(op, &r);
    if (!known || isnan(r.lo) || isnan(r.hi)) continue;
    store[used] = r;
    v->aux = &store[used++];
    bool fp_out = mil_type_is_tensor(v->type) && v->type->dtype == MIL_DT_FP32;
    if (!fp_out || mil_op_is_const(op) || amax(&r) <= FP16_MAX || stays_fp32(op)) continue;
    /* an input already beyond fp16 was reported at its producer */
    const range *x = in_rg(op, "x");
    if (x && amax(x) > FP16_MAX) continue;
    warned++;
    mil_diag_add(d, MIL_SEV_WARNING,
                 "%s: op '%s' (%s) can reach %.3g (from the inputs' declared types and the consts), beyond fp16's "
                 "65504, and the fp16 conversion computes it in fp16: give sample inputs (--sample NAME=FILE) to keep "
                 "what overflows in fp32, or --precision fp32",
                 path, op->name, op->type, amax(&r));
  }
  for (int32_t i = 0; i < f->n_inputs; i++) f->inputs[i]->aux = NULL;
  for (mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->aux = NULL;
  free(store);
  return warned;
}
