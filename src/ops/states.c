/* Op family "states" (coremltools ops/defs/iOS18/states.py): read_state,
 * which copies the tensor a state wraps into a new var.
 *
 *   %k: (1, 4, fp16)(Tensor) = read_state(input=%cache, name="k")
 *
 * (Writing a state is coreml_update_state of the coreml dialect; the proto
 * form write_state [+ read_state] is translated to it when a model is
 * loaded, as coremltools' milproto loader does.) */
#include "ops/ops_internal.h"

static mil_status infer_read_state(mil_infer_ctx *c) {
  const mil_type *s = op_type(c, "input");
  if (!s || s->kind != MIL_TYPE_STATE || !s->elem || s->elem->kind != MIL_TYPE_TENSOR)
    return op_fail(c, "State only supports wrapped type of types.tensor. Got %s.", op_tstr(c, s ? s->elem : NULL));
  op_set_out(c, 0, s->elem);
  return MIL_OK;
}

static const mil_input_spec in_read_state[] = {IN_SPEC("input", MIL_IK_STATE, MIL_DTS_ANY, NULL, 0, NULL)};

const mil_op_def op_defs_states[] = {
    {"read_state", MIL_IOS18, "states", in_read_state, 1, 1, infer_read_state, NULL, NULL,
     "The tensor wrapped by a state (a copy)."},
};
OP_FAMILY_COUNT(states);
