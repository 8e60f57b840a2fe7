/* Helpers shared by the passes: the rewrite driver, use queries, known
 * values, values of marked vars. Fresh names, consts, replacing and
 * removing are the builder's (src/build/build_util.c).
 *
 * Mirrors coremltools' passes/helper.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/pass_internal.h"
/* ---------- walking and the rewrite driver ---------- */

typedef struct drive {
  pass_op_fn fn;
  void *ud;
  mil_diag *d;
  int64_t changes;
  mil_status st;
} drive;

/* One sweep over block b; nested blocks of an op before the op. */
static void sweep_block(drive *dr, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    dr->st = mil_diag_error(dr->d, MIL_ERR_UNSUPPORTED, "blocks nested deeper than %d levels", PASS_MAX_DEPTH);
    return;
  }
  /* Bound the visits so a callback that keeps creating matching ops after
   * itself cannot loop forever within one sweep. */
  int64_t budget = 4 * (int64_t)b->n_ops + 1024;
  mil_op *op = b->first;
  while (op && dr->st == MIL_OK && budget-- > 0) {
    for (int32_t i = 0; i < op->n_blocks && dr->st == MIL_OK; i++) sweep_block(dr, op->blocks[i], depth + 1);
    if (dr->st != MIL_OK) return;
    mil_op *prev = op->prev, *next = op->next;
    int r = dr->fn(op, dr->ud);
    if (r < 0) {
      dr->st = (mil_status)(-r);
      return;
    }
    if (r == 0) {
      op = next;
      continue;
    }
    dr->changes += r;
    if (op->block == b) op = op->next;
    else if (prev && prev->block == b) op = prev->next;
    else if (next && next->block == b) op = next;
    else op = b->first;
  }
}

static void sweep_function(drive *dr, mil_function *f) {
  for (int32_t s = 0; s < f->n_specs && dr->st == MIL_OK; s++) sweep_block(dr, f->specs[s].block, 0);
}

mil_status pass_rewrite_ops(mil_program *p, pass_op_fn fn, void *ud, int max_sweeps, mil_pass_stats *st,
                            mil_diag *d) {
  if (max_sweeps <= 0) max_sweeps = 1000;
  drive dr = {fn, ud, d, 0, MIL_OK};
  for (int sweep = 0; sweep < max_sweeps; sweep++) {
    int64_t before = dr.changes;
    for (int32_t i = 0; i < p->n_functions && dr.st == MIL_OK; i++) sweep_function(&dr, p->functions[i]);
    if (dr.st != MIL_OK || dr.changes == before) break;
  }
  if (st) st->changes += dr.changes;
  return dr.st;
}

static int each_block(mil_block *b, pass_block_fn fn, void *ud, int64_t *changes, mil_diag *d, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(d, MIL_ERR_UNSUPPORTED, "blocks nested deeper than %d levels", PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  int r = fn(b, ud);
  if (r < 0) return r;
  *changes += r;
  for (mil_op *op = b->first; op; op = op->next)
    for (int32_t i = 0; i < op->n_blocks; i++) {
      r = each_block(op->blocks[i], fn, ud, changes, d, depth + 1);
      if (r < 0) return r;
    }
  return 0;
}

mil_status pass_for_each_block(mil_program *p, pass_block_fn fn, void *ud, mil_pass_stats *st, mil_diag *d) {
  int64_t changes = 0;
  int r = 0;
  for (int32_t i = 0; i < p->n_functions && r >= 0; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs && r >= 0; s++) r = each_block(f->specs[s].block, fn, ud, &changes, d, 0);
  }
  if (st) st->changes += changes;
  return r < 0 ? (mil_status)(-r) : MIL_OK;
}

mil_function *pass_op_function(const mil_op *op) {
  const mil_block *b = op ? op->block : NULL;
  for (int depth = 0; b && depth <= PASS_MAX_DEPTH; depth++) {
    if (b->func) return b->func;
    if (!b->parent) return NULL;
    b = b->parent->block;
  }
  return NULL;
}

int pass_op_opset(const mil_op *op) {
  const mil_function *f = pass_op_function(op);
  return f && f->opset ? mil_opset_version(f->opset) : -1;
}

/* ---------- uses ---------- */

bool pass_has_single_use(const mil_var *v) { return v->n_uses == 1 && v->uses && v->uses->op; }

mil_op *pass_single_child(const mil_var *v) {
  mil_op *c = NULL;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) return NULL;
    if (c && c != u->op) return NULL;
    c = u->op;
  }
  return c;
}

