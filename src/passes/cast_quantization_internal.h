/* The shared machinery of the type-casting passes add_fp16_cast and
 * add_int16_cast (coremltools' CastTypeQuantization): for every op the
 * pass accepts, cast the inputs of the origin dtype to the target dtype,
 * rebuild the op on the cast inputs as "<op>_cast_<target>", and cast each
 * output whose dtype changed back to the origin dtype.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/quantization.py
 * (AbstractQuantizationPass.apply, CastTypeQuantization.transform_op and
 * _check_target_dtype_for_param).
 */
#ifndef MIL_CAST_QUANTIZATION_INTERNAL_H
#define MIL_CAST_QUANTIZATION_INTERNAL_H

#include "passes/pass_internal.h"

typedef struct pass_castq pass_castq;
/* The state of one run of a casting pass. */
typedef struct pass_castq_state pass_castq_state;

/* The policy of one casting pass. */
struct pass_castq {
  const char *pass;   /* "add_fp16_cast" */
  const char *origin; /* dtype name cast away from: "fp32" / "int32" */
  const char *target; /* dtype name cast to: "fp16" / "int16" */
  mil_dtype origin_dt;
  /* coremltools' is_valid_op, split in the part that depends on the op
   * type only (asked once per type) and the rest (may be NULL). */
  bool (*type_ok)(const char *type);
  bool (*is_valid_op)(const pass_castq *q, const mil_op *op);
  /* coremltools' should_cast_parameter: the dtype name input `param` of
   * op is cast to ("fp16", "int16", "uint16"), or NULL to leave it. */
  const char *(*should_cast)(const pass_castq *q, pass_castq_state *r, const mil_op *op, const mil_input *param);
  /* Adjusts the value of a new cast of a known value (fp16 overflow and
   * underflow); may be NULL. src is the cast's input. Returns false on out
   * of memory. */
  bool (*fix_value)(const pass_castq *q, mil_program *p, mil_var *cast_out, const mil_var *src);
};

/* coremltools' _check_target_dtype_for_param: the input's type domain (in
 * op's opset) admits `dtype`, and cast in that opset can produce it. The
 * answers are kept in r (may be NULL) by op type, input and dtype. */
bool pass_castq_dtype_allowed(pass_castq_state *r, const mil_op *op, const char *param, const char *dtype);

/* Runs the pass: every function body and specialization, a snapshot of
 * each block's ops, nested blocks first; ops the policy accepts and the
 * options select (op_selector; skip_ops_by_type when the pass declares
 * it) are transformed. Errors: MIL_ERR_INVALID when both op_selector and a
 * non-empty skip_ops_by_type are set, those of building ops, MIL_ERR_NOMEM,
 * MIL_ERR_UNSUPPORTED (nesting deeper than PASS_MAX_DEPTH). */
mil_status pass_castq_run(const pass_castq *q, mil_program *p, const mil_pass_options *o, bool has_skip_option,
                          mil_pass_stats *stats, mil_diag *d);

/* True when v is a tensor or scalar of dtype dt (Var.is_tensor_or_scalar_of). */
bool pass_castq_is_of(const mil_var *v, mil_dtype dt);

#endif
