/* The executor: runs the ops of a block in order on runtime values.
 *
 * Every runtime value is bound to its var (var->val, and var->type set to
 * the value's concrete type) in the run's private copy of the program, so
 * the op registry's type inference sees concrete shapes and its value
 * inference sees known inputs: for one op,
 *
 *   1. type inference (def->infer) gives the concrete output types;
 *   2. the interpreter kernel of the op type, if any, computes the outputs
 *      (or declines: INTERP_DECLINE);
 *   3. otherwise the op's value inference (def->fold) computes them.
 *
 * Kernels flagged INTERP_K_SELF (control flow, lists, states, constexpr)
 * skip step 1 and produce their output types themselves. */
#include <stdio.h>
#include <string.h>

#include "interp/interp_internal.h"

void interp_bind(mil_var *v, const mil_value *val) {
  v->val = val;
  v->mark = val ? MIL_MARK_VALUE : MIL_MARK_NONE;
  if (val && val->type) v->type = val->type;
}

/* "x: (1, 3, fp32), y: (fp32)" for messages. */
static void describe_inputs(const mil_op *op, char *buf, size_t n) {
  size_t l = 0;
  buf[0] = 0;
  for (int32_t i = 0; i < op->n_inputs && l + 1 < n; i++) {
    const mil_input *in = &op->inputs[i];
    for (int32_t j = 0; j < in->n_args && l + 1 < n; j++) {
      const mil_arg *a = &in->args[j];
      const mil_type *t = a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
      char tb[160];
      mil_type_to_string(t, tb, sizeof tb);
      int k = snprintf(buf + l, n - l, "%s%s: %s", l ? ", " : "", in->name, tb);
      if (k < 0) break;
      l += (size_t)k;
    }
  }
}

/* Bytes of a static tensor type (0 when not static). */
static int64_t static_bytes(const mil_type *t) {
  int64_t n = mil_type_numel(t);
  return n > 0 ? (int64_t)mil_dtype_storage_bytes(t->dtype, n) : 0;
}

/* The per-value limit (mil_interp_set_max_value_bytes): every output whose
 * type inference gave a static tensor shape is measured, element count
 * checked for overflow first, before a kernel or value inference
 * allocates it. */
static mil_status check_value_sizes(interp_run *r, mil_infer_ctx *c, int32_t n, const mil_type **types) {
  for (int32_t i = 0; i < n; i++) {
    const mil_type *t = types[i];
    if (!t || t->kind != MIL_TYPE_TENSOR || t->rank <= 0) continue;
    int64_t count = 1;
    bool over = false, symbolic = false;
    for (int32_t k = 0; k < t->rank; k++) {
      int64_t s = t->dims[k].size;
      if (s < 0) {
        symbolic = true;
        continue;
      }
      if (s && count > MIL_TENSOR_MAX_ELEMENTS / s) over = true;
      else count *= s;
    }
    if (symbolic && !over) continue;
    int64_t bytes = over ? 0 : (int64_t)mil_dtype_storage_bytes(t->dtype, count);
    if (!over && bytes <= r->max_value_bytes) continue;
    char tb[200], sz[64];
    mil_type_to_string(t, tb, sizeof tb);
    if (over)
      snprintf(sz, sizeof sz, "more than 2^48 elements");
    else
      snprintf(sz, sizeof sz, "%lld bytes", (long long)bytes);
    const char *name = i < c->op->n_outputs && c->op->outputs[i]->name ? c->op->outputs[i]->name : "?";
    return interp_fail(c, MIL_ERR_NOMEM,
                       "output %d %%%s %s would take %s, more than the limit of %lld bytes on one value "
                       "(mil_interp_set_max_value_bytes, mil run --max-value-bytes)",
                       (int)i, name, tb, sz, (long long)r->max_value_bytes);
  }
  return MIL_OK;
}

static mil_status exec_const(interp_run *r, mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (!op->outputs[i]->val)
      return mil_diag_error(r->d, MIL_ERR_INVALID, "function '%s': op '%s' (const): the const has no value",
                            r->fn->name, op->name);
  return MIL_OK;
}

