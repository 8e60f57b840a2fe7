/* Helpers shared by the fusion passes: numpy-style rounding, op building
 * with rollback and lazy naming, and the guarded replace-and-remove step
 * (the sweeps and the pattern matcher are in fuse_walk.c). See
 * fuse_util_internal.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

/* ---------- context ---------- */

void pass_fuse_ctx_free(pass_fuse_ctx *c) {
  pass_names_free(c->names);
  pass_nonrep_free(c->nonrep);
  free(c->noted);
  pass_ptrset_free(&c->noted_set);
  c->names = NULL;
  c->nonrep = NULL;
  c->noted = NULL;
  c->n_noted = c->cap_noted = 0;
}

pass_names *pass_fuse_names(pass_fuse_ctx *c) {
  if (c->names) return c->names;
  bool ok = (c->names = pass_names_new(c->p)) != NULL;
  /* the names the set would have received since the run started */
  for (int32_t i = 0; ok && i < c->n_noted; i++) ok = pass_names_add_interned(c->names, c->noted[i]);
  free(c->noted);
  pass_ptrset_free(&c->noted_set);
  c->noted = NULL;
  c->n_noted = c->cap_noted = 0;
  if (!ok) mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory collecting names", c->pass);
  return ok ? c->names : NULL;
}

/* Records an interned name as taken: in the set when it exists, else (lazy
 * naming) in c->noted for when the set is built. false on out of memory. */
static bool note_name(pass_fuse_ctx *c, const char *name) {
  if (c->names) return pass_names_add_interned(c->names, name);
  if (c->n_noted == c->cap_noted) {
    int32_t nc = c->cap_noted ? c->cap_noted * 2 : 16;
    const char **nn = realloc(c->noted, (size_t)nc * sizeof *nn);
    if (!nn) return false;
    c->noted = nn;
    c->cap_noted = nc;
  }
  if (!pass_ptrset_add(&c->noted_set, name)) return false;
  c->noted[c->n_noted++] = name;
  return true;
}

static int note_op_names(mil_op *op, void *ud) {
  pass_fuse_ctx *c = ud;
  bool ok = note_name(c, op->name);
  for (int32_t i = 0; ok && i < op->n_outputs; i++) ok = note_name(c, op->outputs[i]->name);
  for (int32_t b = 0; ok && b < op->n_blocks; b++) {
    for (int32_t i = 0; ok && i < op->blocks[b]->n_inputs; i++) ok = note_name(c, op->blocks[b]->inputs[i]->name);
    ok = ok && mil_block_walk(op->blocks[b], note_op_names, c) == 0;
  }
  return ok ? 0 : 1;
}

/* Lazy naming's answer for the name buf[0, m) (pass_names_claim's rule):
 * every name the set would hold is interned, and every noted name is in
 * it, so a name the program never interned is free, and a noted one is
 * taken. Returns the name (buf[0, m) or "<buf>_<j>", interned and noted),
 * or NULL with *decided false when a candidate is interned but not noted
 * (only the set can tell), or with *decided true on out of memory. buf is
 * left holding buf[0, m). */
static const char *lazy_claim(pass_fuse_ctx *c, char *buf, size_t m, bool *decided) {
  *decided = true;
  size_t e = m;
  for (uint64_t j = 0;; j++) {
    if (j) {
      buf[m] = '_';
      e = m + 1 + pass_put_u64(buf + m + 1, j);
      buf[e] = 0;
    }
    const char *s = mil_program_find_string(c->p, buf, e);
    if (!s) break;
    if (!pass_ptrset_has(&c->noted_set, s)) {
      buf[m] = 0;
      *decided = false;
      return NULL;
    }
  }
  const char *s = mil_program_intern(c->p, buf, e);
  /* a repeat: the name coremltools gave is recorded (pass_names_claim) */
  const char *base = e != m && s ? mil_program_intern(c->p, buf, m) : s;
  buf[m] = 0;
  if (!s || !base || !note_name(c, s)) return NULL;
  if (base != s && !mil_program_name_intended_set(c->p, s, base)) return NULL;
  return s;
}

/* pass_names_fresh's name for the prefix buf[0, len) (buf has room for
 * len + 48 bytes): the counted "<prefix>_<k>", made unique. Lazy naming:
 * settled without collecting the set when the interned strings tell
 * (lazy_claim). */
