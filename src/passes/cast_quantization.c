/* The shared transform of add_fp16_cast and add_int16_cast. See
 * cast_quantization_internal.h.
 *
 * Per block a cache maps "<var>_to_<dtype>" to the cast made for a var
 * that several ops read, so they share one cast (coremltools keeps one
 * dict per block being walked; the cache is looked at only while the var
 * still has more than one reading op binding).
 *
 * The pass makes about two ops for every op it visits, so the casts and
 * their dtype consts are built here directly, as pass_bld_var would build
 * them: no default or input-order step (a cast has none to do), the type
 * of a cast of a value computed at run time set without the generic
 * inference, fresh names checked against the set of taken names only when
 * the interning table already holds the candidate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/cast_quantization_internal.h"

bool pass_castq_is_of(const mil_var *v, mil_dtype dt) {
  return v && v->type && v->type->kind == MIL_TYPE_TENSOR && v->type->dtype == dt;
}

static bool dtype_allowed(const mil_op *op, int opset, const char *param, const char *dtype) {
  mil_dtype dt;
  if (!mil_dtype_from_name(dtype, strlen(dtype), &dt)) return false;
  const mil_op_def *def = mil_op_def_find(op->type, opset);
  const mil_input_spec *s = def ? mil_op_def_input(def, param) : NULL;
  if (s && s->dtypes && !(s->dtypes & MIL_DTB(dt))) return false;
  const mil_op_def *cast = mil_op_def_find("cast", opset);
  const mil_input_spec *cx = cast ? mil_op_def_input(cast, "x") : NULL;
  return !cx || !cx->dtypes || (cx->dtypes & MIL_DTB(dt));
}

#define ALLOWED_SLOTS 256
#define TYPE_SLOTS 64

struct pass_castq_state {
  pass_bld b;
  const pass_castq *q;
  const mil_pass_options *o;
  bool has_selector;         /* op_selector is set */
  const char *const *skip;   /* skip_ops_by_type items (when the pass has it) */
  int32_t n_skip;
  pass_ptrmap type_ok;       /* interned op type -> TYPE_YES / TYPE_NO */
  pass_ptrmap *cache;        /* the innermost block's cache */
  /* buffers reused from op to op */
  pass_barg *args;
  int32_t cap_args;
  mil_var **vars; /* the bindings of tuple inputs, one run per input */
  int32_t cap_vars;
  char *name; /* names being composed */
  size_t cap_name;
  char *pfx; /* const name prefixes being composed */
  size_t cap_pfx;
  /* the dtype string values of the casts made so far (values are never
   * changed in place, so the consts share them) */
  const char *dt_name[4];
  mil_value *dt_val[4];
  /* Names: b.names, the set of taken names, is made only when a fresh
   * name's first candidate is already interned in the program (a string
   * never interned names nothing, so it is free). Until then the names of
   * the ops and vars the run removes or renames away are kept here, as the
   * set, made from the live program, must still hold them. */
  const char **gone;
  int32_t n_gone, cap_gone;
  /* interned strings the ops are built with */
  const char *s_cast, *s_const, *s_x, *s_dtype;
  /* the opset of the last block asked for (pass_castq_dtype_allowed) */
  const mil_block *opset_block;
  int opset_ver;
  /* the output types of direct casts, by input type and dtype (types are
   * shared records: equal arguments give the same one) */
  struct type_slot {
    const mil_type *in, *out;
    mil_dtype dt;
  } types[TYPE_SLOTS];
  /* the cast variant of the last function asked for */
  const mil_function *cast_func;
  int cast_opset;
  const mil_op_def *cast_def;
  bool cast_plain; /* it has no defaults and its inputs are x, dtype */
  bool cast_direct; /* and a string const dtype passes its input checks */
  /* the program is large enough for its interning table to miss the
   * caches: the new names of each op are prefetched before it is
   * transformed */
  bool prefetch;
  struct allowed_slot {
    const char *type, *param, *dtype;
    int opset;
    bool yes;
  } allowed[ALLOWED_SLOTS]; /* pass_castq_dtype_allowed's answers */
};

#define TYPE_YES ((void *)1)
#define TYPE_NO ((void *)2)