static mil_status exec_op(interp_run *r, mil_op *op) {
  if (mil_op_is_const(op)) return exec_const(r, op);
  const mil_op_def *def = mil_op_def_find(op->type, r->opset);
  if (!def)
    return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "function '%s': op '%s' (%s): unknown op type in opset %s",
                          r->fn->name, op->name, op->type, r->fn->opset ? r->fn->opset : "?");
  int32_t n = op->n_outputs ? op->n_outputs : (def->n_outputs > 0 ? def->n_outputs : 1);
  const mil_type *types_s[16];
  const mil_value *vals_s[16];
  mil_mark marks_s[16];
  const mil_type **types = types_s;
  const mil_value **vals = vals_s;
  mil_mark *marks = marks_s;
  if (n > 16) {
    types = mil_program_alloc(r->prog, (size_t)n * sizeof *types);
    vals = mil_program_alloc(r->prog, (size_t)n * sizeof *vals);
    marks = mil_program_alloc(r->prog, (size_t)n * sizeof *marks);
    if (!types || !vals || !marks) return mil_diag_error(r->d, MIL_ERR_NOMEM, "out of memory");
  }
  for (int32_t i = 0; i < n; i++) {
    types[i] = NULL;
    vals[i] = NULL;
    marks[i] = MIL_MARK_NONE;
  }
  mil_infer_ctx c;
  memset(&c, 0, sizeof c);
  c.op = op;
  c.def = def;
  c.prog = r->prog;
  c.opset = r->opset;
  c.func = r->fn->name;
  c.diag = r->d;
  c.n_out = n;
  c.out = types;
  c.val = vals;
  c.mark = marks;
  op->def = def;

  const interp_kernel *k = interp_kernel_find(op->type);
  mil_status st;
  if (k && (k->flags & INTERP_K_SELF)) {
    st = k->fn(r, &c);
    if (st != MIL_OK) return st;
  } else {
    st = def->infer(&c);
    if (st != MIL_OK) return st;
    for (int32_t i = 0; i < n; i++)
      if (!types[i]) return interp_fail(&c, MIL_ERR_TYPE, "type inference produced no type for output %d", i);
    if ((st = check_value_sizes(r, &c, n, types)) != MIL_OK) return st;
    st = INTERP_DECLINE;
    if (k) {
      st = k->fn(r, &c);
      if (st == INTERP_DECLINE)
        for (int32_t i = 0; i < n; i++) vals[i] = NULL;
      else if (st != MIL_OK) return st;
    }
    if (st == INTERP_DECLINE && def->fold) {
      st = def->fold(&c);
      if (st != MIL_OK) return st;
    }
  }
  for (int32_t i = 0; i < op->n_outputs; i++) {
    int64_t big = vals[i] ? 0 : static_bytes(types[i]);
    if (big > MIL_FOLD_MAX_BYTES) {
      char tb[160];
      return interp_fail(&c, MIL_ERR_NOMEM, "cannot be executed: output %d %s needs %lld bytes, which could not be "
                         "allocated", i, mil_type_to_string(types[i], tb, sizeof tb), (long long)big);
    }
    if (!vals[i]) {
      char desc[512];
      describe_inputs(op, desc, sizeof desc);
      return interp_fail(&c, MIL_ERR_UNSUPPORTED,
                         "cannot be executed: %s (inputs %s); see docs/interpreter.md",
                         k ? "its kernel does not handle these inputs"
                           : def->fold ? "it has no interpreter kernel and its value inference does not compute these inputs"
                                       : "it has no interpreter kernel and no value inference",
                         desc);
    }
  }
  for (int32_t i = 0; i < op->n_outputs; i++) interp_bind(op->outputs[i], vals[i]);
  return MIL_OK;
}

/* Whether running op has an effect besides its outputs: a state update, a
 * random draw (it advances the run's generator) or nested blocks (which
 * may hold either). */
static bool has_effect(const mil_op *op) {
  return op->n_blocks > 0 || strcmp(op->type, "coreml_update_state") == 0 || strncmp(op->type, "random_", 7) == 0;
}

/* Hands the tensor outputs of op to the run's observer. */
static void observe(interp_run *r, const mil_op *op) {
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const mil_value *val = op->outputs[i]->val;
    if (!val || val->kind != MIL_VAL_TENSOR || !val->type || val->type->dtype == MIL_DT_STRING) continue;
    int64_t shape[MIL_INTERP_MAX_RANK];
    mil_tensor t;
    t.dtype = val->type->dtype;
    t.rank = interp_vshape(val, shape);
    t.shape = shape;
    t.data = mil_value_data(val);
    t.numel = 1;
    for (int32_t k = 0; k < t.rank; k++) t.numel *= shape[k];
    t.nbytes = mil_dtype_storage_bytes(t.dtype, t.numel);
    r->observer(r->observer_ud, op->name, op->type, op->outputs[i]->name, &t);
  }
}

/* The activation op whose conv applied it already: its output is the
 * conv's output value (same type), bound without computing. */
/* An op whose result its conv computed (fuse.c): its output is the value
 * of its input from the conv (x, or an add's y when fe->take_y). */
static mil_status take_fused(interp_run *r, mil_op *op, const interp_fuse_ent *fe) {
  const mil_var *x = interp_input_var(op, fe->take_y ? "y" : "x");
  if (!x || !x->val || op->n_outputs != 1)
    return mil_diag_error(r->d, MIL_ERR_INVALID, "function '%s': op '%s' (%s): its fused input has no value",
                          r->fn->name, op->name, op->type);
  op->def = mil_op_def_find(op->type, r->opset);
  interp_bind(op->outputs[0], x->val);
  return MIL_OK;
}