static const char *fresh_name(pass_fuse_ctx *c, char *buf, size_t len) {
  size_t m = pass_name_counted(c->p, buf, len);
  if (!m) return NULL;
  if (c->lazy_names && !c->names) {
    bool decided;
    const char *s = lazy_claim(c, buf, m, &decided);
    if (s || decided) return s;
  }
  pass_names *names = pass_fuse_names(c);
  return names ? pass_names_claim(names, c->p, buf, m) : NULL;
}

pass_nonrep *pass_fuse_nonrep(pass_fuse_ctx *c) {
  if (!c->nonrep && !(c->nonrep = pass_nonrep_new(c->p)))
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory tracking constexpr inputs", c->pass);
  return c->nonrep;
}

/* ---------- uses ---------- */

bool pass_fuse_is_output_of(const mil_var *v, const mil_block *b) {
  if (!v || !b) return false;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op && u->block == b) return true;
  return false;
}

mil_op *pass_fuse_child_of_type(const mil_op *op, const char *type) {
  if (op->n_outputs != 1) return NULL;
  mil_op *c = pass_only_child_op(op->outputs[0]);
  return c && strcmp(c->type, type) == 0 ? c : NULL;
}

int32_t pass_fuse_rank(const mil_var *v) {
  if (!v || !v->type || v->type->kind != MIL_TYPE_TENSOR) return -1;
  return v->type->rank;
}

/* ---------- numpy-style arithmetic ---------- */

bool pass_np_is_float(mil_dtype dt) { return dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_FP64; }

double pass_np_round(double x, mil_dtype dt) {
  switch (dt) {
  case MIL_DT_FP32: return (double)(float)x;
  case MIL_DT_FP16: return (double)mil_fp16_to_fp32(mil_fp64_to_fp16(x));
  case MIL_DT_BF16: return (double)mil_bf16_to_fp32(mil_fp32_to_bf16((float)x));
  default: return x;
  }
}

static int float_width(mil_dtype dt) {
  switch (dt) {
  case MIL_DT_FP16: return 1;
  case MIL_DT_FP32: return 2;
  default: return 3;
  }
}

mil_dtype pass_np_promote(mil_dtype a, mil_dtype b) {
  return float_width(a) >= float_width(b) ? (pass_np_is_float(a) ? a : MIL_DT_FP64)
                                          : (pass_np_is_float(b) ? b : MIL_DT_FP64);
}

mil_value *pass_fuse_value_from(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape, bool is_scalar,
                                const double *vals, int64_t n) {
  mil_value *v = mil_value_new_tensor(p, dt, rank, shape, is_scalar, NULL);
  if (!v || v->numel != n) return NULL;
  for (int64_t i = 0; i < n; i++) mil_value_set_f64(v, i, vals[i]);
  return v;
}

double *pass_fuse_values(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->dtype == MIL_DT_STRING ||
      mil_dtype_is_complex(v->type->dtype) || v->numel < 0)
    return NULL;
  double *out = malloc(((size_t)v->numel + 1) * sizeof *out);
  if (!out) return NULL;
  if (v->type->dtype == MIL_DT_FP32 && mil_value_data(v) && v->nbytes >= (size_t)v->numel * 4) {
    const float *f = mil_value_data(v);
    for (int64_t i = 0; i < v->numel; i++) out[i] = f[i];
  } else {
    for (int64_t i = 0; i < v->numel; i++) out[i] = mil_value_get_f64(v, i);
  }
  return out;
}

/* ---------- building ops ---------- */

mil_op *pass_fuse_new_op(pass_fuse_ctx *c, mil_op *anchor, const char *type, const char *name) {
  c->names_due = true;
  char stack[256];
  size_t len = strlen(type);
  if (!name) {
    char *buf = len + 48 <= sizeof stack ? stack : malloc(len + 48);
    if (buf) {
      memcpy(buf, type, len + 1);
      name = fresh_name(c, buf, len);
      if (buf != stack) free(buf);
    }
  } else if (c->lazy_names && !c->names) {
    name = mil_program_intern(c->p, name, (size_t)-1);
    if (name && !note_name(c, name)) name = NULL;
  } else {
    pass_names *names = pass_fuse_names(c);
    if (!names || !pass_names_add(names, name)) name = NULL;
  }
  mil_op *op = name ? mil_op_new(c->p, type, name) : NULL;
  if (!op) {
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
    return NULL;
  }
  mil_block_insert_before(anchor, op);
  return op;
}

static bool skipped(const char *name, const char *const *skip, int n_skip) {
  for (int i = 0; i < n_skip; i++)
    if (strcmp(name, skip[i]) == 0) return true;
  return false;
}

