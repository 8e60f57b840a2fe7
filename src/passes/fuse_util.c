/* Helpers shared by the fusion passes: the per-block fixed-point driver,
 * numpy-style rounding, op building with rollback, and the guarded
 * replace-and-remove step. See fuse_util_internal.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"

/* ---------- context ---------- */

void pass_fuse_ctx_free(pass_fuse_ctx *c) {
  pass_names_free(c->names);
  pass_nonrep_free(c->nonrep);
  c->names = NULL;
  c->nonrep = NULL;
}

pass_names *pass_fuse_names(pass_fuse_ctx *c) {
  if (!c->names && !(c->names = pass_names_new(c->p)))
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory collecting names", c->pass);
  return c->names;
}

pass_nonrep *pass_fuse_nonrep(pass_fuse_ctx *c) {
  if (!c->nonrep && !(c->nonrep = pass_nonrep_new(c->p)))
    mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory tracking constexpr inputs", c->pass);
  return c->nonrep;
}

/* ---------- driver ---------- */

typedef struct sweep_ctx {
  pass_fuse_ctx *c;
  pass_fuse_fn fn;
  bool repeat, visit_block_ops;
  int64_t changes;
} sweep_ctx;

static int fuse_block(sweep_ctx *s, mil_block *b, int depth);

/* Fuses b to its fixed point (or one sweep). Returns 0 or -(status). */
static int fuse_block_fixpoint(sweep_ctx *s, mil_block *b, int depth) {
  for (int round = 0; round < 100000; round++) {
    int r = fuse_block(s, b, depth);
    if (r <= 0 || !s->repeat) return r < 0 ? r : 0;
  }
  return 0;
}

/* One sweep over a snapshot of b's ops. Returns 1 when something was
 * rewritten, 0 when not, -(status) on error. */
