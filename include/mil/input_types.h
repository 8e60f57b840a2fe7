/* libmil — a converted model's interface, as ct.convert's options give it:
 * input types (tensors and images, with fixed, ranged or enumerated shapes
 * and a dtype), output names and dtypes, a classifier head and metadata.
 *
 * Mirrors coremltools/converters/mil/input_types.py (TensorType, ImageType,
 * Shape, RangeDim, EnumeratedShapes, ClassifierConfig, ColorLayout),
 * converters/_converters_entry.py (use_default_fp16_io),
 * converters/mil/frontend/torch/converter.py (fp16 inputs cast to fp32,
 * output renaming), converters/mil/backend/mil/load.py (_add_classify_op,
 * the description) and backend/mil/passes/insert_image_preprocessing_op.py.
 *
 * A conversion applies an interface in two steps around the pass pipeline,
 * as coremltools does (frontend -> pipeline -> backend):
 *   mil_interface_prepare  after import: input dtypes, output names, the
 *                          declared output dtypes (Function.output_types),
 *                          the image declarations;
 *   mil_interface_finish   after the pipeline: image preprocessing ops,
 *                          the classify op, the description (image features,
 *                          flexible shapes, classifier names) and metadata.
 * Flexible input shapes must be given to the importer (an ONNX model's input
 * dims become symbolic there: mil_interface_onnx_shapes); a MIL program's
 * input shapes are not changed.
 */
#ifndef MIL_INPUT_TYPES_H
#define MIL_INPUT_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "mil/status.h"
#include "mil/model.h"
#include "mil/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ct.colorlayout: the channel order an image input's pixels come in. */
typedef enum mil_color_layout {
  MIL_COLOR_LAYOUT_RGB = 0,
  MIL_COLOR_LAYOUT_BGR = 1,
  MIL_COLOR_LAYOUT_GRAYSCALE = 2,         /* "G" */
  MIL_COLOR_LAYOUT_GRAYSCALE_FLOAT16 = 3, /* "G_FLOAT16" (iOS16+) */
} mil_color_layout;

/* ct.RangeDim(lower_bound, upper_bound, default): upper_bound -1 is
 * unbounded (refused for ML Programs, as ct.convert refuses it); default
 * 0 means lower_bound. */
typedef struct mil_range_dim {
  int64_t lower_bound, upper_bound, default_value;
} mil_range_dim;

/* The shape of an input: ct.Shape (dims, each fixed or a RangeDim) or
 * ct.EnumeratedShapes (n_enumerated shapes of `rank` dims). */
typedef struct mil_shape_spec {
  int32_t rank;
  const int64_t *dims;          /* rank dims; a dim with ranges[i].upper_bound != 0 is ranged */
  const mil_range_dim *ranges;  /* NULL, or rank entries (upper_bound 0: dims[i] fixed) */
  int32_t n_enumerated;         /* > 0: EnumeratedShapes */
  const int64_t *enumerated;    /* n_enumerated * rank dims */
  const int64_t *default_shape; /* rank dims, NULL = the first enumerated shape */
} mil_shape_spec;

/* ct.TensorType / ct.ImageType. */
typedef struct mil_input_type {
  const char *name;     /* the model's input name (ONNX: its graph input name) */
  bool is_image;
  bool has_shape;       /* shape given (else the model's own) */
  mil_shape_spec shape;
  mil_dtype dtype;      /* MIL_DT_UNUSED (0): the model's; MIL_DT_FP16 / FP32 / INT32 */
  /* ImageType */
  float scale;          /* 1 when unset */
  float bias[3];        /* per channel (GRAYSCALE: bias[0]) */
  mil_color_layout color_layout;
} mil_input_type;

/* ct.TensorType given in `outputs`: a new name and / or dtype. */
typedef struct mil_output_type {
  const char *name;     /* NULL: keep the model's */
  mil_dtype dtype;      /* MIL_DT_UNUSED: the default (fp16 I/O rule) */
} mil_output_type;

/* ct.ClassifierConfig. Labels are strings (labels) or int64 (int_labels). */
typedef struct mil_classifier_config {
  int32_t n_labels;
  const char *const *labels;
  const int64_t *int_labels;
  const char *predicted_feature_name;         /* NULL: "classLabel" */
  const char *predicted_probabilities_output; /* NULL: the last op's output */
} mil_classifier_config;

typedef struct mil_model_interface {
  int32_t n_inputs;
  const mil_input_type *inputs;
  int32_t n_outputs;        /* 0, or the number of the model's outputs */
  const mil_output_type *outputs;
  const mil_classifier_config *classifier; /* NULL: none */
  /* MLModel metadata (NULL: unset) */
  const char *author, *license, *short_description, *version;
  int32_t n_user_defined;
  const char *const *user_keys, *const *user_values;
  /* feature descriptions (MLModel.input_description[name] = text) */
  int32_t n_descriptions;
  const char *const *description_names, *const *description_texts;
} mil_model_interface;

/* An input type with coremltools' defaults (scale 1, bias 0, RGB). */
MIL_API mil_input_type mil_input_type_default(const char *name, bool is_image);

/* The first step (after import, before the pipeline), for main:
 *  - each input of mi must be an input of main, named as the model names
 *    it or, for an ONNX import, by the ONNX name the import renamed
 *    (metadata MIL_ONNX_NAMES_KEY: x.1 -> x_1); an image must have rank 4
 *    and shape (1, 3, H, W) (RGB/BGR) or (1, 1, H, W) (grayscale);
 *  - an fp32 tensor input typed fp16 (or, with use_default_fp16_io, any fp32
 *    tensor input not typed otherwise) becomes an fp16 input feeding a cast
 *    to fp32, as the torch frontend does; fp16 needs target >= MIL_IOS16;
 *  - outputs are renamed (the var, not its op, as coremltools does) and their
 *    dtypes declared in main's "output_types" (fp32 outputs default to fp16
 *    with use_default_fp16_io) for update_output_dtypes / add_fp16_cast;
 *  - image inputs are declared for mil_backend::insert_image_preprocessing_ops.
 * use_default_fp16_io is coremltools' rule: target >= MIL_IOS16 and fp16
 * compute precision. Errors (naming the input or output):
 *   MIL_ERR_INVALID      unknown input, bad image shape, an output count that
 *                        differs, a duplicate output name, a dtype that
 *                        cannot be given (fp16 before iOS16, int32 for a
 *                        float input);
 *   MIL_ERR_NOMEM. */
MIL_API mil_status mil_interface_prepare(mil_model *m, const mil_model_interface *mi, int target, bool fp16_precision,
                                         mil_diag *d);

/* The second step (after the pipeline): image preprocessing ops, the
 * classify op (classes as a list, probabilities cast to fp32 as
 * "<var>_cast_to_fp32" when needed, outputs classLabel and
 * classLabel_probs first), then the description: image features (width,
 * height, colour space, enumerated sizes or size ranges), flexible
 * multi-array shapes (default shape and shapeRange / enumeratedShapes),
 * predictedFeatureName / predictedProbabilitiesName, metadata and
 * feature descriptions. Errors: MIL_ERR_INVALID (no probabilities var, a
 * label count that differs from the probabilities), those of the pass and
 * of mil_model_set_feature, MIL_ERR_NOMEM. */
MIL_API mil_status mil_interface_finish(mil_model *m, const mil_model_interface *mi, mil_diag *d);

#ifdef __cplusplus
}
#endif

#endif
