/* libmil: model utilities, as coremltools.models.utils.
 *
 * After converting, users reshape a model for the app: merge models into one
 * multifunction package whose functions share weights, rename inputs and
 * outputs, switch I/O between fp32 and fp16, turn a flexible-shape model
 * into fixed-shape functions, split a model in two. Each function here
 * mirrors one of coremltools/models/utils.py (named in its comment) and
 * gives the same model description, program and weight file size.
 *
 * Every function that writes a model writes it atomically (mil_model_save):
 * a crash leaves the old file or the new one, never a mix. Weights are
 * never copied whole: the result's values view the sources' mapped weight
 * files and are streamed into the new weight.bin, each distinct weight once.
 *
 * Errors are reported through mil_diag with a message naming the model
 * file, function and feature involved, what was expected and what was found.
 */
#ifndef MIL_UTILS_H
#define MIL_UTILS_H

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Multifunction models (MultiFunctionDescriptor, save_multifunction)        */
/* ------------------------------------------------------------------------ */

/* One function of a merged model: function `src_function` of the model at
 * `model_path` (.mlpackage or .mlmodel; "main" is the only function of a
 * single-function model), named `target_function` in the result. */
typedef struct mil_merge_function {
  const char *model_path;
  const char *src_function;
  const char *target_function;
} mil_merge_function;

/* save_multifunction: writes the multifunction model made of the n
 * functions `fns` (in that order) to `dest_path` (.mlpackage, or .mlmodel
 * with its weights directory). Each source model is loaded once, however
 * many of its functions are used. The result:
 *  - specification version max(the sources' versions, 9 (iOS18)); every
 *    function's opset becomes that version's (CoreML8 for 9), as
 *    coremltools' exporter writes it;
 *  - description: the multi-function form, one FunctionDescription per
 *    function, copied from the source (a single-function source's input,
 *    output, state and predicted-feature fields) and renamed to the target
 *    name; defaultFunctionName = `default_function`; no metadata (the
 *    sources' metadata is dropped, as coremltools does);
 *  - constants: const_deduplication within each function first, then
 *    _deduplicate_const_across_functions: consts of different functions
 *    with equal values (same dtype and shape, values equal within 6e-8 for
 *    fp16 and 1e-12 otherwise, at least one element) are written as one
 *    blob, so a weight shared by several functions is stored once.
 * Memory: the sources stay memory-mapped; each distinct weight is read once,
 * while it is streamed into the new weight file.
 * Errors: MIL_ERR_INVALID (n < 1; a NULL name; a source function that the
 * model does not have, "src_function_name 'f' not found in A.mlpackage
 * (it has: main)"; a target name given twice, "function 'f' already
 * exist"; a target name that is not a MIL identifier; `default_function`
 * NULL or not one of the target names), errors of mil_model_load for a
 * source and of mil_model_save for the result. On error nothing is
 * written. */
