/* Internal helpers of the model utilities (src/utils/, mil/utils.h): the
 * model's protobuf description is edited through src/io's internal view of
 * the model object. Not part of the public API. */
#ifndef MIL_UTILS_INTERNAL_H
#define MIL_UTILS_INTERNAL_H

#include "io/model_internal.h"
#include "mil/utils.h"

#if defined(__GNUC__)
#define UTILS_HIDDEN __attribute__((visibility("hidden")))
#else
#define UTILS_HIDDEN
/* %<var_name> = cast(x=x, dtype="fp16"/"fp32") as op `op_name` with its dtype
 * const `const_name`, placed before `before` (NULL: at the end of b); the
 * type is x's shape (a scalar stays a scalar) in dtype dt. NULL on out of
 * memory. The callers choose coremltools' names for their own cases. */
UTILS_HIDDEN mil_var *utils_cast(mil_program *p, mil_block *b, mil_op *before, mil_var *x, mil_dtype dt,
                                 const char *op_name, const char *const_name, const char *var_name);

#endif

/* Drops m's decoded description view after the protobuf changed. */
UTILS_HIDDEN void utils_desc_changed(mil_model *m);
/* Replaces the protobuf string *field by a copy of s (NULL -> ""); false on
 * out of memory. */
UTILS_HIDDEN bool utils_set_string(char **field, const char *s);
/* Whether s has the form [a-zA-Z_][a-zA-Z0-9_]*. */
UTILS_HIDDEN bool utils_is_identifier(const char *s);
/* Sets every function's opset (and its body specialization's key) to the
 * opset of specification version spec (CoreML5 for 6 ... CoreML9 for 10). */
UTILS_HIDDEN void utils_set_opsets(mil_program *p, int spec);
/* Gives m (retained) references to the weight files of src, so that values
 * copied from src's program stay valid after src is freed. */
UTILS_HIDDEN mil_status utils_adopt_weights(mil_model *m, const mil_model *src, mil_diag *d);

/* %<var_name> = cast(x=x, dtype="fp16"/"fp32") as op `op_name` with its dtype
 * const `const_name`, placed before `before` (NULL: at the end of b); the
 * type is x's shape (a scalar stays a scalar) in dtype dt. NULL on out of
 * memory. The callers choose coremltools' names for their own cases. */
UTILS_HIDDEN mil_var *utils_cast(mil_program *p, mil_block *b, mil_op *before, mil_var *x, mil_dtype dt,
                                 const char *op_name, const char *const_name, const char *var_name);

#endif