static int fuse_block(sweep_ctx *s, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(s->c->d, MIL_ERR_UNSUPPORTED, "%s: blocks nested deeper than %d levels", s->c->pass,
                   PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  int32_t n = 0;
  for (mil_op *op = b->first; op; op = op->next) n++;
  mil_op **ops = malloc(((size_t)n + 1) * sizeof *ops);
  if (!ops) {
    mil_diag_error(s->c->d, MIL_ERR_NOMEM, "%s: out of memory", s->c->pass);
    return -(int)MIL_ERR_NOMEM;
  }
  n = 0;
  for (mil_op *op = b->first; op; op = op->next) ops[n++] = op;
  int changed = 0;
  for (int32_t i = 0; i < n; i++) {
    mil_op *op = ops[i];
    if (op->block != b) continue; /* removed by an earlier rewrite */
    for (int32_t k = 0; k < op->n_blocks; k++) {
      int r = fuse_block_fixpoint(s, op->blocks[k], depth + 1);
      if (r < 0) {
        free(ops);
        return r;
      }
    }
    if (op->block != b || (op->n_blocks > 0 && !s->visit_block_ops)) continue;
    int r = s->fn(s->c, op);
    if (r < 0) {
      free(ops);
      return r;
    }
    if (r > 0) {
      s->changes += r;
      changed = 1;
    }
  }
  free(ops);
  return changed;
}

mil_status pass_fuse_run(pass_fuse_ctx *c, pass_fuse_fn fn, bool repeat, bool visit_block_ops, mil_pass_stats *st) {
  sweep_ctx s = {c, fn, repeat, visit_block_ops, 0};
  int r = 0;
  for (int32_t i = 0; i < c->p->n_functions && r >= 0; i++) {
    mil_function *f = c->p->functions[i];
    for (int32_t k = 0; k < f->n_specs && r >= 0; k++) r = fuse_block_fixpoint(&s, f->specs[k].block, 0);
  }
  if (st) st->changes += s.changes;
  return r < 0 ? (mil_status)(-r) : MIL_OK;
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
  if (v->type->dtype == MIL_DT_FP32 && v->data && v->nbytes >= (size_t)v->numel * 4) {
    const float *f = v->data;
    for (int64_t i = 0; i < v->numel; i++) out[i] = f[i];
  } else {
    for (int64_t i = 0; i < v->numel; i++) out[i] = mil_value_get_f64(v, i);
  }
  return out;
}

/* ---------- building ops ---------- */

mil_op *pass_fuse_new_op(pass_fuse_ctx *c, mil_op *anchor, const char *type, const char *name) {
  pass_names *names = pass_fuse_names(c);
  if (!names) return NULL;
  if (!name) name = pass_names_fresh(names, c->p, type);
  else if (!pass_names_add(names, name)) name = NULL;
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
  pass_names *names = pass_fuse_names(c);
  mil_var *out = NULL;
  if (names && v) {
    if (input) out = pass_const_before(anchor, names, op_name, input, v);
    else {
      const char *name = pass_names_fresh(names, c->p, "const");
      out = name ? pass_const_named_before(anchor, names, name, v) : NULL;
    }
  }
  if (!out) mil_diag_error(c->d, MIL_ERR_NOMEM, "%s: out of memory", c->pass);
  return out;
}

mil_status pass_fuse_finish(pass_fuse_ctx *c, mil_op *op) {
  mil_diag local;
  mil_diag_init(&local);
  mil_status st = pass_finish_op(op, &local);
  if (st == MIL_OK) {
    pass_names *names = pass_fuse_names(c);
    for (int32_t i = 0; names && i < op->n_outputs; i++) pass_names_add(names, op->outputs[i]->name);
    if (c->nonrep && !pass_nonrep_note_op(c->nonrep, op)) st = MIL_ERR_NOMEM;
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
  if (!c->nonrep && !pass_fuse_nonrep(c)) return -(int)MIL_ERR_NOMEM;
  if (!can_replace(c, old, new_var, remove, n_remove)) return 0;
  if (!pass_replace_uses_after(anchor, old, new_var)) return 0;
  mil_status st = pass_remove_ops(remove, n_remove, c->d);
  if (st != MIL_OK) return -(int)st;
  return 1;
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

int64_t *pass_fuse_conv_rows(const pass_np *w, bool deconv, int64_t groups, int64_t *cout) {
  if (w->rank < 3 || groups <= 0) return NULL;
  for (int32_t i = 0; i < w->rank; i++)
    if (w->shape[i] < 0) return NULL;
  int64_t k = 1;
  for (int32_t i = 2; i < w->rank; i++) k *= w->shape[i];
  int64_t s0 = w->shape[0], s1 = w->shape[1];
  if (deconv && s0 % groups != 0) return NULL;
  *cout = deconv ? s1 * groups : s0;
  int64_t *rows = malloc(((size_t)w->n + 1) * sizeof *rows);
  if (!rows) return NULL;
  int64_t per_row = deconv ? (s0 / groups) * k : s1 * k;
  for (int64_t e = 0; e < w->n; e++) {
    if (!deconv) {
      rows[e] = per_row ? e / per_row : 0;
      continue;
    }
    int64_t a = e / (s1 * k), b = (e / k) % s1, kk = e % k;
    int64_t t = (b * s0 + a) * k + kk;
    rows[e] = per_row ? t / per_row : 0;
  }
  return rows;
}

/* ---------- generic pattern matcher ---------- */

/* The ops binding v, one entry per binding, oldest binding first (use
 * lists are newest first). Returns the count (may exceed max). */
static int child_bindings(const mil_var *v, mil_op **out, int max) {
  int n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) {
      if (n < max) out[n] = u->op;
      n++;
    }
  for (int i = 0, j = (n < max ? n : max) - 1; i < j; i++, j--) {
    mil_op *t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return n;
}

static void pat_record(pass_pat_match *m, int pat_index, mil_op *op) {
  m->op[pat_index] = op;
  for (int i = 0; i < m->n_set; i++)
    if (m->set[i] == op) return;
  if (m->n_set < PASS_PAT_MAX_SET) m->set[m->n_set++] = op;
  else m->overflow = true;
}

/* Next permutation of a[0..n-1] in lexicographic order of positions;
 * false after the last. */
static bool next_perm(int *a, int n) {
  int i = n - 2;
  while (i >= 0 && a[i] >= a[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (a[j] <= a[i]) j--;
  int t = a[i];
  a[i] = a[j];
  a[j] = t;
  for (int l = i + 1, r = n - 1; l < r; l++, r--) {
    t = a[l];
    a[l] = a[r];
    a[r] = t;
  }
  return true;
}

/* _pattern_detected: pat_index < 0 checks the root var's children. */
static bool pat_detected(const pass_pattern *pat, pass_pat_match *m, mil_op *prog_op, int pat_index,
                         mil_var *root, int depth) {
  if (depth > PASS_PAT_MAX_OPS + 2) return false;
  const int *pchildren;
  int np;
  mil_var *v;
  if (pat_index >= 0) {
    const pass_pat_op *po = &pat->ops[pat_index];
    if (strcmp(prog_op->type, po->type) != 0 || prog_op->n_outputs != 1 || prog_op->block != m->block) return false;
    pchildren = po->children;
    np = po->n_children;
    v = prog_op->outputs[0];
    if (np == 0) {
      if (m->final && m->final != prog_op) return false;
      m->final = prog_op;
      pat_record(m, pat_index, prog_op);
      return true;
    }
  } else {
    pchildren = pat->root;
    np = pat->n_root;
    v = root;
  }
  mil_op *kids[PASS_PAT_MAX_CHILDREN];
  if (child_bindings(v, kids, PASS_PAT_MAX_CHILDREN) != np) return false;
  /* itertools.permutations over the pattern children, in order */
  int perm[PASS_PAT_MAX_CHILDREN];
  for (int i = 0; i < np; i++) perm[i] = i;
  bool same = false;
  do {
    bool types = true;
    for (int i = 0; i < np && types; i++) types = strcmp(pat->ops[pchildren[perm[i]]].type, kids[i]->type) == 0;
    if (!types) continue;
    bool ok = true;
    for (int i = 0; i < np && ok; i++) ok = pat_detected(pat, m, kids[i], pchildren[perm[i]], root, depth + 1);
    if (ok) {
      same = true;
      break;
    }
  } while (next_perm(perm, np));
  if (!same) return false;
  if (pat_index >= 0) pat_record(m, pat_index, prog_op);
  return true;
}

bool pass_pat_detect(const pass_pattern *pat, mil_op *op, pass_pat_match *m) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++) {
      mil_var *root = op->inputs[i].args[a].use.var;
      if (!root) continue;
      memset(m, 0, sizeof *m);
      m->block = op->block;
      if (!pat_detected(pat, m, NULL, -1, root, 0)) continue;
      if (m->overflow || !m->final) return false;
      m->root = root;
      for (int k = 0; k < m->n_set; k++)
        if (m->set[k] != m->final && pass_fuse_is_output_of(m->set[k]->outputs[0], m->block)) return false;
      return true;
    }
  return false;
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