void pass_fuse_copy_inputs(mil_op *dst, const mil_op *src, const char *const *skip, int n_skip) {
  for (int32_t i = 0; i < src->n_inputs; i++) {
    const mil_input *in = &src->inputs[i];
    if (skipped(in->name, skip, n_skip)) continue;
    if (!in->is_tuple && in->n_args == 1) {
      if (in->args[0].use.var) mil_op_add_input(dst, in->name, in->args[0].use.var);
      else if (in->args[0].value) mil_op_add_input_value(dst, in->name, in->args[0].value);
      continue;
    }
    mil_input *ni = mil_op_add_input_slots(dst, in->name, in->n_args, in->is_tuple);
    if (!ni) continue;
    for (int32_t a = 0; a < in->n_args; a++) {
      if (in->args[a].use.var) mil_arg_set_var(dst, &ni->args[a], in->args[a].use.var);
      else ni->args[a].value = in->args[a].value;
    }
  }
}

mil_var *pass_fuse_const(pass_fuse_ctx *c, mil_op *anchor, const char *op_name, const char *input,
                         const mil_value *v) {
  c->names_due = true;
  /* "<op_name>_<input>_<k>" or "const_<k>" */
  if (!input) op_name = "const";
  size_t lo = strlen(op_name), li = input ? strlen(input) + 1 : 0, len = lo + li;
  char stack[256];
  char *buf = len + 48 <= sizeof stack ? stack : malloc(len + 48);
  const char *name = NULL;
  if (buf && v) {
    memcpy(buf, op_name, lo);
    if (input) {
      buf[lo] = '_';
      memcpy(buf + lo + 1, input, li - 1);
    }
    buf[len] = 0;
    name = fresh_name(c, buf, len);
  }
  if (buf != stack) free(buf);
  mil_op *k = name ? mil_const_new(c->p, name, v) : NULL;
  if (!k || k->n_outputs != 1) {
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
    return NULL;
  }
  mil_block_insert_before(anchor, k);
  return k->outputs[0];
}

mil_status pass_fuse_finish(pass_fuse_ctx *c, mil_op *op) {
  mil_diag local;
  mil_diag_init(&local);
  mil_status st = pass_finish_op(op, &local);
  c->names_due = true;
  if (st == MIL_OK) {
    if (c->lazy_names && !c->names) {
      for (int32_t i = 0; i < op->n_outputs && st == MIL_OK; i++)
        if (!note_name(c, op->outputs[i]->name)) st = MIL_ERR_NOMEM;
    } else {
      pass_names *names = pass_fuse_names(c);
      for (int32_t i = 0; names && i < op->n_outputs; i++) pass_names_add(names, op->outputs[i]->name);
    }
    if (c->nonrep && !pass_nonrep_note_op(c->nonrep, op)) st = MIL_ERR_NOMEM;
    if (strncmp(op->type, "constexpr_", 10) == 0) c->constexpr_state = 0;
  }
  if (st == MIL_ERR_NOMEM) {
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  } else if (st != MIL_OK) {
    const char *why = mil_diag_first_error(&local);
    mil_diag_add(c->d, MIL_SEV_WARNING, "%s: left op '%s' alone: the %s it would become does not type-check (%s)",
                 c->pass, op->name, op->type, why ? why : mil_status_str(st));
  }
  mil_diag_clear(&local);
  return st;
}

void pass_fuse_rollback(mil_op *anchor, mil_op *mark) {
  if (!anchor || !anchor->block) return;
  for (int guard = 0; guard < 1000000; guard++) {
    mil_op *op = anchor->prev;
    if (!op || op == mark) return;
    /* drop nested uses and operand uses; outputs of ops built by the
     * rewrite are only read by later ops of the rewrite, gone already */
    if (mil_op_remove(op) != MIL_OK) {
      for (int32_t i = 0; i < op->n_outputs; i++)
        while (op->outputs[i]->uses) {
          mil_use *u = op->outputs[i]->uses;
          if (u->op) mil_op_remove(u->op);
          else break;
        }
      if (mil_op_remove(op) != MIL_OK) return;
    }
  }
}

/* Whether c->p may hold a constexpr_* op (the only source of
 * nonreplaceable vars), decided once per run without walking: the op
 * counts by type of the registered types must add up to all ops (no op of
 * an unknown type, which might be a constexpr_* one) with no constexpr_*
 * type among them. Ops the pass builds are not constexpr_* ones
 * (pass_fuse_finish forgets the answer otherwise). */
