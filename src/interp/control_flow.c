/* Kernels of the control-flow ops (coremltools ops/defs/iOS15/control_flow.py):
 *
 *   cond        runs blocks[0] when pred is true, else blocks[1]; the
 *               outputs are the chosen block's outputs
 *   while_loop  loop vars flow through blocks[0] (the condition block,
 *               one bool output) and blocks[1] (the body, one output per
 *               loop var) until the condition is false; the outputs are
 *               the final loop vars
 *
 * Both run their blocks with the executor (exec.c); a while_loop runs each
 * iteration in a program of its own, freed once the next loop vars are
 * copied out (memory bounded by the live values). Nesting is bounded by
 * INTERP_MAX_DEPTH and the total number of loop iterations of a run by
 * mil_interp_set_max_iterations. select and the const ops run through
 * value inference. */
#include <string.h>

#include "interp/interp_internal.h"

static bool truth(const mil_value *v) {
  return v && v->kind == MIL_VAL_TENSOR && v->numel >= 1 && v->type->dtype != MIL_DT_STRING &&
         mil_value_get_f64(v, 0) != 0;
}

static mil_status check_pred(mil_infer_ctx *c, const mil_value *v, const char *what) {
  if (!v || v->kind != MIL_VAL_TENSOR || v->numel != 1 || v->type->dtype != MIL_DT_BOOL) {
    char tb[160];
    mil_type_to_string(v ? v->type : NULL, tb, sizeof tb);
    return interp_fail(c, MIL_ERR_TYPE, "%s must be a single bool, got %s", what, tb);
  }
  return MIL_OK;
}

static mil_status k_cond(interp_run *r, mil_infer_ctx *c) {
  mil_op *op = c->op;
  const mil_value *p = op_val(c, "pred");
  mil_status st = check_pred(c, p, "input 'pred'");
  if (st != MIL_OK) return st;
  if (op->n_blocks != 2) return interp_fail(c, MIL_ERR_INVALID, "cond needs 2 blocks, has %d", op->n_blocks);
  mil_block *b = op->blocks[truth(p) ? 0 : 1];
  if (b->n_outputs < op->n_outputs)
    return interp_fail(c, MIL_ERR_INVALID, "the %s branch returns %d values, the op has %d outputs",
                       truth(p) ? "true" : "false", b->n_outputs, op->n_outputs);
  if ((st = interp_exec_block(r, b)) != MIL_OK) return st;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    c->val[i] = b->outputs[i].var->val;
    c->out[i] = c->val[i]->type;
  }
  return MIL_OK;
}

static void bind_inputs(mil_block *b, const mil_value *const *vals) {
  for (int32_t i = 0; i < b->n_inputs; i++) interp_bind(b->inputs[i], vals[i]);
}

/* A deep copy of v in p whose bytes are p's own (views and weight mappings
 * included), so that v's program may be freed. */
static const mil_value *carry_copy(mil_program *p, const mil_value *v, int depth) {
  if (!v || depth > 64) return NULL;
  if (v->kind == MIL_VAL_TENSOR) {
    const mil_type *t = v->type;
    if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0 || t->rank > MIL_INTERP_MAX_RANK) return NULL;
    int64_t shape[MIL_INTERP_MAX_RANK];
    for (int32_t i = 0; i < t->rank; i++) shape[i] = t->dims[i].size;
    const void *data = v->numel ? mil_value_data(v) : NULL;
    if (v->numel && !data) return NULL;
    return mil_value_new_tensor(p, t->dtype, t->rank, shape, t->is_scalar, data);
  }
  const mil_value **items = mil_program_alloc(p, (size_t)(v->n > 0 ? v->n : 1) * sizeof *items);
  const mil_value **keys = v->keys ? mil_program_alloc(p, (size_t)(v->n > 0 ? v->n : 1) * sizeof *keys) : NULL;
  if (!items || (v->keys && !keys)) return NULL;
  for (int32_t i = 0; i < v->n; i++) {
    if (!(items[i] = carry_copy(p, v->items[i], depth + 1))) return NULL;
    if (keys && !(keys[i] = carry_copy(p, v->keys[i], depth + 1))) return NULL;
  }
  const mil_type *t = mil_type_import(p, v->type);
  if (!t) return NULL;
  switch (v->kind) {
  case MIL_VAL_LIST: return mil_value_new_list(p, t, v->n, items);
  case MIL_VAL_TUPLE: return mil_value_new_tuple(p, t, v->n, items);
  case MIL_VAL_DICT: return mil_value_new_dict(p, t, v->n, keys, items);
  default: return NULL;
  }
}

