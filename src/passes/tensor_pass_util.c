/* Helpers of the tensor-operation passes: building ops like coremltools'
 * Builder, value and use queries, and the block sweeps. See
 * tensor_pass_internal.h. */
#include <stdlib.h>
#include <string.h>

#include "passes/tensor_pass_internal.h"

void pass_t_free(pass_t_ctx *c) {
  pass_names_free(c->names);
  pass_nonrep_free(c->nonrep);
  c->names = NULL;
  c->nonrep = NULL;
}

int pass_t_oom(pass_t_ctx *c) {
  mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return -(int)MIL_ERR_NOMEM;
}

int pass_t_fail(pass_t_ctx *c, mil_status st, const char *msg, const char *what) {
  mil_diag_error(c->d, st, "%s: %s '%s'", c->pass, msg, what ? what : "");
  return -(int)st;
}

static pass_names *names_of(pass_t_ctx *c) {
  if (!c->names) c->names = pass_names_new(c->p);
  return c->names;
}

pass_names *pass_t_names(pass_t_ctx *c) { return names_of(c); }

const char *pass_t_fresh(pass_t_ctx *c, const char *prefix) {
  pass_names *n = names_of(c);
  return n ? pass_names_fresh(n, c->p, prefix) : NULL;
}

mil_op *pass_t_op(pass_t_ctx *c, mil_op *anchor, const char *type, const char *name) {
  pass_names *n = names_of(c);
  if (!n) return NULL;
  if (!name) name = pass_names_fresh(n, c->p, type);
  else if (!pass_names_add(n, name)) return NULL;
  mil_op *op = name ? mil_op_new(c->p, type, name) : NULL;
  if (op) mil_block_insert_before(anchor, op);
  return op;
}

void pass_t_var(mil_op *op, const char *input, mil_var *v) { mil_op_add_input(op, input, v); }

void pass_t_tuple(mil_op *op, const char *input, int32_t n, mil_var *const *vars) {
  mil_op_add_input_tuple(op, input, n, vars);
}

bool pass_t_const(pass_t_ctx *c, mil_op *op, const char *input, const mil_value *v) {
  pass_names *n = names_of(c);
  if (!n || !v) return false;
  mil_var *k = pass_const_before(op, n, op->name, input, v);
  if (!k) return false;
  mil_op_add_input(op, input, k);
  return true;
}

mil_status pass_t_finish(pass_t_ctx *c, mil_op *op) {
  mil_status st = pass_finish_op(op, c->d);
  if (st != MIL_OK) return st;
  pass_names *n = names_of(c);
  if (!n) return mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!pass_names_add(n, op->outputs[i]->name))
      return mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  if (c->nonrep && !pass_nonrep_note_op(c->nonrep, op))
    return mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return MIL_OK;
}

bool pass_t_can_replace(pass_t_ctx *c, const mil_var *old_var, const mil_var *new_var) {
  if (!c->nonrep && !(c->nonrep = pass_nonrep_new(c->p))) {
    c->oom_error = true;
    return false;
  }
  return pass_nonrep_can_replace(c->nonrep, old_var, new_var);
}

int pass_t_replace(pass_t_ctx *c, mil_op *anchor, mil_var *old_var, mil_var *new_var) {
  if (pass_replace_uses_after(anchor, old_var, new_var)) return 0;
  mil_diag_error(c->d, MIL_ERR_INVALID, "%s: cannot replace %%%s by %%%s (a function input cannot be renamed)",
                 c->pass, old_var->name, new_var->name);
  return -(int)MIL_ERR_INVALID;
}

int pass_t_remove(pass_t_ctx *c, mil_op *const *ops, int32_t n) {
  mil_status st = pass_remove_ops(ops, n, c->d);
  return st == MIL_OK ? 0 : -(int)st;
}

/* ---------- values ---------- */

mil_value *pass_t_i32s(mil_program *p, int64_t n, const int64_t *v) {
  int64_t shape[1] = {n};
  mil_value *r = mil_value_new_tensor(p, MIL_DT_INT32, 1, shape, false, NULL);
  if (!r) return NULL;
  for (int64_t i = 0; i < n; i++) mil_value_set_i64(r, i, v[i]);
  return r;
}

mil_value *pass_t_i32(mil_program *p, int64_t v) { return mil_value_new_scalar_i64(p, MIL_DT_INT32, v); }
mil_value *pass_t_f32(mil_program *p, double v) { return mil_value_new_scalar_f64(p, MIL_DT_FP32, v); }
mil_value *pass_t_bool(mil_program *p, bool v) { return mil_value_new_bool(p, v); }
mil_value *pass_t_str(mil_program *p, const char *s) { return mil_value_new_string(p, s); }

/* ---------- queries ---------- */

mil_op *pass_t_child(const mil_op *op, const char *type) {
  if (op->n_outputs != 1) return NULL;
  mil_op *k = pass_only_child_op(op->outputs[0]);
  if (!k || (type && strcmp(k->type, type) != 0)) return NULL;
  return k;
}

/* The chain of ops enclosing op, innermost first: chain[0] = op. */
static int32_t op_chain(const mil_op *op, const mil_op **chain, int32_t max) {
  int32_t n = 0;
  while (op && n < max) {
    chain[n++] = op;
    op = op->block ? op->block->parent : NULL;
  }
  return n;
}

