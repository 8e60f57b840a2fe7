/* libmil: the op registry — every MIL op variant of the iOS15..iOS18 opsets
 * (and the coreml / complex dialects) with its input spec, type inference and
 * value inference (constant folding), and the program validator built on it.
 *
 * Mirrors coremltools/converters/mil/mil/ops/defs/ (iOS15, iOS16, iOS17,
 * iOS18, coreml_dialect, complex_dialect_ops.py), ops/registry.py and
 * input_type.py.
 *
 * Every opset a program can carry, CoreML3 (iOS13) .. CoreML9 (iOS26), uses
 * coremltools' op definitions for it: the iOS15 set (registered at iOS13, as
 * coremltools registers it) for CoreML3 and CoreML4, except the ops
 * coremltools registers at iOS15 itself (affine, resample).
 *
 * Opset versions are Core ML specification versions (formats.md section 7):
 * iOS13 = 4 ("CoreML3"), iOS14 = 5, iOS15 = 6 ("CoreML5"), iOS16 = 7,
 * iOS17 = 8, iOS18 = 9, iOS26 = 10. A variant registered at version v applies
 * to functions whose opset is >= v until a newer variant of the same op type
 * replaces it.
 */
#ifndef MIL_OPS_H
#define MIL_OPS_H

#include "ir.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MIL_IOS13 = 4,
  MIL_IOS14 = 5,
  MIL_IOS15 = 6,
  MIL_IOS16 = 7,
  MIL_IOS17 = 8,
  MIL_IOS18 = 9,
  MIL_IOS26 = 10,
};

/* "CoreML5" -> 6 (the spec version); -1 when not an opset name. */
MIL_API int mil_opset_version(const char *opset);
/* 6 -> "CoreML5"; NULL when out of range. */
MIL_API const char *mil_opset_name(int version);
/* 6 -> "iOS15"; NULL when out of range. */
MIL_API const char *mil_opset_target_name(int version);

/* Dtype sets as bit masks: MIL_DTB(MIL_DT_FP32) | MIL_DTB(MIL_DT_FP16). */
#define MIL_DTB(dt) (1ULL << ((dt) >= 100 ? (dt) - 38 : (dt)))
#define MIL_DTS_FLOAT (MIL_DTB(MIL_DT_FP16) | MIL_DTB(MIL_DT_FP32))
#define MIL_DTS_INT32 MIL_DTB(MIL_DT_INT32)
#define MIL_DTS_FLOAT_INT32 (MIL_DTS_FLOAT | MIL_DTS_INT32)
#define MIL_DTS_BOOL MIL_DTB(MIL_DT_BOOL)
#define MIL_DTS_STRING MIL_DTB(MIL_DT_STRING)
#define MIL_DTS_ANY 0ULL

/* What kind of value an input accepts (bit set). */
enum {
  MIL_IK_TENSOR = 1u << 0, /* tensor of rank >= 0 (scalars included) */
  MIL_IK_SCALAR = 1u << 1, /* rank-0 only */
  MIL_IK_LIST = 1u << 2,
  MIL_IK_TUPLE = 1u << 3, /* a tuple of vars (variadic input, e.g. concat.values) */
  MIL_IK_STATE = 1u << 4,
  MIL_IK_DICT = 1u << 5,
  MIL_IK_ANY = MIL_IK_TENSOR | MIL_IK_LIST | MIL_IK_DICT | MIL_IK_STATE,
};

/* Input flags. */
enum {
  MIL_IF_CONST = 1u << 0,    /* value must be known at compile time */
  MIL_IF_OPTIONAL = 1u << 1, /* may be omitted */
  MIL_IF_INTERNAL = 1u << 2, /* coremltools-internal input (name starts with '_'): never printed/serialized */
};

/* One input of an op variant (coremltools InputSpec entry). */
typedef struct mil_input_spec {
  const char *name;
  uint32_t kinds;       /* MIL_IK_* */
  uint64_t dtypes;      /* allowed element dtypes (MIL_DTB mask); 0 = any */
  const char *type_var; /* shared type-domain variable ("T"), or NULL */
  uint32_t flags;       /* MIL_IF_* */
  const char *default_doc; /* coremltools' default, as documentation ("1", "[1]*spatial", "\"valid\""), or NULL */
} mil_input_spec;

typedef struct mil_op_def mil_op_def;
typedef struct mil_infer_ctx mil_infer_ctx;

/* Per-op callbacks receive a context (see src/ops/ops_internal.h). */
typedef mil_status (*mil_op_fn)(mil_infer_ctx *c);

struct mil_op_def {
  const char *type;    /* op type, e.g. "conv" */
  int opset;           /* spec version where this variant appears (MIL_IOS13 ...) */
  const char *family;  /* coremltools defs file, e.g. "conv", "elementwise_binary" */
  const mil_input_spec *inputs;
  int32_t n_inputs;
  int32_t n_outputs;   /* fixed number of outputs, or -1 when it depends on the op */
  mil_op_fn infer;     /* output types; required */
  mil_op_fn fold;      /* value inference; NULL when coremltools has none */
  mil_op_fn defaults;  /* materializes default inputs coremltools adds; NULL when none */
  const char *doc;     /* one-line description */
};