bool pass_castq_dtype_allowed(pass_castq_state *r, const mil_op *op, const char *param, const char *dtype) {
  int opset;
  if (r && op->block && op->block == r->opset_block) opset = r->opset_ver;
  else {
    opset = pass_op_opset(op);
    if (opset < 0) opset = MIL_IOS18;
    if (r && op->block) {
      r->opset_block = op->block;
      r->opset_ver = opset;
    }
  }
  if (!r) return dtype_allowed(op, opset, param, dtype);
  /* the op type and input name are interned in the program being run on */
  uintptr_t h = (uintptr_t)op->type * 31u ^ (uintptr_t)param * 7u ^ (uintptr_t)dtype ^ (uintptr_t)opset;
  struct allowed_slot *s = &r->allowed[(h ^ (h >> 11)) & (ALLOWED_SLOTS - 1)];
  if (s->type == op->type && s->param == param && s->dtype == dtype && s->opset == opset) return s->yes;
  bool yes = dtype_allowed(op, opset, param, dtype);
  *s = (struct allowed_slot){op->type, param, dtype, opset, yes};
  return yes;
}

/* r->name = a + b + c; false on out of memory. */
static bool cat3(pass_castq_state *r, const char *a, const char *b, const char *c, size_t *len) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c), n = la + lb + lc + 1;
  if (n > r->cap_name) {
    size_t cap = n < 256 ? 256 : n * 2;
    char *s = realloc(r->name, cap);
    if (!s) return false;
    r->name = s;
    r->cap_name = cap;
  }
  memcpy(r->name, a, la);
  memcpy(r->name + la, b, lb);
  memcpy(r->name + la + lb, c, lc);
  r->name[n - 1] = 0;
  if (len) *len = n - 1;
  return true;
}

/* ---------- names ---------- */

/* The set of taken names, made now if it is not yet: the live names plus
 * those gone since the run began. */
static pass_names *names_now(pass_castq_state *r) {
  if (r->b.names) return r->b.names;
  pass_names *n = pass_names_new(r->b.p);
  for (int32_t i = 0; n && i < r->n_gone; i++)
    if (!pass_names_add_interned(n, r->gone[i])) {
      pass_names_free(n);
      n = NULL;
    }
  if (!n) {
    mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory collecting names", r->q->pass);
    return NULL;
  }
  free(r->gone);
  r->gone = NULL;
  r->n_gone = r->cap_gone = 0;
  return r->b.names = n;
}

/* Records the interned name of a new op or var as taken; false on out of
 * memory. */
static bool note_name(pass_castq_state *r, const char *name) {
  return !r->b.names || pass_names_add_interned(r->b.names, name);
}

/* Records that name no longer names a live op or var; false on out of
 * memory. */
static bool note_gone(pass_castq_state *r, const char *name) {
  if (r->b.names || !name) return true;
  if (r->n_gone == r->cap_gone) {
    int32_t cap = r->cap_gone ? r->cap_gone * 2 : 1024;
    const char **g = realloc(r->gone, (size_t)cap * sizeof *g);
    if (!g) return false;
    r->gone = g;
    r->cap_gone = cap;
  }
  r->gone[r->n_gone++] = name;
  return true;
}

/* Records the names op takes with it before it is removed (its nested
 * blocks' are had by making the set now); false on out of memory. */
static bool note_removal(pass_castq_state *r, const mil_op *op) {
  if (r->b.names) return true;
  if (op->n_blocks) return names_now(r) != NULL;
  bool ok = note_gone(r, op->name);
  for (int32_t i = 0; ok && i < op->n_outputs; i++) ok = note_gone(r, op->outputs[i]->name);
  return ok;
}

/* The name of the const made for input `input` of op `op_name`:
 * pass_names_fresh("<op_name>_<input>") (pass_const_before's naming),
 * interned and recorded. Before the set of taken names is made, a name
 * the program never interned is free. NULL on out of memory. */
static const char *const_name(pass_castq_state *r, const char *op_name, const char *input) {
  size_t lo = strlen(op_name), li = strlen(input), n = lo + 1 + li;
  if (n + 48 > r->cap_pfx) {
    size_t cap = n + 48 < 256 ? 256 : (n + 48) * 2;
    char *b = realloc(r->pfx, cap);
    if (!b) return NULL;
    r->pfx = b;
    r->cap_pfx = cap;
  }
  char *b = r->pfx;
  memcpy(b, op_name, lo);
  b[lo] = '_';
  memcpy(b + lo + 1, input, li);
  size_t m = pass_name_counted(r->b.p, b, n);
  if (!m) return NULL;
  if (!r->b.names) {
    bool added;
    const char *s = mil_program_intern_new(r->b.p, b, m, &added);
    if (!s || added) return s;
    if (!names_now(r)) return NULL;
  }
  return pass_names_claim(r->b.names, r->b.p, b, m);
}