/* Copies vals[0..n) into a new program (*out), NULL on failure. */
static bool carry_all(mil_program *outer, const mil_value **vals, int32_t n, mil_program **out) {
  mil_program *p = mil_program_new(outer->alloc);
  if (!p) return false;
  for (int32_t i = 0; i < n; i++)
    if (!(vals[i] = carry_copy(p, vals[i], 0))) {
      mil_program_free(p);
      return false;
    }
  *out = p;
  return true;
}

/* Each iteration runs in a scratch program of its own (r->prog): the loop
 * vars it returns are copied into a fresh carry program, then the scratch
 * and the previous carry are freed. Memory stays bounded by the values an
 * iteration keeps alive, however many iterations run. */
static mil_status loop_run(interp_run *r, mil_infer_ctx *c, mil_block *cb, mil_block *body, const mil_value **cur,
                           int32_t n, mil_program **carry) {
  mil_program *outer = r->prog;
  for (;;) {
    mil_program *scratch = mil_program_new(outer->alloc);
    if (!scratch) return interp_nomem(c);
    r->prog = scratch;
    bind_inputs(cb, cur);
    mil_status st = interp_exec_block(r, cb);
    const mil_value *p = st == MIL_OK ? cb->outputs[0].var->val : NULL;
    if (st == MIL_OK) st = check_pred(c, p, "the condition block's output");
    bool more = st == MIL_OK && truth(p);
    if (more && r->iters_left-- <= 0)
      st = interp_fail(c, MIL_ERR_INVALID, "the loop ran more than %lld iterations in this run (the limit set by "
                                           "mil_interp_set_max_iterations)",
                       (long long)r->ip_max_iters);
    if (more && st == MIL_OK) {
      bind_inputs(body, cur);
      st = interp_exec_block(r, body);
    }
    mil_program *next = NULL;
    if (more && st == MIL_OK) {
      for (int32_t i = 0; i < n; i++) cur[i] = body->outputs[i].var->val;
      if (!carry_all(outer, cur, n, &next)) st = interp_nomem(c);
    }
    r->prog = outer;
    mil_program_free(scratch);
    if (next) {
      mil_program_free(*carry);
      *carry = next;
    }
    if (st != MIL_OK || !more) return st;
  }
}

/* Clears the bindings of the vars of b (and its nested blocks): they may
 * refer to a freed iteration program. */
static void unbind_block(mil_block *b, int depth) {
  if (depth > INTERP_MAX_DEPTH) return;
  for (int32_t i = 0; i < b->n_inputs; i++) b->inputs[i]->val = NULL;
  for (mil_op *op = b->first; op; op = op->next) {
    if (!mil_op_is_const(op))
      for (int32_t i = 0; i < op->n_outputs; i++) op->outputs[i]->val = NULL;
    for (int32_t k = 0; k < op->n_blocks; k++) unbind_block(op->blocks[k], depth + 1);
  }
}

static mil_status k_while_loop(interp_run *r, mil_infer_ctx *c) {
  mil_op *op = c->op;
  const mil_input *lv = op_input(c, "loop_vars");
  int32_t n = lv ? lv->n_args : 0;
  if (op->n_blocks != 2) return interp_fail(c, MIL_ERR_INVALID, "while_loop needs 2 blocks, has %d", op->n_blocks);
  mil_block *cb = op->blocks[0], *body = op->blocks[1];
  if (cb->n_inputs != n || body->n_inputs != n || body->n_outputs != n || cb->n_outputs != 1 || op->n_outputs > n)
    return interp_fail(c, MIL_ERR_INVALID,
                       "%d loop_vars, but the condition block takes %d inputs and returns %d values and the body "
                       "takes %d and returns %d",
                       n, cb->n_inputs, cb->n_outputs, body->n_inputs, body->n_outputs);
  const mil_value **cur = mil_program_alloc(r->prog, (size_t)(n ? n : 1) * sizeof *cur);
  if (!cur) return interp_nomem(c);
  for (int32_t i = 0; i < n; i++) {
    const mil_arg *a = &lv->args[i];
    cur[i] = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
    if (!cur[i]) return interp_fail(c, MIL_ERR_INVALID, "loop var %d has no value", i);
  }
  mil_program *carry = NULL;
  mil_status st = loop_run(r, c, cb, body, cur, n, &carry);
  /* the final loop vars move from the carry program into the run's */
  for (int32_t i = 0; i < op->n_outputs && st == MIL_OK; i++) {
    c->val[i] = carry ? carry_copy(r->prog, cur[i], 0) : cur[i];
    if (!c->val[i]) st = interp_nomem(c);
    else c->out[i] = c->val[i]->type;
  }
  unbind_block(cb, 0);
  unbind_block(body, 0);
  mil_program_free(carry);
  return st;
}

const interp_kernel interp_kernels_control_flow[] = {
    {"cond", k_cond, INTERP_K_SELF},
    {"while_loop", k_while_loop, INTERP_K_SELF},
};
INTERP_FAMILY_COUNT(control_flow);
