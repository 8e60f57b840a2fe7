/* common::noop_elimination — remove ops that return their input unchanged.
 *
 *   main(%x: (1, 96, 128, fp32)(Tensor)) {
 *     block0() {
 *       %s: (3,int32)*(Tensor) = const(val=[1, 96, 128], name="s")
 *       %r: (1, 96, 128, fp32)(Tensor) = reshape(x=%x, shape=%s, name="r")
 *       %z: (fp32)*(Scalar) = const(val=0.0, name="z")
 *       %a: (1, 96, 128, fp32)(Tensor) = add(x=%r, y=%z, name="a")
 *       %o: (1, 96, 128, fp32)(Tensor) = relu(x=%a, name="o")
 *     } -> (%o)
 *   }
 *
 * becomes
 *
 *   main(%x: (1, 96, 128, fp32)(Tensor)) {
 *     block0() {
 *       %s: (3,int32)*(Tensor) = const(val=[1, 96, 128], name="s")
 *       %z: (fp32)*(Scalar) = const(val=0.0, name="z")
 *       %o: (1, 96, 128, fp32)(Tensor) = relu(x=%x, name="o")
 *     } -> (%o)
 *   }
 *
 * Candidates (single-output ops whose output is not an output of their own
 * block; ops with nested blocks are never candidates):
 *   identity                                   always
 *   add (x or y all 0), mul (x or y all 1),     the kept operand has the
 *   sub (y all 0), real_div / pow (y all 1),    output's exact type (no
 *   floor_div (y all 1, integer x only)         broadcasting); x is tried first
 *   reshape, split, slice_by_size, pad, tile,   input type == output type
 *   upsample_*, resize_bilinear, crop
 *   slice_by_index                              same, and no negative stride
 *   transpose                                   perm is increasing
 *   linear_activation                           alpha == 1, beta == 0
 * An operand is "all v" when its value is known and every element equals v,
 * or it is produced by fill with value v. The removal happens only when the
 * output can be replaced by the input (coremltools' nonreplaceable-var rule
 * for constexpr outputs). Each block is swept until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/cleanup/
 * noop_elimination.py.
 */
#include <string.h>

#include "passes/pass_internal.h"

typedef struct noop {
  pass_nonrep *nr;
  int64_t changes;
  mil_diag *d;
} noop;

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

/* coremltools' has_all_elements_equal_to. */
static bool all_equal(const mil_var *v, double x) {
  if (!v) return false;
  if (v->val) return pass_value_all_equal(v->val, x);
  if (v->op && strcmp(v->op->type, "fill") == 0) {
    const mil_value *fv = pass_input_value(v->op, "value");
    if (!fv || fv->kind != MIL_VAL_TENSOR || fv->numel != 1 || !fv->type || fv->type->dtype == MIL_DT_STRING)
      return false;
    return mil_value_get_f64(fv, 0) == x;
  }
  return false;
}

static bool same_type(const mil_var *a, const mil_var *b) {
  return a && b && a->type && b->type && mil_type_equal(a->type, b->type);
}

/* Replaces op's output by v and removes op, when allowed. */
static int replace_by(noop *c, mil_op *op, mil_var *v) {
  mil_var *out = op->outputs[0];
  if (!v || !pass_nonrep_can_replace(c->nr, out, v)) return 0;
  if (!pass_replace_uses_after(op, out, v)) return 0;
  if (mil_op_remove(op) != MIL_OK) {
    mil_diag_error(c->d, MIL_ERR_INVALID, "noop_elimination: op '%s' (%s) is still used after its replacement",
                   op->name, op->type);
    return -(int)MIL_ERR_INVALID;
  }
  c->changes++;
  return 1;
}

/* Elementwise binary ops: x_ident / y_ident are the identity values of the
 * x / y operand (has_x / has_y false when that side is not checked). */
static int remove_binary(noop *c, mil_op *op, bool has_x, double x_ident, bool has_y, double y_ident) {
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  mil_var *keep;
  if (has_x && all_equal(x, x_ident)) keep = y;
  else if (has_y && all_equal(y, y_ident)) keep = x;
  else return 0;
  if (!same_type(keep, op->outputs[0])) return 0;
  return replace_by(c, op, keep);
}

static int remove_same_type(noop *c, mil_op *op) {
  mil_var *x = mil_op_input_var(op, "x");
  if (!same_type(x, op->outputs[0])) return 0;
  return replace_by(c, op, x);
}

static int remove_slice_by_index(noop *c, mil_op *op) {
  mil_var *x = mil_op_input_var(op, "x");
  if (!same_type(x, op->outputs[0])) return 0;
  const mil_value *stride = pass_input_value(op, "stride");
  if (stride && stride->kind == MIL_VAL_TENSOR)
    for (int64_t i = 0; i < stride->numel; i++)
      if (mil_value_get_f64(stride, i) < 0) return 0;
  return replace_by(c, op, x);
}