/* ---------- building ---------- */

/* Removes the ops inserted between mark (exclusive; NULL = block start) and
 * stop (exclusive), last first. */
static void rollback(mil_op *mark, mil_op *stop) {
  for (;;) {
    mil_op *last = stop->prev;
    if (!last || last == mark) break;
    mil_op_remove(last);
  }
}

/* A const op holding v for input `input` of op, inserted before op; its
 * output var, or NULL on out of memory. */
static mil_var *const_before(pass_castq_state *r, mil_op *op, const char *input, const mil_value *v) {
  const char *name = const_name(r, op->name, input);
  if (!name) return NULL;
  mil_op *k = mil_op_new(r->b.p, r->s_const, name);
  mil_var *out = k ? mil_op_add_output(k, name, v->type) : NULL;
  if (!out) return NULL;
  mil_var_set_value(out, v);
  mil_block_insert_before(op, k);
  return out;
}

/* The variant of cast for op's opset (as the registry finds it). */
static void cast_variant(pass_castq_state *r, const mil_op *op) {
  const mil_block *b = op->block;
  while (b && !b->func && b->parent) b = b->parent->block;
  const mil_function *f = b ? b->func : NULL;
  if (r->cast_def && f && r->cast_func == f) return;
  int version = f ? mil_opset_version(f->opset) : MIL_IOS18;
  if (version < 0) version = MIL_IOS18;
  r->cast_func = f;
  if (r->cast_def && r->cast_opset == version) return;
  const mil_op_def *def = mil_op_def_find("cast", version);
  r->cast_opset = version;
  r->cast_def = def;
  r->cast_plain = def && !def->defaults && def->n_inputs == 2 && strcmp(def->inputs[0].name, "x") == 0 &&
                  strcmp(def->inputs[1].name, "dtype") == 0;
  r->cast_direct = false;
  if (r->cast_plain) {
    const mil_input_spec *x = &def->inputs[0], *t = &def->inputs[1];
    r->cast_direct = (x->kinds & MIL_IK_TENSOR) && !(x->flags & MIL_IF_CONST) &&
                     (t->kinds & (MIL_IK_TENSOR | MIL_IK_SCALAR)) &&
                     (!t->dtypes || (t->dtypes & MIL_DTB(MIL_DT_STRING))) &&
                     !(x->type_var && t->type_var && strcmp(x->type_var, t->type_var) == 0);
  }
}

/* The dtype a cast of r's variant produces for the name dtype (the names
 * cast takes: four from iOS13 on, four more from iOS17 on); false when
 * the variant does not take it. */
