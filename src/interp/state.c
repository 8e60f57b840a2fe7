/* Kernels of the state ops: read_state (coremltools ops/defs/iOS18/states.py)
 * and coreml_update_state (ops/defs/coreml_dialect/ops.py).
 *
 * A state input's var holds the state's current tensor as its value for
 * the run (bound from the mil_interp_state by interp.c). read_state returns
 * that value; coreml_update_state checks the new value against the state's
 * wrapped type, makes it the state var's value (so later reads see it) and
 * returns it. When the run succeeds the final values are copied back into
 * the state object, so they persist across runs. */
#include <string.h>

#include "interp/interp_internal.h"

static mil_var *state_var(mil_infer_ctx *c) {
  mil_var *s = op_in(c, "state") ? op_in(c, "state") : op_in(c, "input");
  if (!s || !s->type || s->type->kind != MIL_TYPE_STATE || !s->val || s->val->kind != MIL_VAL_TENSOR) {
    interp_fail(c, MIL_ERR_TYPE, "the state input has no state value at run time");
    return NULL;
  }
  return s;
}

static mil_status k_read_state(interp_run *r, mil_infer_ctx *c) {
  (void)r;
  mil_var *s = state_var(c);
  if (!s) return MIL_ERR_TYPE;
  c->val[0] = s->val;
  c->out[0] = s->val->type;
  return MIL_OK;
}

static mil_status k_coreml_update_state(interp_run *r, mil_infer_ctx *c) {
  (void)r;
  mil_var *s = state_var(c);
  const mil_value *v = op_val(c, "value");
  if (!s) return MIL_ERR_TYPE;
  if (!v || v->kind != MIL_VAL_TENSOR || v->type->dtype != s->val->type->dtype || v->numel != s->val->numel ||
      v->nbytes != s->val->nbytes) {
    char a[160], b[160];
    mil_type_to_string(s->type, a, sizeof a);
    mil_type_to_string(v ? v->type : NULL, b, sizeof b);
    return interp_fail(c, MIL_ERR_TYPE, "input 'value' %s does not fit state %%%s %s", b, s->name, a);
  }
  s->val = v;
  c->val[0] = v;
  c->out[0] = v->type;
  return MIL_OK;
}

const interp_kernel interp_kernels_state[] = {
    {"coreml_update_state", k_coreml_update_state, INTERP_K_SELF},
    {"read_state", k_read_state, INTERP_K_SELF},
};
INTERP_FAMILY_COUNT(state);
