/* libmil: the ONNX importer — turns an ONNX model (.onnx, ModelProto) into a
 * Core ML ML Program, the way coremltools' converters build MIL.
 *
 * What is read: the graph, its initializers (inline or external data,
 * through the ONNX tensor reader), opset_import, and the subgraphs of If and
 * Loop nodes. What is made:
 *  - one function "main" whose inputs and outputs are the graph's inputs
 *    (those not fed by an initializer) and outputs, in order. int64 and
 *    double I/O become int32 and fp32, as coremltools does; other integer
 *    dtypes become int32 as well. A dim_param becomes a symbolic dim (its
 *    name when that is an identifier, else a fresh "is<N>"), unless an
 *    input shape given in the options fixes it;
 *  - initializers and Constant nodes become const ops (the model writer
 *    puts those of 10 elements or more in weight.bin, as coremltools does);
 *  - each node becomes the MIL ops coremltools' own frontends emit for the
 *    same computation (converters/mil/frontend/torch/ops.py), built through
 *    the op registry so that types are inferred and every op whose inputs
 *    are known folds at once (shape subgraphs become consts);
 *  - every name (vars, ops) goes through coremltools' NameSanitizer rule:
 *    characters outside [A-Za-z0-9_] become '_', a leading digit gets the
 *    prefix "var_" ("op_" for op names), reserved words get "_workaround",
 *    and a collision gets "_0", "_1", ... appended.
 * The importer returns the program as it built it and runs no pass
 * pipeline: mil_convert (mil/convert.h) composes import -> model interface
 * -> pipeline -> save, as ct.convert does.
 *
 * Ops are converted by a table of (op_type, domain, opset range) ->
 * converter entries, one source file per ONNX op family
 * (src/onnx/import/ops_<family>.c, listed in src/onnx/import/ops_families.def);
 * mil_onnx_op_at lists them. docs/onnx.md describes the mapping.
 */
#ifndef MIL_ONNX_H
#define MIL_ONNX_H

#include "interp.h"
#include "model.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest ai.onnx opset whose changes libmil knows. A model importing a
 * newer opset is converted with a warning when each of its ops kept the
 * semantics of the newest version libmil handles. */
#define MIL_ONNX_OPSET_KNOWN 23

/* The userDefined metadata key of an imported model's renamed inputs and
 * outputs (libmil's own key; see mil_onnx_import). */
#define MIL_ONNX_NAMES_KEY "com.libmil.onnx_names"

/* The op attribute (bool true) the importer marks the ops of integer
 * arithmetic with (ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul,
 * DynamicQuantizeLinear: exact in fp32, not in fp16): mil_convert's
 * add_fp16_cast leaves them in fp32 (its op_selector) and removes the mark
 * from every op after the pipeline, so it is never saved. A program from
 * mil_onnx_import itself still holds it (mil_convert_model removes it). */
#define MIL_ONNX_KEEP_FP32_ATTR "com.libmil.keep_fp32"

/* The shape of one graph input (--input-shape NAME=1,3,224,224; the shape
 * of an input type, mil/input_types.h). */
typedef struct mil_onnx_input_shape {
  const char *name;    /* the ONNX input name (before sanitizing) */
  int32_t rank;
  const int64_t *dims; /* rank entries: >= 0 a fixed size (a known dim of the
                          model must agree), -1 a new symbolic dim */
} mil_onnx_input_shape;

/* A value for one graph input (mil convert --input-value NAME=V). */
typedef struct mil_onnx_input_value {
  const char *name; /* the ONNX input name */
  mil_tensor value; /* its elements, read as numbers of the input's dtype */
} mil_onnx_input_value;

/* What the import itself needs. Precision and the pass pipeline are
 * conversion options (mil_convert_options, mil/convert.h). */
typedef struct mil_onnx_options {
  /* Minimum deployment target as an opset version of ops.h (MIL_IOS15 ..
   * MIL_IOS18); 0 = MIL_IOS15, ct.convert's default for ML Programs. */
  int target;
  int32_t n_input_shapes;
  const mil_onnx_input_shape *input_shapes;
  /* Inputs fixed to a value (mil convert --input-value NAME=V,...): each
   * becomes a const of the input's type (its elements read as numbers of
   * any numeric dtype; value.rank < 0: the input's declared static shape,
   * numel elements) and leaves the function's inputs, so that what depends
   * on it alone is known at conversion: an If on a sample rate takes its
   * branch (the other is not converted). MIL_ERR_INVALID for an unknown
   * name or a value whose shape does not fit. */
  int32_t n_input_values;
  const mil_onnx_input_value *input_values;
  /* NonMaxSuppression with a number of boxes known only at run time becomes
   * MIL's non_maximum_suppression, which returns a fixed number of boxes
   * per class: this bound (> 0), or by default the node's constant
   * max_output_boxes_per_class (when it is at most 65536), as coremltools'
   * torch frontend bounds torchvision.ops.nms. 0: the default. */
  int64_t nms_max_boxes;
  /* true: warn (MIL_SEV_WARNING in d, naming the op and the value it can
   * reach) about each op of main's body whose value range, known
   * statically from the consts and integer inputs' declared types (int16
   * audio spans +-32768), goes beyond fp16's 65504 although an fp16
   * conversion computes it in fp16 (ops the importer marks
   * MIL_ONNX_KEEP_FP32_ATTR excepted). mil_convert sets it for fp16
   * conversions without sample inputs. */
  bool fp16_range_check;
} mil_onnx_options;