static bool cast_target(const pass_castq_state *r, const char *dtype, mil_dtype *out) {
  static const struct {
    const char *name;
    mil_dtype dt;
    bool ios17;
  } k[] = {{"fp16", MIL_DT_FP16, false}, {"fp32", MIL_DT_FP32, false},  {"int32", MIL_DT_INT32, false},
           {"bool", MIL_DT_BOOL, false}, {"int8", MIL_DT_INT8, true},   {"uint8", MIL_DT_UINT8, true},
           {"int16", MIL_DT_INT16, true}, {"uint16", MIL_DT_UINT16, true}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    if (strcmp(k[i].name, dtype) == 0) {
      if (k[i].ios17 && r->cast_def->opset < MIL_IOS17) return false;
      *out = k[i].dt;
      return true;
    }
  return false;
}

/* mil_op_infer of cast c (inputs x = var, dtype = a const holding dtype)
 * when var is a tensor computed at run time: the output, named after c,
 * is var's type with the target dtype, without value or mark. Returns
 * false, having done nothing, for any other case (left to mil_op_infer).
 * Sets *ok to false on out of memory. */
static bool infer_direct(pass_castq_state *r, mil_op *c, const mil_var *var, const char *dtype, bool *ok) {
  const mil_type *t = var->type;
  mil_dtype dt;
  if (!r->cast_direct || var->val || var->mark != MIL_MARK_NONE || !t || t->kind != MIL_TYPE_TENSOR) return false;
  if (strlen(c->name) >= 512) return false; /* mil_op_infer shortens the output's name */
  const mil_input_spec *xs = &r->cast_def->inputs[0];
  if (xs->dtypes && !(xs->dtypes & MIL_DTB(t->dtype))) return false;
  if (!cast_target(r, dtype, &dt)) return false;
  struct type_slot *ts = &r->types[(((uintptr_t)t >> 4) ^ (uintptr_t)dt * 7u) & (TYPE_SLOTS - 1)];
  const mil_type *ot = ts->in == t && ts->dt == dt ? ts->out : NULL;
  if (!ot) {
    ot = t->is_scalar ? mil_type_scalar(r->b.p, dt) : mil_type_tensor(r->b.p, dt, t->rank, t->dims);
    if (ot) *ts = (struct type_slot){t, ot, dt};
  }
  c->def = r->cast_def;
  *ok = ot && mil_op_add_output(c, c->name, ot);
  return true;
}

/* A cast of var to dtype named name before op (value fixed up by the
 * policy), built as pass_bld_var builds it: the cast, then the const of
 * its dtype "<name>_dtype_<k>" before it, then inference. A cast needs
 * no defaults and its inputs are in order, so only the inference of
 * pass_finish_op is run. NULL after recording the error. */
static mil_var *make_cast(pass_castq_state *r, mil_op *op, mil_var *var, const char *dtype, const char *name,
                          mil_status *st) {
  mil_program *p = r->b.p;
  mil_value *dv = NULL;
  int i = 0;
  while (i < 4 && r->dt_name[i] && r->dt_name[i] != dtype) i++;
  if (i < 4 && r->dt_name[i]) dv = r->dt_val[i];
  else if ((dv = pass_bld_str(p, dtype)) && i < 4) {
    r->dt_name[i] = dtype;
    r->dt_val[i] = dv;
  }
  if (!dv) {
    *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return NULL;
  }
  mil_op *mark = op->prev;
  mil_op *c = mil_op_new(p, r->s_cast, name);
  if (!c || !note_name(r, c->name)) goto oom;
  mil_block_insert_before(op, c);
  /* both inputs and their bindings in one block */
  mil_input *in = mil_program_alloc(p, 2 * sizeof *in + 2 * sizeof(mil_arg));
  if (!in) goto oom_rb;
  mil_arg *args = (mil_arg *)(in + 2);
  c->inputs = in;
  c->cap_inputs = 2;
  in[0] = (mil_input){.name = r->s_x, .n_args = 1, .args = &args[0]};
  c->n_inputs = 1;
  mil_arg_set_var(c, &args[0], var);
  mil_var *k = const_before(r, c, r->s_dtype, dv);
  if (!k) goto oom_rb;
  in[1] = (mil_input){.name = r->s_dtype, .n_args = 1, .args = &args[1]};
  c->n_inputs = 2;
  mil_arg_set_var(c, &args[1], k);
  cast_variant(r, c);
  bool made = true;
  if (infer_direct(r, c, var, dtype, &made)) {
    if (!made) goto oom_rb;
    *st = MIL_OK;
  } else
    *st = r->cast_plain ? mil_op_infer(c, r->b.d) : pass_finish_op(c, r->b.d);
  if (*st != MIL_OK) {
    rollback(mark, op);
    return NULL;
  }
  for (int32_t j = 0; j < c->n_outputs; j++)
    if (!note_name(r, c->outputs[j]->name)) goto oom;
  mil_var *x = c->n_outputs > 0 ? c->outputs[0] : NULL;
  if (x && x->val && r->q->fix_value && !r->q->fix_value(r->q, p, x, var)) {
    *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return NULL;
  }
  return x;
oom_rb:
  rollback(mark, op);
oom:
  *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory building a cast op", r->q->pass);
  return NULL;
}

static mil_var *state_const(void *ud, mil_op *op, const char *input, const mil_value *v) {
  return const_before(ud, op, input, v);
}

/* pass_bld_op for the rebuilt op: type named name before anchor with the
 * given inputs (values become consts "<name>_<input>_<k>"), finished by
 * pass_finish_op. On failure everything inserted is removed. */
static mil_op *build_op(pass_castq_state *r, mil_op *anchor, const char *type, const char *name, int32_t n,
                        const pass_barg *args, mil_status *st) {
  mil_op *mark = anchor->prev;
  mil_op *op = mil_op_new(r->b.p, type, name);
  if (!op || !note_name(r, op->name)) goto oom;
  mil_block_insert_before(anchor, op);
  if (!pass_bld_bind(op, n, args, state_const, r)) goto oom_rb;
  *st = pass_finish_op(op, r->b.d);
  if (*st != MIL_OK) {
    rollback(mark, anchor);
    return NULL;
  }
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!note_name(r, op->outputs[i]->name)) goto oom;
  return op;
oom_rb:
  rollback(mark, anchor);
oom:
  *st = mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory building a %s op", r->q->pass, type);
  return NULL;
}