bool pass_child_op_type(const mil_op *op, const char *type) {
  if (op->n_outputs != 1) return false;
  mil_op *c = pass_single_child(op->outputs[0]);
  return c && strcmp(c->type, type) == 0;
}

int32_t pass_child_ops(const mil_var *v, mil_op **out, int32_t max) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) continue;
    bool seen = false;
    /* uses of one op are usually adjacent; a short scan back suffices for
     * the common case, a full scan keeps it exact */
    for (const mil_use *w = v->uses; w != u && !seen; w = w->next_use) seen = w->op == u->op;
    if (seen) continue;
    if (n < max) out[n] = u->op;
    n++;
  }
  return n;
}

bool pass_op_feeds_block_output(const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (mil_var_is_block_output(op->outputs[i])) return true;
  return false;
}

bool pass_no_output_connection(mil_op *const *ops, int32_t n) {
  for (int32_t i = 0; i + 1 < n; i++)
    if (pass_op_feeds_block_output(ops[i])) return false;
  return true;
}

/* ---------- values ---------- */

bool pass_var_is_const(const mil_var *v) { return v && v->op && mil_op_is_const(v->op); }

static bool is_numeric_tensor(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return false;
  mil_dtype dt = v->type->dtype;
  return dt != MIL_DT_STRING && !mil_dtype_is_complex(dt);
}

bool pass_var_scalar(const mil_var *v, double *out) {
  const mil_value *val = pass_var_value(v);
  if (!is_numeric_tensor(val) || val->numel != 1) return false;
  *out = mil_value_get_f64(val, 0);
  return true;
}

bool pass_var_is_scalar(const mil_var *v, double x, double tol) {
  double y;
  return pass_var_scalar(v, &y) && fabs(y - x) < tol;
}

bool pass_var_scalar_in(const mil_var *v, double lo, double hi) {
  double y;
  return pass_var_scalar(v, &y) && y >= lo && y <= hi;
}

bool pass_value_all_equal(const mil_value *v, double x) {
  if (!is_numeric_tensor(v)) return false;
  for (int64_t i = 0; i < v->numel; i++)
    if (mil_value_get_f64(v, i) != x) return false;
  return true;
}

/* ---------- values of marked vars ---------- */

static mil_status infer_marked_block(mil_block *b, int depth, int64_t *left, mil_diag *d) {
  if (depth > PASS_MAX_DEPTH)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "blocks nested deeper than %d levels", PASS_MAX_DEPTH);
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++) {
      mil_status st = infer_marked_block(op->blocks[i], depth + 1, left, d);
      if (st != MIL_OK) return st;
    }
    if (mil_op_is_const(op) || op->n_outputs == 0) continue;
    bool want = false;
    for (int32_t i = 0; i < op->n_outputs && !want; i++)
      want = op->outputs[i]->mark == MIL_MARK_VALUE && !op->outputs[i]->val;
    if (!want) continue;
    const mil_type *stack_t[8];
    const mil_value *stack_v[8];
    const mil_type **types = stack_t;
    const mil_value **vals = stack_v;
    if (op->n_outputs > 8) {
      types = mil_program_alloc(op->program, (size_t)op->n_outputs * sizeof *types);
      vals = mil_program_alloc(op->program, (size_t)op->n_outputs * sizeof *vals);
      if (!types || !vals) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory inferring values");
    }
    memset(vals, 0, (size_t)op->n_outputs * sizeof *vals);
    mil_status st = mil_op_infer_types(op, types, vals, NULL);
    if (st == MIL_ERR_NOMEM) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory inferring values");
    for (int32_t i = 0; i < op->n_outputs; i++) {
      mil_var *v = op->outputs[i];
      if (st == MIL_OK && v->mark == MIL_MARK_VALUE && !v->val && vals[i]) v->val = vals[i];
      if (v->mark == MIL_MARK_VALUE && !v->val) (*left)++;
    }
  }
  return MIL_OK;
}

mil_status pass_infer_marked_values(mil_program *p, mil_diag *d) {
  if (!p->marks_pending) return MIL_OK; /* nothing was marked without its value since the last walk */
  int64_t left = 0;
  for (int32_t i = 0; i < p->n_functions; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs; s++) {
      mil_status st = infer_marked_block(f->specs[s].block, 0, &left, d);
      if (st != MIL_OK) return st;
    }
  }
  p->marks_pending = left > 0;
  return MIL_OK;
}

/* ---------- op uses ---------- */

int32_t pass_n_op_uses(const mil_var *v) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) n++;
  return n;
}

mil_op *pass_only_child_op(const mil_var *v) {
  mil_op *c = NULL;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) continue;
    if (c) return NULL;
    c = u->op;
  }
  return c;
}