static bool may_hold_constexpr(pass_fuse_ctx *c) {
  if (c->constexpr_state) return c->constexpr_state == 2;
  bool may = false;
  int64_t total = mil_program_count_ops(c->p), seen = 0;
  const char *found[256];
  int n_found = 0;
  for (size_t i = 0; i < mil_op_def_count() && !may; i++) {
    const char *t = mil_program_find_string(c->p, mil_op_def_at(i)->type, (size_t)-1);
    int64_t k = t ? mil_program_count_op_type(c->p, t) : 0;
    if (k == 0) continue;
    bool dup = false;
    for (int j = 0; j < n_found && !dup; j++) dup = found[j] == t;
    if (dup) continue;
    if (k < 0 || n_found == 256 || strncmp(t, "constexpr_", 10) == 0) may = true;
    else found[n_found++] = t;
    seen += k;
  }
  may = may || seen != total;
  c->constexpr_state = may ? 2 : 1;
  return may;
}

int pass_fuse_nonrep_has(pass_fuse_ctx *c, const mil_var *v) {
  if (!c->nonrep && !may_hold_constexpr(c)) return 0; /* every set is empty */
  pass_nonrep *nr = pass_fuse_nonrep(c);
  if (!nr) return -(int)MIL_ERR_NOMEM;
  return pass_nonrep_has(nr, v) ? 1 : 0;
}

/* Collects up to `cap` vars upstream of v (v included) through the
 * producers' inputs, breadth first. Returns the count. */
static int32_t near_upstream(const mil_var *v, const mil_var **seen, int32_t cap) {
  int32_t n = 0, head = 0;
  seen[n++] = v;
  while (head < n && n < cap) {
    const mil_op *op = seen[head++]->op;
    if (!op) continue;
    for (int32_t i = 0; i < op->n_inputs && n < cap; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args && n < cap; a++) {
        const mil_var *x = op->inputs[i].args[a].use.var;
        if (!x) continue;
        bool dup = false;
        for (int32_t k = 0; k < n && !dup; k++) dup = seen[k] == x;
        if (!dup) seen[n++] = x;
      }
  }
  return n;
}

static bool is_removed(const mil_op *op, mil_op *const *remove, int32_t n) {
  for (int32_t i = 0; i < n; i++)
    if (remove[i] == op) return true;
  return false;
}

/* Var.can_be_replaced_by_var for the rewrite: every constexpr-dependent var
 * that the removed ops read from outside is also read near new_var (then
 * old's set is covered); otherwise the exact cone comparison decides. */
static bool can_replace(pass_fuse_ctx *c, mil_var *old, mil_var *new_var, mil_op *const *remove, int32_t n) {
  if (!c->nonrep && !may_hold_constexpr(c)) return true; /* every set is empty */
  pass_nonrep *nr = pass_fuse_nonrep(c);
  if (!nr) return false;
  if (!pass_nonrep_has(nr, old)) return true;
  const mil_var *seen[64];
  int32_t ns = near_upstream(new_var, seen, 64);
  bool covered = true;
  for (int32_t r = 0; r < n && covered; r++) {
    const mil_op *op = remove[r];
    if (strncmp(op->type, "constexpr_", 10) == 0) covered = false;
    for (int32_t i = 0; i < op->n_inputs && covered; i++)
      for (int32_t a = 0; a < op->inputs[i].n_args && covered; a++) {
        const mil_var *x = op->inputs[i].args[a].use.var;
        if (!x || !pass_nonrep_has(nr, x) || (x->op && is_removed(x->op, remove, n))) continue;
        bool found = false;
        for (int32_t k = 0; k < ns && !found; k++) found = seen[k] == x;
        covered = found;
      }
  }
  return covered || pass_nonrep_can_replace(nr, old, new_var);
}

int pass_fuse_replace_and_remove(pass_fuse_ctx *c, mil_op *anchor, mil_var *old, mil_var *new_var,
                                 mil_op *const *remove, int32_t n_remove) {
  if (!c->nonrep && may_hold_constexpr(c) && !pass_fuse_nonrep(c)) return -(int)MIL_ERR_NOMEM;
  if (!can_replace(c, old, new_var, remove, n_remove)) return 0;
  if (!pass_replace_uses_after(anchor, old, new_var)) return 0;
  /* lazy naming: the removed ops' names stay taken (once the set would
   * have been collected) */
  for (int32_t i = 0; c->lazy_names && c->names_due && !c->names && i < n_remove; i++)
    if (note_op_names(remove[i], c) != 0) {
      mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
      return -(int)MIL_ERR_NOMEM;
    }
  mil_status st = pass_remove_ops(remove, n_remove, c->d);
  if (st != MIL_OK) return -(int)st;
  return 1;
}