/* Room for n arguments and n_vars tuple bindings in r's buffers. */
static bool reserve(pass_castq_state *r, int32_t n, int32_t n_vars) {
  if (n > r->cap_args) {
    int32_t cap = n < 16 ? 16 : n * 2;
    pass_barg *a = realloc(r->args, (size_t)cap * sizeof *a);
    if (!a) return false;
    r->args = a;
    r->cap_args = cap;
  }
  if (n_vars > r->cap_vars) {
    int32_t cap = n_vars < 16 ? 16 : n_vars * 2;
    mil_var **v = realloc(r->vars, (size_t)cap * sizeof *v);
    if (!v) return false;
    r->vars = v;
    r->cap_vars = cap;
  }
  return true;
}

/* coremltools' CastTypeQuantization.transform_op. Returns 1 when op was
 * rebuilt, 0 when nothing was cast, -(status). */
static int transform(pass_castq_state *r, mil_op *op) {
  const pass_castq *q = r->q;
  mil_program *p = r->b.p;
  mil_status st = MIL_OK;
  int32_t n_in = op->n_inputs, n_vars = 0;
  for (int32_t i = 0; i < n_in; i++)
    if (op->inputs[i].is_tuple) n_vars += op->inputs[i].n_args;
  /* the new op's arguments: one per binding (tuple inputs keep theirs) */
  if (!reserve(r, n_in + 1, n_vars + 1)) goto oom;
  pass_barg *args = r->args;
  bool modified = false;
  int32_t n_args = 0, used_vars = 0;
  for (int32_t i = 0; i < n_in; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->n_args < 1) continue;
    pass_barg *a = &args[n_args++];
    *a = (pass_barg){.name = in->name};
    mil_var **vars = NULL;
    if (in->is_tuple) {
      vars = r->vars + used_vars;
      used_vars += in->n_args;
      for (int32_t k = 0; k < in->n_args; k++) vars[k] = in->args[k].use.var;
      a->vars = vars;
      a->n = in->n_args;
    } else if (in->args[0].use.var) {
      a->var = in->args[0].use.var;
    } else {
      a->val = in->args[0].value;
      continue;
    }
    const char *tgt = q->should_cast(q, r, op, in);
    if (!tgt) continue;
    for (int32_t k = 0; k < in->n_args; k++) {
      mil_var *v = in->args[k].use.var;
      if (!v) continue;
      const mil_value *sv = v->val;
      if (pass_castq_is_of(v, MIL_DT_STRING) && sv && sv->numel == 1 && strcmp(mil_value_get_str(sv, 0), "int32") == 0) {
        /* a dtype given as a string: ask for the 16-bit one */
        modified = true;
        if (!in->is_tuple) {
          a->var = NULL;
          a->val = pass_bld_str(p, strcmp(op->type, "topk") == 0 ? "uint16" : "int16");
          if (!a->val) goto oom;
        }
        continue;
      }
      if (!pass_castq_is_of(v, q->origin_dt)) continue;
      modified = true;
      size_t len;
      if (!cat3(r, v->name, "_to_", tgt, &len)) goto oom;
      /* a var read by several ops shares one cast, found by name */
      bool shared = pass_n_op_uses(v) > 1;
      const char *key = mil_program_intern(p, r->name, len);
      if (!key) goto oom;
      mil_var *x = shared ? pass_ptrmap_get(r->cache, key) : NULL;
      if (!x) {
        x = make_cast(r, op, v, tgt, key, &st);
        if (!x) return -(int)st;
        if (shared && !pass_ptrmap_put(r->cache, key, x)) goto oom;
      }
      if (in->is_tuple) vars[k] = x;
      else a->var = x;
    }
  }
  if (!modified) return 0;
  size_t len;
  const char *name = cat3(r, op->name, "_cast_", q->target, &len) ? mil_program_intern(p, r->name, len) : NULL;
  if (!name) goto oom;
  mil_op *nop = build_op(r, op, op->type, name, n_args, args, &st);
  if (!nop) return -(int)st;
  for (int32_t i = 0; i < op->n_outputs && i < nop->n_outputs; i++) {
    mil_var *old = op->outputs[i], *nv = nop->outputs[i];
    mil_var *repl = nv;
    if (pass_castq_is_of(old, q->origin_dt) && !pass_castq_is_of(nv, q->origin_dt)) {
      const char *cname = cat3(r, nv->name, "_to_", q->origin, &len) ? mil_program_intern(p, r->name, len) : NULL;
      if (!cname) goto oom;
      repl = make_cast(r, op, nv, q->origin, cname, &st);
      if (!repl) return -(int)st;
    }
    const char *was = repl->name;
    pass_replace_uses_after(op, old, repl);
    /* a function output keeps its name: repl's own is free again */
    if (repl->name != was && !note_gone(r, was)) goto oom;
  }
  if (!note_removal(r, op)) goto oom;
  /* the usual case, every output now unused, needs no bookkeeping */
  bool unused = op->n_blocks == 0;
  for (int32_t i = 0; i < op->n_outputs && unused; i++) unused = op->outputs[i]->n_uses == 0;
  if (unused) st = mil_op_remove(op);
  else st = pass_remove_ops(&op, 1, r->b.d);
  return st != MIL_OK ? -(int)st : 1;
