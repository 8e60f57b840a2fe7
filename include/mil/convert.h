/* libmil: conversion, as coremltools' ct.convert composes it:
 *
 *   import (frontend) -> model interface -> pass pipeline -> save (backend)
 *
 * This is the one place where the options of ct.convert apply
 * (minimum_deployment_target, compute_precision, pass_pipeline, input
 * shapes; inputs / outputs / classifier_config / flexible shapes are the
 * model-interface step's, see `interface` below). The importer
 * (mil_onnx_import, mil/onnx.h) and the loader (mil_model_load) only
 * read; the pipeline (mil/passes.h) only rewrites; the writers
 * (mil_model_save, mil_save_text) only write. `mil convert` and Python's
 * libmil.convert call these functions. Implemented in src/convert/. */
#ifndef MIL_CONVERT_H
#define MIL_CONVERT_H

#include "input_types.h"
#include "model.h"
#include "onnx.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A sample value of one input for the fp16 check (mil convert --sample
 * NAME=FILE, libmil.convert(sample_data=)). name: the model's input name,
 * or the ONNX name the import renamed. value: fp32 for a float input
 * (fp16 too), int32 for an integer or bool input (its values must fit). */
typedef struct mil_convert_sample {
  const char *name;
  mil_tensor value;
} mil_convert_sample;

/* The default tolerance of the fp16 check: an op's fp16 result may be off
 * by this fraction of the largest magnitude of its fp32 result. */
#define MIL_CONVERT_SAMPLE_TOLERANCE 1e-2

/* Zero-initialize; every zero field is ct.convert's default. */
typedef struct mil_convert_options {
  /* Minimum deployment target, an opset version of ops.h. ONNX source:
   * MIL_IOS15 .. MIL_IOS18, 0 = MIL_IOS15 (ct.convert's default for ML
   * Programs). Core ML / MIL source: 0 keeps the program's opsets; else the
   * program is retargeted (mil_program_retarget, iOS13 .. iOS26) and the
   * specification version set to it (unless spec_version says otherwise). */
  int target;
  /* Specification version written (6..10); 0 = the target's (ONNX) or the
   * input's (Core ML / MIL, or target's when retargeted). */
  int spec_version;
  /* compute_precision: true = fp32 (the pipeline without
   * common::add_fp16_cast and common::add_int16_cast); false = fp16. */
  bool fp32;
  /* pass_pipeline: a pipeline name (mil_pipeline_new: "default",
   * "cleanup", "empty", ...); NULL = "default". */
  const char *pipeline;
  /* true: run no pipeline at all (the program as imported or loaded). */
  bool no_pipeline;
  /* ONNX source: fixed shapes for graph inputs the model leaves symbolic
   * (mil_onnx_options). Refused for other sources. */
  int32_t n_input_shapes;
  const mil_onnx_input_shape *input_shapes;
  /* The model interface (mil/input_types.h: ct.convert's inputs, outputs,
   * classifier_config and metadata; NULL: none). Its input shapes are given
   * to the importer (flexible dims symbolic; ONNX source only),
   * mil_interface_prepare runs before the pipeline and
   * mil_interface_finish after it. With a pipeline, use_default_fp16_io
   * applies even without an interface (iOS16+ fp16 conversions get fp16
   * I/O, as ct.convert gives). */
  const mil_model_interface *interface;
  /* ONNX source: mil_onnx_options.nms_max_boxes. */
  int64_t nms_max_boxes;
  /* Where to save the result (NULL: not saved): the format its extension
   * names, as mil_model_save (.mlpackage, .mlmodel) or mil_save_text
   * (.mil) write it; inline_weights: .mil output with every const value
   * in the text, no weight file. */
  const char *output_path;
  bool inline_weights;
  /* ONNX source: inputs fixed to a value (mil_onnx_options.input_values,
   * mil convert --input-value). Refused for other sources. */
  int32_t n_input_values;
  const mil_onnx_input_value *input_values;
  /* The fp16 check (fp16 conversions with a pipeline; ignored for fp32 and
   * without a pipeline): with samples of every input, the program is run
   * with the interpreter through the fp32 and the fp16 pipelines on them,
   * and the ops whose fp16 results overflow (inf / NaN where fp32 is
   * finite) or are off by more than sample_tolerance (0: the default
   * MIL_CONVERT_SAMPLE_TOLERANCE; else in (0, 1)) of the largest magnitude
   * of their fp32 results stay fp32, through add_fp16_cast's op_selector
   * (coremltools' FP16ComputePrecision(op_selector=...)); each is reported
   * as a warning naming the op and why. Without samples, an ONNX import
   * warns about ops whose value ranges, known statically from consts and
   * integer inputs' declared types, reach beyond fp16's 65504. */
  int32_t n_samples;
  const mil_convert_sample *samples;
  double sample_tolerance;
} mil_convert_options;

/* Converts the model at `path`: .onnx is imported (mil_onnx_import);
 * .mlpackage, .mlmodel and .mil are loaded (mil_model_load). Then the
 * remaining steps of mil_convert_model. opts may be NULL (defaults). The
 * model is returned in *out when out is not NULL (free it with
 * mil_model_free), else freed after saving. *out is NULL on failure.
 * Errors: those of mil_onnx_import / mil_model_load and
 * mil_convert_model; MIL_ERR_INVALID for input_shapes or input_values with
 * a source that is not ONNX, for neither out nor output_path given. */
MIL_API mil_status mil_convert(const char *path, const mil_convert_options *opts, mil_model **out, mil_diag *d);

/* Same for a serialized ONNX ModelProto in memory (see
 * mil_onnx_import_buffer: `name` for messages, `dir` for external data). */
MIL_API mil_status mil_convert_onnx_buffer(const void *data, size_t len, const char *name, const char *dir,
                                           const mil_convert_options *opts, mil_model **out, mil_diag *d);

/* The steps after the import, on model m in place: model interface, the
 * pass pipeline (then the description is brought in line with the program,
 * mil_model_sync_description), retargeting (a nonzero opts->target when
 * retarget is true), the specification version, and saving to
 * opts->output_path when it is set. opts->input_shapes is ignored here
 * (an import option). Errors: MIL_ERR_NOT_FOUND (unknown pipeline name),
 * those of mil_interface_prepare / mil_interface_finish, of the passes,
 * mil_program_retarget (MIL_ERR_TYPE, MIL_ERR_INVALID),
 * mil_model_set_spec_version (MIL_ERR_INVALID) and the writers
 * (MIL_ERR_IO, ...); those of the fp16 check with samples (n_samples:
 * MIL_ERR_INVALID for a sample of no input, an input without a sample or
 * a sample that does not fit its input; the interpreter's errors on the
 * runs). On error the model may hold a partly optimized
 * program; nothing half-written is left at output_path. */
MIL_API mil_status mil_convert_model(mil_model *m, const mil_convert_options *opts, bool retarget, mil_diag *d);

#ifdef __cplusplus
}
#endif
#endif