int pass_fuse_replace_one(pass_fuse_ctx *c, mil_op *op, mil_op *m, mil_op *mark) {
  mil_status st = pass_fuse_finish(c, m);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(m->outputs[0]->type, op->outputs[0]->type)) {
    mil_op *rm[1] = {op};
    r = pass_fuse_replace_and_remove(c, op, op->outputs[0], m->outputs[0], rm, 1);
  }
  if (r == 0) pass_fuse_rollback(op, mark);
  return r;
}

int pass_fuse_conv_replace(pass_fuse_ctx *c, mil_op *conv, mil_op *child, const char *name, bool name_consts,
                           mil_value *wv, mil_value *bv) {
  mil_op *mark = conv->prev;
  mil_var *wc = pass_fuse_const(c, conv, name_consts ? name : NULL, name_consts ? "weight" : NULL, wv);
  mil_var *bc = wc ? pass_fuse_const(c, conv, name_consts ? name : NULL, name_consts ? "bias" : NULL, bv) : NULL;
  mil_op *nc = bc ? pass_fuse_new_op(c, conv, conv->type, name) : NULL;
  if (!nc) return -(int)MIL_ERR_NOMEM;
  static const char *const skip[] = {"weight", "bias"};
  mil_op_add_input(nc, "weight", wc);
  mil_op_add_input(nc, "bias", bc);
  pass_fuse_copy_inputs(nc, conv, skip, 2);
  mil_status st = pass_fuse_finish(c, nc);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(nc->outputs[0]->type, child->outputs[0]->type)) {
    mil_op *rm[2] = {conv, child};
    r = pass_fuse_replace_and_remove(c, child, child->outputs[0], nc->outputs[0], rm, 2);
  }
  if (r == 0) pass_fuse_rollback(conv, mark);
  return r;
}

/* ---------- a little numpy ---------- */

static bool is_int_dt(mil_dtype dt) { return mil_dtype_is_int(dt); }

bool pass_np_from_value(pass_np *a, const mil_value *v, bool *nomem) {
  memset(a, 0, sizeof *a);
  if (nomem) *nomem = false;
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->type->rank < 0 || v->type->rank > PASS_NP_MAX_RANK)
    return false;
  mil_dtype dt = v->type->dtype;
  if (dt == MIL_DT_STRING || dt == MIL_DT_BOOL || mil_dtype_is_complex(dt)) return false;
  a->v = pass_fuse_values(v);
  if (!a->v) {
    if (nomem) *nomem = true;
    return false;
  }
  a->dt = dt;
  a->is_scalar = v->type->is_scalar;
  a->rank = v->type->rank;
  for (int32_t i = 0; i < a->rank; i++) a->shape[i] = v->type->dims[i].size;
  a->n = v->numel;
  return true;
}

bool pass_np_full(pass_np *a, mil_dtype dt, int32_t rank, const int64_t *shape, double x) {
  memset(a, 0, sizeof *a);
  if (rank < 0 || rank > PASS_NP_MAX_RANK) return false;
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) {
    a->shape[i] = shape[i];
    n *= shape[i] > 0 ? shape[i] : 0;
  }
  a->v = malloc(((size_t)n + 1) * sizeof *a->v);
  if (!a->v) return false;
  for (int64_t i = 0; i < n; i++) a->v[i] = x;
  a->dt = dt;
  a->rank = rank;
  a->n = n;
  return true;
}

void pass_np_free(pass_np *a) {
  free(a->v);
  a->v = NULL;
}

void pass_np_squeeze(pass_np *a) {
  int32_t r = 0;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->shape[i] != 1) a->shape[r++] = a->shape[i];
  a->rank = r;
}