oom:
  return -(int)mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", q->pass);
}

/* The per-type part of the policy and of the options, kept per interned
 * type. */
static bool type_selected(pass_castq_state *r, const char *type, bool *ok) {
  void *k = pass_ptrmap_get(&r->type_ok, type);
  if (k) {
    *ok = k == TYPE_YES;
    return true;
  }
  bool yes = r->q->type_ok(type);
  for (int32_t i = 0; yes && !r->has_selector && i < r->n_skip; i++)
    if (strcmp(r->skip[i], type) == 0) yes = false;
  *ok = yes;
  return pass_ptrmap_put(&r->type_ok, type, yes ? TYPE_YES : TYPE_NO);
}

/* From about this many ops on (some four names an op, 16 bytes a slot,
 * at most half full: a table of a MiB), the interning table does not stay
 * in the caches while the pass reads and converts weights. */
#define PREFETCH_MIN_OPS 4096

/* A name being composed for prefetching. */
typedef struct pname {
  char s[256];
  size_t n;
} pname;

/* Appends s; false when the name gets too long (it is then not asked for). */
static bool put(pname *b, const char *s) {
  size_t l = strlen(s);
  if (b->n + l >= sizeof b->s) return false;
  memcpy(b->s + b->n, s, l + 1);
  b->n += l;
  return true;
}

/* Prefetches the interning slots of the names transforming op would make
 * ("<v>_to_<target>" and its dtype const's for the inputs that may be
 * cast, "<op>_cast_<target>", its cast back and that cast's dtype const):
 * each new name of a large program misses the cache, and asked for
 * together the misses overlap instead of following one another. */
static void prefetch_names(pass_castq_state *r, const mil_op *op) {
  const pass_castq *q = r->q;
  mil_program *p = r->b.p;
  pname b;
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t k = 0; k < op->inputs[i].n_args; k++) {
      const mil_var *v = op->inputs[i].args[k].use.var;
      if (!v || !pass_castq_is_of(v, q->origin_dt)) continue;
      b.n = 0;
      if (!put(&b, v->name) || !put(&b, "_to_") || !put(&b, q->target)) continue;
      mil_program_intern_prefetch(p, b.s, b.n);
      if (put(&b, "_dtype_0")) mil_program_intern_prefetch(p, b.s, b.n);
    }
  b.n = 0;
  if (!put(&b, op->name) || !put(&b, "_cast_") || !put(&b, q->target)) return;
  mil_program_intern_prefetch(p, b.s, b.n);
  if (!put(&b, "_to_") || !put(&b, q->origin)) return;
  mil_program_intern_prefetch(p, b.s, b.n);
  if (put(&b, "_dtype_0")) mil_program_intern_prefetch(p, b.s, b.n);
}