/* The variant of `type` that applies to a function of spec version
 * `version` (the newest one registered at or below it); NULL when the op
 * does not exist there. */
MIL_API const mil_op_def *mil_op_def_find(const char *type, int version);
/* All registered variants, in a stable order (family, type, opset). */
MIL_API size_t mil_op_def_count(void);
MIL_API const mil_op_def *mil_op_def_at(size_t i);
/* The input spec entry named `name`, or NULL. */
MIL_API const mil_input_spec *mil_op_def_input(const mil_op_def *def, const char *name);

/* Infers op's output types (and, when every needed input is known and the
 * op has value inference, its output values) for the opset of the function
 * that contains it, and stores them on the output vars (type, val, mark).
 * Errors name the function, the op (name and type), the input, what was
 * expected and what was found:
 *   "function 'main': op 'conv_3' (conv): input 'weight' must be rank 4 like x, got (3, 3, 8, fp32)"
 * Returns MIL_ERR_NOT_FOUND for an op unknown in the opset, MIL_ERR_TYPE for
 * a type error. */
MIL_API mil_status mil_op_infer(mil_op *op, mil_diag *d);

/* Value inference never materializes an output larger than this many bytes
 * unless the output has no more elements than one of the op's known input
 * values and at most twice its bytes (a cast of a large weight): a tile of
 * a 2-element const by 2^30, a fill of a 4 GB shape, or a concat doubling a
 * value (40 of them in a chain would reach 2^40 elements) keeps its type
 * and no value (mil_op_infer, mil_op_infer_types, validation, the ONNX
 * importer's constant evaluation and the passes' folding alike). */
#define MIL_FOLD_MAX_BYTES ((int64_t)64 << 20)

/* Like mil_op_infer but leaves the op untouched: fills types[i] / vals[i]
 * (arrays of at least op->n_outputs entries, owned by the program). */
MIL_API mil_status mil_op_infer_types(mil_op *op, const mil_type **types, const mil_value **vals, mil_diag *d);

/* The compile-time value of output i of op: its folded value, or for a
 * constexpr_* / dequantize op the decompressed weight (computed on demand,
 * arena-owned, following numpy's rounding like coremltools'
 * materialized_val_inference). NULL when not known; d gets the reason for a
 * failed decompression. */
MIL_API const mil_value *mil_op_materialize(mil_op *op, int32_t i, mil_diag *d);

/* Adds the default inputs coremltools materializes for op's variant (as
 * new const ops inserted before op, named "<op>_<input>_0"-style). The op
 * must be in a block. */
MIL_API mil_status mil_op_add_defaults(mil_op *op, mil_diag *d);

/* Reorders op->inputs into the variant's input-spec order (unknown names
 * keep their relative order at the end). */
MIL_API void mil_op_canonicalize_inputs(mil_op *op);

/* Validator: mil_program_verify plus, for every op, that it exists in its
 * function's opset, every required input is bound, no input is unknown,
 * each input has an allowed type (const where const is required), and each
 * declared output type equals the inferred one (named symbols in declared
 * types may stand for inferred fresh symbols). Reports every problem. */
MIL_API mil_status mil_program_validate(const mil_program *p, mil_diag *d);

/* Retargets p to opset `version` (MIL_IOS13..MIL_IOS26): every function's
 * opset and body specialization key become that opset's name ("CoreML5"
 * for MIL_IOS15), and the program must then pass mil_program_validate, so
 * every op must exist in the new opset and its inputs and declared outputs
 * must fit the variant the new opset uses. Like coremltools'
 * ct.convert(prog, minimum_deployment_target=target), which writes the
 * program under that target's opset after checking that no op needs a
 * newer one (converter.py MILFrontend, program.py
 * _check_ops_version_compatibility); here every op is checked against the
 * variant the target resolves to.
 * Errors: MIL_ERR_INVALID for a version out of range (or a structurally
 * invalid program); MIL_ERR_TYPE (the validator's status) when an op does
 * not fit, with each problem in d prefixed "cannot retarget to iOS15
 * (CoreML5): " ("... op 'q' (quantize): op type 'quantize' needs opset
 * CoreML7 (iOS17) or newer ..."); the program is then left with its old
 * opsets. MIL_ERR_NOMEM. */
MIL_API mil_status mil_program_retarget(mil_program *p, int version, mil_diag *d);

/* Writes a type as coremltools prints it without the kind suffix, e.g.
 * "(1, 3, is0, fp32)", "(fp32)", "List[?, (2,fp32)]"; returns buf. */
MIL_API char *mil_type_to_string(const mil_type *t, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