bool pass_np_same_shape(const pass_np *a, const pass_np *b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

mil_dtype pass_np_result_dtype(const pass_np *a, const pass_np *b) {
  if (a->weak && b->weak) return MIL_DT_FP64; /* Python float arithmetic */
  if (a->weak && !b->weak) return b->dt;
  if (b->weak && !a->weak) return a->dt;
  if (a->dt == b->dt) return a->dt;
  if (is_int_dt(a->dt) && is_int_dt(b->dt)) return a->dt;
  return pass_np_promote(a->dt, b->dt);
}

int pass_np_binary(pass_np *out, const pass_np *a, const pass_np *b, char op) {
  memset(out, 0, sizeof *out);
  int32_t r = a->rank > b->rank ? a->rank : b->rank;
  int64_t shape[PASS_NP_MAX_RANK];
  for (int32_t i = 0; i < r; i++) {
    int32_t ia = i - (r - a->rank), ib = i - (r - b->rank);
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) return 0;
    shape[i] = da == 1 ? db : da;
  }
  mil_dtype dt = pass_np_result_dtype(a, b);
  if (op == '/' && is_int_dt(dt)) dt = MIL_DT_FP64;
  if (!pass_np_full(out, dt, r, shape, 0)) return -1;
  out->is_scalar = a->is_scalar && b->is_scalar;
  out->weak = a->weak && b->weak;
  /* strides of a and b over the result's index space (0 on broadcast dims) */
  int64_t sa[PASS_NP_MAX_RANK], sb[PASS_NP_MAX_RANK];
  int64_t st = 1;
  for (int32_t i = a->rank - 1; i >= 0; i--) {
    sa[i + (r - a->rank)] = a->shape[i] == 1 ? 0 : st;
    st *= a->shape[i];
  }
  for (int32_t i = 0; i < r - a->rank; i++) sa[i] = 0;
  st = 1;
  for (int32_t i = b->rank - 1; i >= 0; i--) {
    sb[i + (r - b->rank)] = b->shape[i] == 1 ? 0 : st;
    st *= b->shape[i];
  }
  for (int32_t i = 0; i < r - b->rank; i++) sb[i] = 0;
  int64_t idx[PASS_NP_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0;
  for (int64_t k = 0; k < out->n; k++) {
    double x = a->v[oa], y = b->v[ob], z;
    /* a Python number is first converted to the other operand's dtype */
    if (a->weak && !b->weak) x = pass_np_round(x, dt);
    if (b->weak && !a->weak) y = pass_np_round(y, dt);
    switch (op) {
    case '+': z = x + y; break;
    case '-': z = x - y; break;
    case '*': z = x * y; break;
    default: z = x / y; break;
    }
    out->v[k] = pass_np_round(z, dt);
    for (int32_t i = r - 1; i >= 0; i--) {
      idx[i]++;
      oa += sa[i];
      ob += sb[i];
      if (idx[i] < shape[i]) break;
      oa -= sa[i] * shape[i];
      ob -= sb[i] * shape[i];
      idx[i] = 0;
    }
  }
  return 1;
}

mil_value *pass_np_to_value(mil_program *p, const pass_np *a, mil_dtype dt) {
  return pass_fuse_value_from(p, dt, a->rank, a->shape, a->rank == 0 && a->is_scalar, a->v, a->n);
}

/* ---------- gelu ---------- */

int pass_fuse_gelu(pass_fuse_ctx *c, mil_var *root, const char *mode, mil_op *before, mil_op *const *ops,
                      int n) {
  mil_op *last = ops[n - 1];
  mil_var *out = last->outputs[0];
  mil_op *mark = before->prev;
  mil_value *mv = mil_value_new_string(c->p, mode);
  mil_var *mc = mv ? pass_fuse_const(c, before, out->name, "mode", mv) : NULL;
  mil_op *g = mc ? pass_fuse_new_op(c, before, "gelu", out->name) : NULL;
  if (!g) return -(int)MIL_ERR_NOMEM;
  mil_op_add_input(g, "x", root);
  mil_op_add_input(g, "mode", mc);
  mil_status st = pass_fuse_finish(c, g);
  if (st == MIL_ERR_NOMEM) return -(int)st;
  int r = 0;
  if (st == MIL_OK && mil_type_equal(g->outputs[0]->type, out->type))
    r = pass_fuse_replace_and_remove(c, last, out, g->outputs[0], ops, n);
  if (r == 0) pass_fuse_rollback(before, mark);
  return r;
}

mil_value *pass_fuse_ints(mil_program *p, int32_t n, const int64_t *v) {
  int64_t shape[1] = {n};
  mil_value *x = mil_value_new_tensor(p, MIL_DT_INT32, 1, shape, false, NULL);
  for (int32_t i = 0; x && i < n; i++) mil_value_set_i64(x, i, v[i]);
  return x;
}