/* Imports the ONNX model at `path` (opts may be NULL for the defaults) and
 * returns a model for specification version of opts->target in *out (NULL
 * on failure): the program as the importer built it, no pass pipeline run
 * (mil_convert runs one). External data is resolved against the directory of `path`
 * and mapped. Large fp32 / fp16 / int32 initializers stored as raw_data
 * are viewed in the decoded ModelProto, which the program then keeps (a
 * clone of the program, such as an interpreter's, views it too: keep the
 * model alive while those are used). Free it with mil_model_free.
 * Quantized weights stay quantized (docs/onnx.md, "Quantized models"):
 * DequantizeLinear of an INT8 / UINT8 / INT4 / UINT4 initializer becomes
 * constexpr_affine_dequantize (iOS16/17; per tensor / per axis) or
 * constexpr_blockwise_shift_scale (iOS18; also opset 21 block_size), the
 * com.microsoft MatMulNBits / GatherBlockQuantized become
 * constexpr_blockwise_shift_scale + linear / gather (iOS18), and from iOS17
 * QuantizeLinear -> DequantizeLinear pairs on activations become quantize /
 * dequantize (coremltools iOS16/constexpr_ops.py, iOS18/compression.py,
 * iOS17/quantization_ops.py); at iOS15 the weights are decompressed (a
 * warning). A blockwise layout before iOS18 is MIL_ERR_UNSUPPORTED with a
 * message naming --target iOS18.
 * Errors (d gets a message naming the file and, for a node, the node name,
 * op_type, domain, opset and the reason):
 *   MIL_ERR_IO           the file (or an external data file) cannot be read;
 *   MIL_ERR_FORMAT       not a valid ModelProto, malformed tensor;
 *   MIL_ERR_UNSUPPORTED  an op (or op version, domain, attribute value,
 *                        dtype, sequence / map / optional I/O) that libmil
 *                        does not convert;
 *   MIL_ERR_TYPE         type inference failed on a converted op;
 *   MIL_ERR_INVALID      bad options (unknown input in input_shapes, target
 *                        out of range), a node input never defined;
 *   MIL_ERR_NOMEM.
 * Names: ONNX input / output names that are not MIL identifiers are
 * renamed as coremltools' NameSanitizer renames them ("onnx::Flatten_0" ->
 * "onnx__Flatten_0", "x.1" -> "x_1", a leading digit gets "var_"); when
 * any is, the model's userDefined metadata key MIL_ONNX_NAMES_KEY holds
 * the JSON object {"inputs": {MIL name: ONNX name, ...}, "outputs": {...}}
 * (mil_onnx_original_name reads it). The graph's nodes are converted in
 * topological order (the file's where valid); a cycle is MIL_ERR_INVALID. */
MIL_API mil_status mil_onnx_import(const char *path, const mil_onnx_options *opts, mil_model **out, mil_diag *d);

/* Same from a serialized ModelProto in memory (`name` for messages,
 * `dir` for external data; both may be NULL). The buffer is not needed
 * after the call. */
MIL_API mil_status mil_onnx_import_buffer(const void *data, size_t len, const char *name, const char *dir,
                                          const mil_onnx_options *opts, mil_model **out, mil_diag *d);

/* Each input (is_output false) / output an ONNX import renamed. */
typedef void (*mil_onnx_rename_fn)(void *ud, bool is_output, const char *mil_name, const char *onnx_name);
/* Calls fn (may be NULL) for each rename recorded in m's metadata under
 * MIL_ONNX_NAMES_KEY, inputs first, in the model's order; returns how many
 * (0 when m or the key is absent, -1 when the value is not the JSON
 * mil_onnx_import writes). */
MIL_API int32_t mil_onnx_renames(mil_model *m, mil_onnx_rename_fn fn, void *ud);
/* The model's name of the input (output true: output) the ONNX graph
 * called onnx_name, as a malloc'd string the caller frees; NULL when that
 * name was not renamed (or on NULL arguments / no memory). */
MIL_API char *mil_onnx_model_name(mil_model *m, bool output, const char *onnx_name);

/* One entry of the converter table. */
typedef struct mil_onnx_op_info {
  const char *op_type; /* "Conv" */
  const char *domain;  /* "" for ai.onnx */
  int since;           /* first opset this converter handles */
  int until;           /* last opset it handles (MIL_ONNX_OPSET_KNOWN when current) */
  const char *family;  /* "conv_pool" */
  const char *mil_ops; /* the MIL ops it emits, as documentation */
} mil_onnx_op_info;

/* The converter table, sorted by op_type then since. */
MIL_API size_t mil_onnx_op_count(void);
MIL_API const mil_onnx_op_info *mil_onnx_op_at(size_t i);

/* The converter for op_type/domain at `opset` (domain "" or "ai.onnx"),
 * NULL when there is none. */
MIL_API const mil_onnx_op_info *mil_onnx_op_find(const char *op_type, const char *domain, int opset);

#ifdef __cplusplus
}
#endif
#endif
