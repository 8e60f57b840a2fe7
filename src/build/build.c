/* Building ops like coremltools' Builder, ranged use replacement, and the
 * small value helpers for code that inserts op sequences. The contract is
 * in build/build.h. */
#include <stdlib.h>
#include <string.h>

#include "build/build.h"

void pass_bld_free(pass_bld *c) {
  pass_names_free(c->names);
  pass_nonrep_free(c->nonrep);
  c->names = NULL;
  c->nonrep = NULL;
}

pass_names *pass_bld_names(pass_bld *c) {
  if (!c->names && !(c->names = pass_names_new(c->p)))
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory collecting names", c->pass);
  return c->names;
}

pass_nonrep *pass_bld_nonrep(pass_bld *c) {
  if (!c->nonrep && !(c->nonrep = pass_nonrep_new(c->p)))
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory tracking constexpr ops", c->pass);
  return c->nonrep;
}

/* Removes the ops inserted between mark (exclusive; NULL = block start) and
 * stop (exclusive; NULL = block end), last first. */
static void rollback(mil_block *b, mil_op *mark, mil_op *stop) {
  for (;;) {
    mil_op *last = stop ? stop->prev : b->last;
    if (!last || last == mark) break;
    mil_op_remove(last);
  }
}

bool pass_bld_bind(mil_op *op, int32_t n, const pass_barg *args, pass_bld_const_fn konst, void *ud) {
  for (int32_t i = 0; i < n; i++) {
    const pass_barg *a = &args[i];
    if (a->vars) {
      if (!mil_op_add_input_tuple(op, a->name, a->n, a->vars)) return false;
    } else if (a->var) {
      if (!mil_op_add_input(op, a->name, a->var)) return false;
    } else if (a->val) {
      mil_var *k = konst(ud, op, a->name, a->val);
      if (!k || !mil_op_add_input(op, a->name, k)) return false;
    }
  }
  return true;
}

/* A const "<op>_<input>_<k>" with a fresh k from the name set ud. */
static mil_var *names_const(void *ud, mil_op *op, const char *input, const mil_value *v) {
  return pass_const_before(op, ud, op->name, input, v);
}

mil_op *pass_bld_op(pass_bld *c, mil_block *b, mil_op *anchor, const char *type, const char *name, int32_t n,
                    const pass_barg *args, mil_status *st) {
  mil_status dummy;
  if (!st) st = &dummy;
  *st = MIL_ERR_NOMEM;
  if (anchor) b = anchor->block;
  pass_names *names = pass_bld_names(c);
  if (!names || !b) return NULL;
  if (!name && !(name = pass_names_fresh(names, c->p, type))) goto oom;
  mil_op *mark = anchor ? anchor->prev : b->last;
  mil_op *op = mil_op_new(c->p, type, name);
  if (!op || !pass_names_add_interned(names, op->name)) goto oom;
  name = op->name;
  if (anchor) mil_block_insert_before(anchor, op);
  else mil_block_append(b, op);
  if (!pass_bld_bind(op, n, args, names_const, names)) goto oom_rb;
  *st = pass_finish_op(op, c->d);
  if (*st != MIL_OK) {
    rollback(b, mark, anchor);
    return NULL;
  }
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!pass_names_add_interned(names, op->outputs[i]->name)) goto oom;
  if (c->nonrep && !pass_nonrep_note_op(c->nonrep, op)) goto oom;
  return op;
oom_rb:
  rollback(b, mark, anchor);
oom:
  *st = mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory building a %s op", c->pass, type);
  return NULL;
}

mil_var *pass_bld_var(pass_bld *c, mil_block *b, mil_op *anchor, const char *type, const char *name, int32_t n,
                      const pass_barg *args, mil_status *st) {
  mil_op *op = pass_bld_op(c, b, anchor, type, name, n, args, st);
  return op && op->n_outputs > 0 ? op->outputs[0] : NULL;
}

mil_op *pass_bld_use_anchor(const mil_use *u, const mil_block *b) {
  const mil_op *op = u->op ? u->op : (u->block ? u->block->parent : NULL);
  for (int depth = 0; op && depth <= PASS_MAX_DEPTH; depth++) {
    if (op->block == b) return (mil_op *)op;
    op = op->block ? op->block->parent : NULL;
  }
  return NULL;
}

static bool in_range(const mil_op *a, const mil_op *anchor, const mil_op *end) {
  if (anchor && (a == anchor || !mil_op_is_before(anchor, a))) return false;
  if (end && a != end && !mil_op_is_before(a, end)) return false;
  return true;
}

