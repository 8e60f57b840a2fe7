/* Op family "coreml_dialect" (coremltools ops/defs/coreml_dialect/ops.py):
 * coreml_update_state, a dialect op that writes value into a state and
 * returns value (lowered to write_state + read_state when a model is
 * loaded into Core ML). The state's wrapped type must equal value's type.
 *
 *   %y: (1, 4, fp16)(Tensor) = coreml_update_state(state=%cache, value=%x, name="y")
 */
#include "ops/ops_internal.h"

#define DTS_STATE_VALUE                                                                                              \
  (MIL_DTS_FLOAT | MIL_DTB(MIL_DT_INT8) | MIL_DTB(MIL_DT_INT16) | MIL_DTS_INT32 | MIL_DTB(MIL_DT_UINT8) |           \
   MIL_DTB(MIL_DT_UINT16) | MIL_DTS_BOOL)

static const mil_input_spec k_update_state_in[] = {
    IN_SPEC("state", MIL_IK_STATE, 0, NULL, 0, NULL),
    IN_SPEC("value", MIL_IK_TENSOR, DTS_STATE_VALUE, "T", 0, NULL),
};

static mil_status infer_update_state(mil_infer_ctx *c) {
  const mil_type *s = op_type(c, "state"), *v = op_type(c, "value");
  if (!s->elem || !mil_type_equal(s->elem, v))
    return op_fail(c, "input 'state' wraps %s but 'value' is %s; they must match", op_tstr(c, s->elem),
                   op_tstr(c, v));
  op_set_out(c, 0, v);
  return MIL_OK;
}

const mil_op_def op_defs_coreml_dialect[] = {
    {"coreml_update_state", MIL_IOS13, "coreml_dialect", k_update_state_in, 2, 1, infer_update_state, NULL, NULL,
     "writes value into a state and returns value"},
};
OP_FAMILY_COUNT(coreml_dialect);