/* Program-order comparison of two consumers (<0: a first; 0: tie). */
static int cmp_pos(const mil_op *a, const mil_op *b) {
  if (a == b) return 0;
  const mil_op *ca[PASS_MAX_DEPTH + 2], *cb[PASS_MAX_DEPTH + 2];
  int32_t na = op_chain(a, ca, PASS_MAX_DEPTH + 2), nb = op_chain(b, cb, PASS_MAX_DEPTH + 2);
  /* walk from the outermost level down while the ancestors coincide */
  int32_t i = na - 1, j = nb - 1;
  if (ca[i]->block != cb[j]->block) return 0;
  while (i > 0 && j > 0 && ca[i] == cb[j]) {
    i--;
    j--;
  }
  if (ca[i] == cb[j]) return i == 0 && j == 0 ? 0 : (i > 0 ? -1 : 1); /* nested before its op */
  if (ca[i]->block != cb[j]->block) return 0;
  return mil_op_is_before(ca[i], cb[j]) ? -1 : 1;
}

int32_t pass_t_children(const mil_var *v, mil_op **out, int32_t max) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) n++;
  if (n == 0) return 0;
  mil_op **a = malloc((size_t)n * 2 * sizeof *a);
  if (!a) return -1;
  mil_op **tmp = a + n;
  /* use lists hold the latest binding first: reverse into binding order */
  int32_t k = n;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) a[--k] = u->op;
  /* stable bottom-up merge sort by position */
  for (int32_t w = 1; w < n; w *= 2) {
    for (int32_t lo = 0; lo < n; lo += 2 * w) {
      int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo;
      while (i < mid && j < hi) tmp[o++] = cmp_pos(a[j], a[i]) < 0 ? a[j++] : a[i++];
      while (i < mid) tmp[o++] = a[i++];
      while (j < hi) tmp[o++] = a[j++];
    }
    memcpy(a, tmp, (size_t)n * sizeof *a);
  }
  for (int32_t i = 0; i < n && i < max; i++) out[i] = a[i];
  free(a);
  return n;
}

bool pass_t_is_output_of(const mil_var *v, const mil_block *b) {
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

int32_t pass_t_rank(const mil_var *v) {
  if (!v || !mil_type_is_tensor(v->type)) return -1;
  return v->type->rank;
}

bool pass_t_static(const mil_var *v) { return v && mil_type_is_static(v->type); }

bool pass_t_dim_eq(const mil_dim *a, const mil_dim *b) {
  if (a->size >= 0 || b->size >= 0) return a->size == b->size;
  return a->sym && b->sym && strcmp(a->sym, b->sym) == 0;
}

bool pass_t_shape_eq(const mil_var *a, const mil_var *b) {
  int32_t r = pass_t_rank(a);
  if (r < 0 || r != pass_t_rank(b)) return false;
  for (int32_t i = 0; i < r; i++)
    if (!pass_t_dim_eq(&a->type->dims[i], &b->type->dims[i])) return false;
  return true;
}

bool pass_t_ints(const mil_op *op, const char *input, int64_t *out, int64_t max, int64_t *n) {
  const mil_value *v = pass_input_value(op, input);
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return false;
  mil_dtype dt = v->type->dtype;
  if (dt == MIL_DT_STRING || mil_dtype_is_complex(dt) || v->numel > max) return false;
  for (int64_t i = 0; i < v->numel; i++) out[i] = mil_value_get_i64(v, i);
  *n = v->numel;
  return true;
}

const char *pass_t_str_input(const mil_op *op, const char *input) {
  const mil_value *v = pass_input_value(op, input);
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->dtype != MIL_DT_STRING || v->numel != 1) return NULL;
  return mil_value_get_str(v, 0);
}

/* ---------- sweeps ---------- */

int pass_t_sweep(pass_t_ctx *c, mil_block *b, pass_t_fn fn, pass_t_nested nested, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, "%s: blocks nested deeper than %d levels", c->pass, PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  mil_op **ops = malloc(((size_t)b->n_ops + 1) * sizeof *ops);
  if (!ops) return pass_t_oom(c);
  int32_t n = 0;
  for (mil_op *op = b->first; op; op = op->next) ops[n++] = op;
  int total = 0;
  for (int32_t i = 0; i < n; i++) {
    mil_op *op = ops[i];
    if (op->block != b) continue;
    if (nested != PASS_T_NESTED_SKIP)
      for (int32_t k = 0; k < op->n_blocks; k++) {
        int r;
        while ((r = pass_t_sweep(c, op->blocks[k], fn, nested, depth + 1)) > 0) {
          c->changes += r;
          if (nested == PASS_T_NESTED_ONCE) break;
        }
        if (r < 0) {
          free(ops);
          return r;
        }
      }
    if (op->block != b) continue;
    int r = fn(c, op);
    if (r < 0) {
      free(ops);
      return r;
    }
    total += r;
  }
  free(ops);
  return total;
}

mil_status pass_t_run(pass_t_ctx *c, pass_t_fn fn, pass_t_nested nested, bool repeat) {
  mil_program *p = c->p;
  for (int32_t fi = 0; fi < p->n_functions; fi++) {
    mil_function *f = p->functions[fi];
    for (int32_t s = 0; s < f->n_specs; s++) {
      int r;
      int64_t guard = 0;
      do {
        r = pass_t_sweep(c, f->specs[s].block, fn, nested, 0);
        if (r > 0) c->changes += r;
      } while (r > 0 && repeat && ++guard < 100000);
      if (r < 0) return (mil_status)(-r);
    }
  }
  return MIL_OK;
}