/* The value a conv (op, number `index` of its block) fused with a residual
 * add adds to its output: the add's other operand, when it has a value of
 * the conv's output type (fuse.c made it so; NULL otherwise). */
static const mil_value *skip_of(const mil_op *op, const interp_fuse_ent *fe, int32_t index) {
  const mil_op *add = op;
  for (int32_t i = index; add && i < fe->partner; i++) add = add->next;
  const mil_var *v = add ? interp_input_var(add, fe->take_y ? "x" : "y") : NULL;
  const mil_type *t = op->outputs[0]->type;
  if (!v || !v->val || v->val->kind != MIL_VAL_TENSOR || !v->val->type || !t || !mil_value_data(v->val) ||
      v->val->type->dtype != t->dtype || v->val->numel != mil_type_numel(t))
    return NULL;
  return v->val;
}

static char k_dead; /* op->aux of an op whose outputs nothing needs */

/* Marks (op->aux = &k_dead) the ops of b whose outputs nothing needs: no
 * block output, no op of a nested block and no needed op of b uses them.
 * They are not run, so an unused fill of a 4 GB shape allocates nothing. */
static void mark_dead(mil_block *b) {
  for (mil_op *op = b->last; op; op = op->prev) {
    bool live = has_effect(op);
    for (int32_t i = 0; i < op->n_outputs && !live; i++)
      for (const mil_use *u = op->outputs[i]->uses; u && !live; u = u->next_use)
        live = !u->op || u->op->block != b || u->op->aux != &k_dead;
    op->aux = live ? NULL : &k_dead;
  }
}

mil_status interp_exec_block(interp_run *r, mil_block *b) {
  if (r->depth >= INTERP_MAX_DEPTH)
    return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "function '%s': blocks nested deeper than %d", r->fn->name,
                          INTERP_MAX_DEPTH);
  r->depth++;
  mil_status st = MIL_OK;
  mark_dead(b);
  /* the function body frees each value after its last reader (memplan.c) */
  interp_plan *plan = r->depth == 1 ? interp_plan_new(b) : NULL;
  /* convs that apply their activation (fuse.c); fused[j]: the activation
   * op j has its result already */
  const interp_fuse_plan *fplan = r->depth == 1 ? interp_fuse_plan_get(r, b) : NULL;
  int32_t n_fuse = interp_fuse_n_ops(fplan);
  bool *fused = n_fuse ? mil_program_alloc(r->prog, (size_t)n_fuse * sizeof *fused) : NULL;
  if (fused) memset(fused, 0, (size_t)n_fuse * sizeof *fused);
  else fplan = NULL;
  int32_t index = 0;
  for (mil_op *op = b->first; op && st == MIL_OK; op = op->next, index++) {
    if (op->aux != &k_dead) {
      const interp_fuse_ent *fe = interp_fuse_at(fplan, index);
      int64_t t0 = r->prof ? interp_profile_now() : 0;
      if (fe && !fe->is_conv && fused[index]) {
        st = take_fused(r, op, fe);
      } else {
        r->fuse = fe && fe->is_conv ? fe : NULL;
        r->fuse_skip = r->fuse && r->fuse->kind == INTERP_FUSE_ADD ? skip_of(op, r->fuse, index) : NULL;
        if (r->fuse && r->fuse->kind == INTERP_FUSE_ADD && !r->fuse_skip) r->fuse = NULL; /* the add runs itself */
        r->fused = false;
        r->nhwc = interp_fuse_nhwc(fplan, index);
        struct interp_tmp *mark = r->scratch;
        st = exec_op(r, op);
        interp_scratch_release(r, mark); /* the op's scratch buffers */
        if (st == MIL_OK && r->fuse && r->fused) {
          fused[fe->partner] = true;
          if (fe->partner2 >= 0) fused[fe->partner2] = true;
        }
        r->fuse = NULL;
        r->fuse_skip = NULL;
        r->nhwc = 0;
      }
      if (r->prof) interp_profile_op(r->prof, op, interp_profile_now() - t0);
      if (st == MIL_OK && r->observer && r->depth == 1 && !mil_op_is_const(op)) observe(r, op);
    }
    if (st == MIL_OK) interp_plan_after(plan, r, op, index);
  }
  if (plan && r->prof) interp_profile_peak(r->prof, interp_plan_peak(plan));
  interp_plan_free(plan);
  r->depth--;
  if (st != MIL_OK) return st;
  for (int32_t i = 0; i < b->n_outputs; i++) {
    const mil_var *v = b->outputs[i].var;
    if (!v || !v->val)
      return mil_diag_error(r->d, MIL_ERR_INVALID, "function '%s': block output %d (%%%s) has no value after running",
                            r->fn->name, i, v ? v->name : "?");
  }
  return MIL_OK;
}