MIL_API mil_status mil_utils_save_multifunction(const mil_merge_function *fns, int32_t n, const char *default_function,
                                                const char *dest_path, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Editing a loaded model in place                                           */
/* ------------------------------------------------------------------------ */

/* rename_feature: renames the input and/or output feature `current_name`
 * to `new_name` in m: the description's inputs (rename_inputs) and outputs
 * (rename_outputs), predictedFeatureName and predictedProbabilitiesName
 * (rename_outputs), in every function's description, and in the program
 * of every function: the function input, and the var of that name (the op
 * output and every use of it, the block output). A name that no feature
 * has is a no-op (MIL_OK), as in coremltools. Errors: MIL_ERR_INVALID
 * (new_name not of the form [a-zA-Z_][a-zA-Z0-9_]*, coremltools' rule for
 * ML Program I/O names; new_name already the name of another var of a
 * function that has current_name, which would make the program ambiguous:
 * coremltools does not check this and writes a broken program). */
MIL_API mil_status mil_utils_rename_feature(mil_model *m, const char *current_name, const char *new_name,
                                            bool rename_inputs, bool rename_outputs, mil_diag *d);

/* change_input_output_tensor_type: switches the multiArray inputs and
 * outputs of type `from` to type `to` (each MIL_DT_FP32 or MIL_DT_FP16;
 * from == to changes nothing). Only the functions named in `functions`
 * (n_functions of them; NULL or 0: "main", or the default function of a
 * multifunction model without "main") are changed. Inputs: the ones named
 * in `inputs` (n_inputs; "*" = all; NULL: none, coremltools' default).
 * Outputs: the ones named in `outputs` (n_outputs; "*" = all; NULL: all,
 * coremltools' default). Features of another dtype or kind are skipped.
 * For an input x, the input's type becomes `to` and a
 * cast(x=x, dtype=<from>, name="x_to_fp32") before the first op takes
 * over every use of x; for an output y, y_to_fp16 = cast(x=y,
 * dtype=<to>) is appended and replaces y as the block output, and the
 * output feature is renamed to "y_to_fp16" (as coremltools does). A
 * function changed this way whose opset is older than CoreML6 (iOS16,
 * where fp16 I/O starts) is raised to CoreML6, and the specification
 * version to at least 7. Errors: MIL_ERR_INVALID (`from`/`to` not fp32 or
 * fp16, "not supported from_type ..."; a function the program does not
 * have, "function 'f' not defined in the model"). */
MIL_API mil_status mil_utils_change_io_type(mil_model *m, mil_dtype from, mil_dtype to, const char *const *functions,
                                            int32_t n_functions, const char *const *inputs, int32_t n_inputs,
                                            const char *const *outputs, int32_t n_outputs, mil_diag *d);

/* Sets (text != NULL) or clears (text == NULL or "") the shortDescription
 * of feature `name` (an input, output or state) of function `function`
 * (NULL: every function that has the feature). Errors: MIL_ERR_NOT_FOUND
 * (no feature of that name), MIL_ERR_NOMEM. */
MIL_API mil_status mil_utils_set_feature_description(mil_model *m, const char *function, const char *name,
                                                     const char *text, mil_diag *d);

/* Sets (value != NULL) or clears the model metadata field `field`:
 * "short_description", "author", "license" or "version" (versionString);
 * any other field name is a userDefined key (mil_model_set_metadata).
 * Errors: MIL_ERR_NOMEM. */
MIL_API mil_status mil_utils_set_model_metadata(mil_model *m, const char *field, const char *value, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Fixed-shape functions (materialize_dynamic_shape_mlmodel)                 */
/* ------------------------------------------------------------------------ */

/* materialize_dynamic_shape_mlmodel: makes fixed-shape copies of function
 * `source_function` (NULL: "main") of m and writes the model to
 * dest_path. `map_json` is coremltools' function_name_to_materialization_map
 * as JSON: {"batch_1": {"x": [1, 64]}, "batch_4": {"x": [4, 64]}} (new
 * function name -> input name -> shape). Runs the DEFAULT pipeline with
 * common::materialize_symbolic_shape_program first (its options set from
 * the arguments), then writes a multifunction model (specification
 * version at least 9; every function at its opset) unless the map holds
 * only `source_function` == "main" and the model has one function, which
 * stays a single-function model. The description is synthesized from the
 * program (the source's metadata kept). Consts equal across functions are
 * stored once. m is modified (its program is the one materialized).
 * Errors: MIL_ERR_UNSUPPORTED (an input or output of the model that is
 * not a multiArray: "Only tensor input is handled yet"), MIL_ERR_INVALID
 * (a malformed map, unknown function or input, a shape that does not fit),
 * errors of the pipeline and of mil_model_save. */
MIL_API mil_status mil_utils_materialize(mil_model *m, const char *map_json, const char *dest_path,
                                         const char *source_function, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Splitting a model in two (bisect_model)                                   */
/* ------------------------------------------------------------------------ */

/* Where mil_utils_bisect cut the model. */
typedef struct mil_utils_bisect_info {
  int32_t op_index;                 /* position of the incision op in the main block */
  const char *op_name, *op_type;    /* the incision op (valid while m lives) */
  int64_t first_chunk_weight_bytes; /* const weight bytes up to the incision */
  int64_t total_weight_bytes;       /* const weight bytes of the model */
  int32_t n_boundary;               /* vars passed from chunk 1 to chunk 2 */
} mil_utils_bisect_info;

/* bisect_model: splits m (one function, "main") into two models of about
 * equal weight size written to chunk1_path and chunk2_path, coremltools'
 * way: the weight size of each tensor const of the main block is its
 * elements times their item size; the incision op is the first non-const
 * op where the running size reaches half the total and whose one output is
 * used by exactly one op. Chunk 1 computes everything up to the incision
 * and returns the vars that later ops use (in program order; fp16 ones cast
 * to fp32, the cast taking the var's name); chunk 2 takes them as inputs of
 * those names (fp32, cast back to fp16 where needed) plus the model inputs
 * it still uses, and computes the model outputs. Dead code is removed from
 * both, the DEFAULT pipeline runs on both (as coremltools' converter does)
 * and both keep m's specification version; their descriptions are
 * synthesized. Running chunk 1, then chunk 2 on its outputs, gives the
 * model's outputs. m is not modified. info (may be NULL) receives where the
 * cut was made. Errors: MIL_ERR_INVALID ("'bisect_model' only support model
 * with a single 'main' function."; "Not able to find the bisect point in
 * the model."), errors of the pipeline and of mil_model_save. */
MIL_API mil_status mil_utils_bisect(mil_model *m, const char *chunk1_path, const char *chunk2_path,
                                    mil_utils_bisect_info *info, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Pipeline models (make_pipeline)                                           */
/* ------------------------------------------------------------------------ */

/* make_pipeline: writes the n >= 2 single-function models at `paths` as
 * one Pipeline model (.mlpackage, atomically) at dest_path, coremltools'
 * way: specification version the stages' highest; the pipeline's inputs
 * are the stages' inputs no earlier stage outputs, its outputs the stages'
 * outputs no later stage takes (last stage first); a stage output without
 * a shape takes the type of the next stage's input of that name; stage i's
 * weights are written to weights/<i>-weight.bin (streamed from the source's
 * mapped weight file) and its blob references name
 * "@model_path/weights/<i>-weight.bin". Errors: MIL_ERR_INVALID (n < 2),
 * MIL_ERR_UNSUPPORTED (dest not a .mlpackage; a multifunction stage),
 * errors of mil_model_load and of writing. */
MIL_API mil_status mil_utils_make_pipeline(const char *const *paths, int32_t n, const char *dest_path, mil_diag *d);

/* Whether path is a .mlpackage holding a Pipeline (or PipelineClassifier /
 * PipelineRegressor) model. Never fails: false for anything unreadable. */
MIL_API bool mil_utils_is_pipeline(const char *path);

/* Loads the stages of the pipeline model at path (a .mlpackage) as *n
 * models, in pipeline order, each with its weights resolved in the
 * package's weights directory (free with mil_utils_pipeline_free). Running
 * them in order, each on the pipeline inputs and the outputs of the stages
 * before it, is running the pipeline. Errors: MIL_ERR_UNSUPPORTED (not a
 * pipeline, a stage that is not an ML Program), errors of mil_model_load. */
MIL_API mil_status mil_utils_pipeline_load(const char *path, mil_model ***stages, int32_t *n, mil_diag *d);
MIL_API void mil_utils_pipeline_free(mil_model **stages, int32_t n);

/* ------------------------------------------------------------------------ */
/* Random weights (randomize_weights)                                        */
/* ------------------------------------------------------------------------ */

/* randomize_weights (with coremltools' common::WeightRandomizer): every
 * const of m, in every block, that goes to the weight file
 * (mil_blob_should_store) gets new values of the same dtype and shape, as
 * np.random.rand(*shape).astype(dtype): floating-point elements uniform in
 * [0, 1) from a splitmix64 stream started at `seed`, integer elements 0.
 * The specification version becomes at least 7 (iOS16), as coremltools'
 * _apply_graph_pass sets it. *n_randomized (may be NULL) receives the
 * number of consts changed. Each new weight is a fresh buffer (the old
 * values stay mapped, not copied). Errors: MIL_ERR_INVALID (no program),
 * MIL_ERR_NOMEM. */
MIL_API mil_status mil_utils_randomize_weights(mil_model *m, uint64_t seed, int64_t *n_randomized, mil_diag *d);

/* ------------------------------------------------------------------------ */
/* Weight sharing across functions                                           */
/* ------------------------------------------------------------------------ */

/* const_deduplication's _deduplicate_const_across_functions on p: the
 * const ops of the function bodies of p whose values are equal (rule of
 * mil_utils_save_multifunction) are given one value, so that the writer
 * stores them as one blob. Returns the number of consts that now share
 * an earlier const's value (0 for a program with one function). */
MIL_API int64_t mil_utils_share_consts_across_functions(mil_program *p);

#ifdef __cplusplus
}
#endif
#endif