static int walk_block(pass_castq_state *r, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) {
    mil_diag_error(r->b.d, MIL_ERR_UNSUPPORTED, "%s: blocks nested deeper than %d levels", r->q->pass, PASS_MAX_DEPTH);
    return -(int)MIL_ERR_UNSUPPORTED;
  }
  pass_ptrmap cache = {0}, *outer = r->cache;
  mil_op **ops = malloc(((size_t)b->n_ops + 1) * sizeof *ops);
  if (!ops) {
    mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
    return -(int)MIL_ERR_NOMEM;
  }
  int32_t n = 0;
  for (mil_op *op = b->first; op && n < b->n_ops; op = op->next) ops[n++] = op;
  int rc = 0;
  for (int32_t i = 0; i < n && rc >= 0; i++) {
    mil_op *op = ops[i];
    if (op->block != b) continue;
    for (int32_t k = 0; k < op->n_blocks && rc >= 0; k++) rc = walk_block(r, op->blocks[k], depth + 1);
    if (rc < 0) break;
    r->cache = &cache;
    bool ok;
    if (!type_selected(r, op->type, &ok)) {
      rc = -(int)mil_diag_error(r->b.d, MIL_ERR_NOMEM, "%s: out of memory", r->q->pass);
      break;
    }
    if (ok && (!r->q->is_valid_op || r->q->is_valid_op(r->q, op)) &&
        (!r->has_selector || mil_pass_opt_selects(r->o, "op_selector", op))) {
      if (r->prefetch) prefetch_names(r, op);
      int t = transform(r, op);
      if (t < 0) rc = t;
      else r->b.changes += t;
      /* the values of the ops just replaced (an fp32 weight's transposed
       * copy, its cast back to fp32) are given back as the pass goes, not
       * after it: on a large model they would add up to a sizable part of
       * the weights */
      if (t > 0) mil_program_collect_garbage(r->b.p, true);
    }
  }
  r->cache = outer;
  pass_ptrmap_free(&cache);
  free(ops);
  return rc;
}

mil_status pass_castq_run(const pass_castq *q, mil_program *p, const mil_pass_options *o, bool has_skip_option,
                          mil_pass_stats *stats, mil_diag *d) {
  if (has_skip_option && mil_pass_opt_is_set(o, "op_selector")) {
    const char *const *items = NULL;
    int32_t n = mil_pass_opt_list(o, "skip_ops_by_type", &items);
    for (int32_t i = 0; i < n; i++)
      if (items[i] && items[i][0])
        return mil_diag_error(d, MIL_ERR_INVALID,
                              "%s: the option skip_ops_by_type cannot be set together with op_selector; use one of "
                              "them to choose the ops",
                              q->pass);
  }
  pass_castq_state r = {.b = {.p = p, .d = d, .pass = q->pass}, .q = q, .o = o};
  r.s_cast = mil_program_intern(p, "cast", 4);
  r.s_const = mil_program_intern(p, "const", 5);
  r.s_x = mil_program_intern(p, "x", 1);
  r.s_dtype = mil_program_intern(p, "dtype", 5);
  if (!r.s_cast || !r.s_const || !r.s_x || !r.s_dtype)
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", q->pass);
  r.prefetch = mil_program_count_ops(p) >= PREFETCH_MIN_OPS;
  r.has_selector = mil_pass_opt_is_set(o, "op_selector");
  if (has_skip_option && !r.has_selector) r.n_skip = mil_pass_opt_list(o, "skip_ops_by_type", &r.skip);
  mil_status st = MIL_OK;
  for (int32_t i = 0; i < p->n_functions && st == MIL_OK; i++) {
    mil_function *f = p->functions[i];
    for (int32_t s = 0; s < f->n_specs && st == MIL_OK; s++) {
      int rc = walk_block(&r, f->specs[s].block, 0);
      if (rc < 0) st = (mil_status)(-rc);
    }
  }
  pass_bld_free(&r.b);
  pass_ptrmap_free(&r.type_ok);
  free(r.args);
  free(r.vars);
  free(r.name);
  free(r.pfx);
  free(r.gone);
  if (stats) stats->changes += r.b.changes;
  return st;
}
