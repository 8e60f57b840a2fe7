/* Kernels of the control-flow ops (coremltools ops/defs/iOS15/control_flow.py):
 *
 *   cond        runs blocks[0] when pred is true, else blocks[1]; the
 *               outputs are the chosen block's outputs
 *   while_loop  loop vars flow through blocks[0] (the condition block,
 *               one bool output) and blocks[1] (the body, one output per
 *               loop var) until the condition is false; the outputs are
 *               the final loop vars
 *
 * Both run their blocks with the executor (exec.c); nesting is bounded by
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
  for (;;) {
    bind_inputs(cb, cur);
    mil_status st = interp_exec_block(r, cb);
    if (st != MIL_OK) return st;
    const mil_value *p = cb->outputs[0].var->val;
    if ((st = check_pred(c, p, "the condition block's output")) != MIL_OK) return st;
    if (!truth(p)) break;
    if (r->iters_left-- <= 0)
      return interp_fail(c, MIL_ERR_INVALID, "the loop ran more than %lld iterations in this run (the limit set by "
                                             "mil_interp_set_max_iterations)",
                         (long long)r->ip_max_iters);
    bind_inputs(body, cur);
    if ((st = interp_exec_block(r, body)) != MIL_OK) return st;
    for (int32_t i = 0; i < n; i++) cur[i] = body->outputs[i].var->val;
  }
  for (int32_t i = 0; i < op->n_outputs; i++) {
    c->val[i] = cur[i];
    c->out[i] = cur[i]->type;
  }
  return MIL_OK;
}

const interp_kernel interp_kernels_control_flow[] = {
    {"cond", k_cond, INTERP_K_SELF},
    {"while_loop", k_while_loop, INTERP_K_SELF},
};
INTERP_FAMILY_COUNT(control_flow);