void pass_bld_replace_range(mil_block *b, mil_op *anchor, mil_op *end, mil_var *old, mil_var *new_var) {
  if (old == new_var) return;
  if (anchor) b = anchor->block;
  if (!end) {
    if (anchor) {
      pass_replace_uses_after(anchor, old, new_var);
      return;
    }
  }
  /* collect first: rebinding edits old's use list */
  int32_t n = 0, cap = old->n_uses;
  mil_use **uses = malloc(((size_t)cap + 1) * sizeof *uses);
  if (!uses) return;
  for (mil_use *u = old->uses; u && n < cap; u = u->next_use) uses[n++] = u;
  for (int32_t i = 0; i < n; i++) {
    mil_use *u = uses[i];
    mil_op *a = pass_bld_use_anchor(u, b);
    if (u->block == b) {
      if (!end) mil_block_set_output(b, (int32_t)(u - b->outputs), new_var);
      continue;
    }
    if (!a || !in_range(a, anchor, end)) continue;
    if (u->op) mil_arg_set_var(u->op, (mil_arg *)u, new_var);
    else mil_block_set_output(u->block, (int32_t)(u - u->block->outputs), new_var);
  }
  free(uses);
}

/* ---------- values ---------- */

mil_value *pass_bld_reshape(mil_program *p, const mil_value *v, int32_t rank, const int64_t *shape) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return NULL;
  mil_value *r = mil_value_new_tensor(p, v->type->dtype, rank, shape, false, NULL);
  if (!r) return NULL;
  if (r->numel != v->numel) return NULL;
  void *dst = mil_value_data_mut(r);
  if (dst && v->nbytes && v->nbytes <= r->nbytes) memcpy(dst, mil_value_data(v), v->nbytes);
  return r;
}

mil_value *pass_bld_squeeze(mil_program *p, const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return NULL;
  const mil_type *t = v->type;
  if (t->is_scalar || t->rank <= 0) {
    mil_value *r = mil_value_new_tensor(p, t->dtype, 0, NULL, t->is_scalar, NULL);
    if (r && mil_value_data_mut(r) && v->nbytes && v->nbytes <= r->nbytes)
      memcpy(mil_value_data_mut(r), mil_value_data(v), v->nbytes);
    return r;
  }
  int64_t shape[64];
  int32_t rank = 0;
  for (int32_t i = 0; i < t->rank && rank < 64; i++)
    if (t->dims[i].size != 1) shape[rank++] = t->dims[i].size;
  return pass_bld_reshape(p, v, rank, shape);
}

mil_value *pass_bld_astype(mil_program *p, const mil_value *v, mil_dtype dt) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type) return NULL;
  const mil_type *t = v->type;
  int64_t shape[64];
  int32_t rank = t->rank > 64 ? 64 : t->rank;
  for (int32_t i = 0; i < rank; i++) shape[i] = t->dims[i].size;
  mil_value *r = mil_value_new_tensor(p, dt, rank < 0 ? 0 : rank, shape, t->is_scalar, NULL);
  if (!r) return NULL;
  bool src_float = mil_dtype_is_float(t->dtype);
  for (int64_t i = 0; i < v->numel; i++) {
    if (mil_dtype_is_float(dt)) mil_value_set_f64(r, i, mil_value_get_f64(v, i));
    else if (src_float) mil_value_set_i64(r, i, (int64_t)mil_value_get_f64(v, i));
    else mil_value_set_i64(r, i, mil_value_get_i64(v, i));
  }
  return r;
}

mil_value *pass_bld_str(mil_program *p, const char *s) { return mil_value_new_string(p, s); }

mil_value *pass_bld_i32(mil_program *p, int64_t x) { return mil_value_new_scalar_i64(p, MIL_DT_INT32, x); }

mil_value *pass_bld_i32s(mil_program *p, int32_t n, const int64_t *xs) {
  int64_t shape[1] = {n};
  mil_value *r = mil_value_new_tensor(p, MIL_DT_INT32, 1, shape, false, NULL);
  if (!r) return NULL;
  for (int32_t i = 0; i < n; i++) mil_value_set_i64(r, i, xs[i]);
  return r;
}

bool pass_bld_all_zero(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->dtype == MIL_DT_STRING) return false;
  for (int64_t i = 0; i < v->numel; i++)
    if (mil_value_get_f64(v, i) != 0) return false;
  return true;
}

bool pass_bld_has(const mil_op *op, const char *name) {
  const mil_input *in = mil_op_find_input(op, name);
  return in && in->n_args > 0;
}

mil_dtype pass_bld_dtype(const mil_var *v) {
  return v && v->type && v->type->kind == MIL_TYPE_TENSOR ? v->type->dtype : MIL_DT_UNUSED;
}

int pass_bld_try_replace(pass_bld *c, mil_op *anchor, mil_var *old, mil_var *new_var) {
  pass_nonrep *nr = pass_bld_nonrep(c);
  if (!nr) return -(int)MIL_ERR_NOMEM;
  if (old->op && new_var->op && !pass_nonrep_can_replace(nr, old, new_var)) return 0;
  if (!pass_replace_uses_after(anchor, old, new_var)) return 0;
  return 1;
}