static int remove_linear_activation(noop *c, mil_op *op) {
  const mil_value *alpha = pass_input_value(op, "alpha");
  const mil_value *beta = pass_input_value(op, "beta");
  if (!alpha || alpha->kind != MIL_VAL_TENSOR || alpha->numel != 1 || mil_value_get_f64(alpha, 0) != 1) return 0;
  if (mil_op_find_input(op, "beta") &&
      (!beta || beta->kind != MIL_VAL_TENSOR || beta->numel != 1 || mil_value_get_f64(beta, 0) != 0))
    return 0;
  return replace_by(c, op, mil_op_input_var(op, "x"));
}

static int remove_transpose(noop *c, mil_op *op) {
  const mil_value *perm = pass_input_value(op, "perm");
  if (!perm || perm->kind != MIL_VAL_TENSOR) return 0;
  int64_t n = perm->numel, prev = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t p = mil_value_get_i64(perm, i);
    if (p < 0) p += n;
    if (i > 0 && p < prev) return 0;
    prev = p;
  }
  return replace_by(c, op, mil_op_input_var(op, "x"));
}

static int try_op(noop *c, mil_op *op) {
  if (op->n_outputs < 1 || is_output_of(op->outputs[0], op->block)) return 0;
  const char *t = op->type;
  static const char *const same_shape_ops[] = {
      "reshape", "split", "slice_by_size", "pad", "tile", "upsample_nearest_neighbor", "upsample_bilinear",
      "resize_bilinear", "crop"};
  bool known = false;
  for (size_t i = 0; i < sizeof same_shape_ops / sizeof *same_shape_ops && !known; i++)
    known = strcmp(t, same_shape_ops[i]) == 0;
  if (known) return op->n_outputs == 1 ? remove_same_type(c, op) : 0;
  if (strcmp(t, "identity") == 0) return op->n_outputs == 1 ? replace_by(c, op, mil_op_input_var(op, "x")) : 0;
  if (strcmp(t, "add") == 0) return op->n_outputs == 1 ? remove_binary(c, op, true, 0, true, 0) : 0;
  if (strcmp(t, "mul") == 0) return op->n_outputs == 1 ? remove_binary(c, op, true, 1, true, 1) : 0;
  if (strcmp(t, "pow") == 0 || strcmp(t, "real_div") == 0)
    return op->n_outputs == 1 ? remove_binary(c, op, false, 0, true, 1) : 0;
  if (strcmp(t, "floor_div") == 0) {
    const mil_var *x = mil_op_input_var(op, "x");
    if (op->n_outputs != 1 || !x || !x->type || !mil_dtype_is_int(x->type->dtype)) return 0;
    return remove_binary(c, op, false, 0, true, 1);
  }
  if (strcmp(t, "sub") == 0) return op->n_outputs == 1 ? remove_binary(c, op, false, 0, true, 0) : 0;
  if (strcmp(t, "slice_by_index") == 0) return op->n_outputs == 1 ? remove_slice_by_index(c, op) : 0;
  if (strcmp(t, "transpose") == 0) return op->n_outputs == 1 ? remove_transpose(c, op) : 0;
  if (strcmp(t, "linear_activation") == 0) return op->n_outputs == 1 ? remove_linear_activation(c, op) : 0;
  return 0;
}

/* One sweep over b (nested blocks swept to a fixed point first). Returns
 * whether b changed, or -(status). */
static int sweep(noop *c, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "noop_elimination: blocks nested deeper than %d levels",
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  int changed = 0;
  mil_op *next;
  /* only the visited op is ever removed */
  for (mil_op *op = b->first; op; op = next) {
    next = op->next;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      int r;
      while ((r = sweep(c, op->blocks[i], depth + 1)) > 0) {
      }
      if (r < 0) return r;
    }
    if (op->n_blocks > 0) continue;
    int r = try_op(c, op);
    if (r < 0) return r;
    if (r > 0) changed = 1;
  }
  return changed;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  mil_status st = pass_infer_marked_values(p, d);
  if (st != MIL_OK) return st;
  noop c = {pass_nonrep_new(p), 0, d};
  if (!c.nr) return mil_diag_error(d, MIL_ERR_NOMEM, "noop_elimination: out of memory");
  for (int32_t fi = 0; fi < p->n_functions && st == MIL_OK; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int r;
      while ((r = sweep(&c, f->specs[s].block, 0)) > 0) {
      }
      if (r < 0) st = (mil_status)(-r);
    }
  }
  pass_nonrep_free(c.nr);
  if (stats) stats->changes += c.changes;
  return st;
}

const mil_pass_def pass_def_noop_elimination = {"common::noop_elimination",
                                                "remove ops that return their input unchanged", NULL, 0, run, NULL};
