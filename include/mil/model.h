/* libmil: Core ML models on disk (.mlpackage, .mlmodel, .mil) and their
 * interface description.
 *
 * A mil_model is what a Core ML "ML Program" model file holds: the MIL
 * program, the specification version, the model description (inputs,
 * outputs, states, functions, metadata), and the weight files whose memory
 * mappings the program's large constants view. Formats: ../shared/spec/
 * formats.md sections 1-3 (protobuf), 4 (weight.bin, see blob.h), 5
 * (.mlpackage), 7 (versions) and 8 (validation).
 *
 * Mirrors coremltools' reading path (coremltools/models/model.py,
 * converters/mil/frontend/milproto/load.py) and writing path
 * (converters/mil/backend/mil/load.py and helper.py, models/utils.py
 * save_spec, modelpackage/src/ModelPackage.cpp).
 *
 * Ownership: a mil_model owns its program, its description and the open
 * weight files; mil_model_free releases all of it. Const values loaded from
 * weight.bin are zero-copy views into the mapping, valid as long as the
 * model lives (or, after mil_model_take_program, as long as the caller keeps
 * the weight files: see that function).
 */
#ifndef MIL_MODEL_H
#define MIL_MODEL_H

#include "blob.h"
#include "ir.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mil_model mil_model;

/* ------------------------------------------------------------------------ */
/* Versions (formats.md section 7)                                            */
/* ------------------------------------------------------------------------ */

/* Lowest and highest specification versions an ML Program can have. */
#define MIL_SPEC_VERSION_MIN 6
#define MIL_SPEC_VERSION_MAX 10

/* The MIL opset name for a specification version ("CoreML5" for 6 ...
 * "CoreML9" for 10), or NULL outside 6..10. */
MIL_API const char *mil_opset_for_spec_version(int spec_version);
/* The specification version an opset name implies (6 for "CoreML5" ... 10
 * for "CoreML9"), or 0 when the name is not an ML Program opset. */
MIL_API int mil_spec_version_for_opset(const char *opset);

/* ------------------------------------------------------------------------ */
/* Model description (decoded view, formats.md 1.2-1.5)                       */
/* ------------------------------------------------------------------------ */

typedef enum mil_feature_kind {
  MIL_FEATURE_NONE = 0, /* no type set */
  MIL_FEATURE_INT64 = 1,
  MIL_FEATURE_DOUBLE = 2,
  MIL_FEATURE_STRING = 3,
  MIL_FEATURE_IMAGE = 4,
  MIL_FEATURE_MULTIARRAY = 5,
  MIL_FEATURE_DICTIONARY = 6,
  MIL_FEATURE_SEQUENCE = 7,
  MIL_FEATURE_STATE = 8,
} mil_feature_kind;

/* ArrayFeatureType.ArrayDataType numbers (kind << 16 | bits). */
typedef enum mil_array_dtype {
  MIL_ARRAY_INVALID = 0,
  MIL_ARRAY_FLOAT32 = 65568,
  MIL_ARRAY_DOUBLE = 65600,
  MIL_ARRAY_FLOAT16 = 65552,
  MIL_ARRAY_INT32 = 131104,
  MIL_ARRAY_INT8 = 131080,
} mil_array_dtype;

/* ImageFeatureType.ColorSpace numbers. */
typedef enum mil_color_space {
  MIL_COLOR_INVALID = 0,
  MIL_COLOR_GRAYSCALE = 10,
  MIL_COLOR_RGB = 20,
  MIL_COLOR_BGR = 30,
  MIL_COLOR_GRAYSCALE_FLOAT16 = 40,
} mil_color_space;

/* An inclusive size range; upper < 0 means unbounded. */
typedef struct mil_size_range {
  uint64_t lower;
  int64_t upper;
} mil_size_range;

typedef struct mil_shape {
  int32_t rank;
  const int64_t *dims;
} mil_shape;

/* One FeatureDescription. Fields not used by `kind` are zero. */
typedef struct mil_feature {
  const char *name;              /* never NULL ("" when absent) */
  const char *short_description; /* never NULL */
  mil_feature_kind kind;
  bool is_optional;
  /* MULTIARRAY, and STATE (its arrayType) */
  mil_array_dtype array_dtype;
  mil_shape shape;               /* default / fixed shape (rank 0: none given) */
  int32_t n_enumerated;          /* enumeratedShapes */
  const mil_shape *enumerated;
  int32_t n_ranges;              /* shapeRange: one range per dimension */
  const mil_size_range *ranges;
  /* IMAGE */
  int64_t width, height;
  mil_color_space color_space;
  int32_t n_image_sizes;         /* enumeratedSizes: (width, height) pairs */
  const uint64_t *image_sizes;   /* 2 * n_image_sizes entries */
  bool has_image_range;
  mil_size_range width_range, height_range;
  /* DICTIONARY: MIL_FEATURE_INT64 or MIL_FEATURE_STRING keys */
  mil_feature_kind dict_key;
} mil_feature;

/* The interface of one function (for a single-function model: of the
 * function "main", with the predicted-name fields of the description). */
typedef struct mil_function_desc {
  const char *name;
  int32_t n_inputs, n_outputs, n_states;
  const mil_feature *inputs, *outputs, *states;
  const char *predicted_feature_name;       /* never NULL */
  const char *predicted_probabilities_name; /* never NULL */
} mil_function_desc;

typedef struct mil_model_desc {
  /* true when the description uses the multi-function fields
   * (functions / defaultFunctionName, spec >= 9) */
  bool multi_function;
  const char *default_function_name; /* "main" for single-function models */
  int32_t n_functions;
  const mil_function_desc *functions;
  /* Metadata */
  const char *short_description, *version_string, *author, *license; /* never NULL */
  int32_t n_user_defined; /* userDefined map, in file order */
  const char *const *user_keys;
  const char *const *user_values;
} mil_model_desc;

/* ------------------------------------------------------------------------ */
/* Loading and saving                                                         */
/* ------------------------------------------------------------------------ */

/* Loads a model, choosing the format by the path's extension:
 *  .mlpackage  a package directory (formats.md 5): Manifest.json is parsed
 *              and checked (5.3), the root model item's protobuf is read and
 *              weights are resolved through the manifest's "weights" item
 *              (author com.apple.CoreML), i.e. <pkg>/Data/com.apple.CoreML/
 *              weights/<last component of fileName>;
 *  .mlmodel    a bare Model protobuf; blob references are resolved against
 *              a "weights" directory next to the file;
 * Only regular files are read (a FIFO or device is an error, never a
 * blocking open), and every file the model names must resolve, symlinks
 * followed, inside the package (or the .mlmodel's directory); otherwise
 * MIL_ERR_IO "... resolves to ..., outside ...".
 *  .mil        complete-form MIL text (mil_parse_file) of any opset,
 *              CoreML3..CoreML9; the specification version is the one the
 *              functions' opset implies (section 7; 4 for CoreML3, 5 for
 *              CoreML4, which only .mil output can write); there is no
 *              description (one is synthesized on save, see
 *              mil_model_from_program).
 * A trailing '/' on the path is ignored. Only ML Program models are
 * accepted: another model kind fails with "not an ML Program model (it is a
 * neuralNetwork model)". On success *out owns everything; on failure *out is
 * NULL and d holds a message naming the file, the byte offset or protobuf
 * field, and what was expected and found.
 * Errors: MIL_ERR_IO (missing file, unreadable), MIL_ERR_FORMAT (malformed
 * protobuf, manifest, weight file, const/blob mismatch), MIL_ERR_PARSE (.mil
 * text), MIL_ERR_UNSUPPORTED (not an ML Program, unknown extension, spec
 * version outside 6..10), MIL_ERR_INVALID (structurally invalid program),
 * MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_load(const char *path, mil_model **out, mil_diag *d);

/* Loads a model from an in-memory serialized Model protobuf (the contents of
 * a .mlmodel). `name` is used in messages; `weights_dir` (may be NULL) is the
 * directory that blob references resolve against: the caller's explicit
 * choice, so weight files found there are not confined to it (symlinks are
 * followed); they must still be regular files. Errors as mil_model_load. */
MIL_API mil_status mil_model_load_proto(const void *data, size_t len, const char *name, const char *weights_dir,
                                        mil_model **out, mil_diag *d);

/* Saves m, choosing the format by the extension of `path`:
 *  .mlpackage  the layout of formats.md 5.1: Manifest.json in coremltools'
 *              form (fileFormatVersion 1.0.0, two items with fresh random
 *              UUIDs, 4-space indentation, sorted keys), Data/com.apple.CoreML/
 *              model.mlmodel and weights/weight.bin;
 *  .mlmodel    the bare protobuf; consts that go to a weight file (see below)
 *              are written to weights/<stem>.<16 hex>.bin in the same
 *              directory (a fresh name on every save, see below), which is
 *              where mil_model_load and coremltools' MLModel(spec,
 *              weights_dir=...) look (both use the last component of the
 *              blob's fileName); no weights directory is written when every
 *              const is immediate;
 *  .mil        complete-form MIL text (mil_save_text in mil/text.h): the
 *              consts that would go to weight.bin go to a weight file
 *              beside it ("net.mil" -> "net.weight.bin"), the rest inline.
 * Consts follow coremltools' rule (formats.md 3.1, mil_blob_should_store):
 * at least 10 elements of a blob dtype go to weight.bin, the rest are
 * immediate. Const values that view a loaded weight file are copied byte for
 * byte. Before writing, the description is brought in line with the program
 * (mil_model_sync_description).
 * Writing is atomic: a crash at any moment leaves the old model or the new
 * one at `path`, never a mix:
 *  .mlpackage  is built in a temporary sibling directory and swapped with
 *              the old package in one step (renameat2 RENAME_EXCHANGE; on
 *              a file system without it the old package is moved aside
 *              first), then the old one is removed;
 *  .mlmodel    its weights go to a fresh file weights/<stem>.<16 hex>.bin
 *              (stem: the file name without .mlmodel) that the new model
 *              names, the model to a temporary sibling renamed over `path`
 *              last; the old model's weight files (<stem>.<hex>.bin) are
 *              removed after. Each .mlmodel thus owns its weight files: two
 *              models in one directory never share one. Saves into one
 *              weights directory are serialized with flock(2). A .mlmodel
 *              target inside a .mlpackage is refused (MIL_ERR_IO);
 *  .mil        a temporary sibling renamed over `path`.
 * Temporaries are named "<path>.tmp-<pid>-<hex>"; on failure they are
 * removed and an existing `path` is left untouched. A save removes the
 * temporaries that earlier saves to the same path left when their process
 * died; mil_save_cleanup_on_signals removes this process's on SIGINT,
 * SIGTERM and SIGHUP. Loading (mil_model_load) reads again when what is at
 * the path changed while it read, so a reader never combines parts of two
 * saves. An existing .mlpackage directory is replaced; an existing path of
 * another kind (a file where a package goes, or a non-empty directory
 * without Manifest.json) is refused. Saving over the model's own source
 * path is allowed.
 * .mlpackage and .mlmodel need every function's opset to be CoreML5 or
 * later (an ML Program); an older one fails with "writing an ML Program
 * model needs opset CoreML5 (iOS15) or later, but function 'main' has
 * CoreML3 (iOS13); retarget it ..." (see mil_program_retarget). .mil takes
 * any opset.
 * Errors: MIL_ERR_IO, MIL_ERR_UNSUPPORTED (unknown extension, an opset
 * older than CoreML5 in an ML Program file, a type the protobuf cannot
 * express, I/O dtypes Core ML cannot describe),
 * MIL_ERR_INVALID (program refers to undefined vars, non-const input to a
 * constexpr op), MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_save(mil_model *m, const char *path, mil_diag *d);

/* Removes the temporaries of the saves in progress in this process (see
 * mil_model_save). Async-signal-safe: meant for a signal handler. */
MIL_API void mil_save_remove_temporaries(void);
/* Installs handlers for SIGINT, SIGTERM and SIGHUP (those not ignored) that
 * call mil_save_remove_temporaries, then die of the signal as before. For
 * programs without handlers of their own (the mil tool calls it). */
MIL_API void mil_save_cleanup_on_signals(void);

/* Serializes m's Model protobuf into a malloc'ed buffer (*data, *len; free
 * with free()). Blob consts are written through `weights` (may be NULL:
 * then every const is written immediate). Errors as mil_model_save. */
MIL_API mil_status mil_model_serialize(mil_model *m, mil_blob_writer *weights, void **data, size_t *len,
                                       mil_diag *d);

/* Builds a model around `prog` (taking ownership of it, also on failure)
 * for specification version `spec_version` (4..10; 0 = the version the
 * program's opset implies; 4 and 5, CoreML3 and CoreML4 programs, can only
 * be saved as .mil). The description is synthesized from the
 * functions' inputs and outputs the way coremltools' exporter does
 * (formats.md 1.5): multiArrayType with the shape and dtype (fp32 FLOAT32,
 * fp16 FLOAT16, int32 INT32, int8 INT8), a scalar input as shape [1], an
 * input with symbolic dims as the default shape (symbols replaced by 1) plus
 * a shapeRange of [1, 2] for each symbolic dim and [d, d] otherwise, an
 * output with a symbolic shape with an empty shape, states as stateType
 * (fp16, fixed shape). A program with several functions gets the
 * multi-function form (defaultFunctionName "main" when present, else the
 * first function). Errors: MIL_ERR_INVALID (bad version, no function),
 * MIL_ERR_UNSUPPORTED (an I/O dtype or type the description cannot express),
 * MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_from_program(mil_program *prog, int spec_version, mil_model **out, mil_diag *d);

/* Frees the model, its program, description and weight files. NULL is ok. */
MIL_API void mil_model_free(mil_model *m);

/* ------------------------------------------------------------------------ */
/* Accessors                                                                  */
/* ------------------------------------------------------------------------ */

MIL_API mil_program *mil_model_program(const mil_model *m);
/* Replaces the program (the old one is freed). Weight files stay open, so
 * values of the new program may keep viewing them. Takes ownership. */
MIL_API void mil_model_set_program(mil_model *m, mil_program *prog);
/* Detaches and returns the program; the model then has none. The weight
 * files stay with the model: keep the model alive while the program uses
 * values viewing them. */
MIL_API mil_program *mil_model_take_program(mil_model *m);

MIL_API int mil_model_spec_version(const mil_model *m);
/* Sets the specification version written on save (6..10). MIL_ERR_INVALID
 * outside that range. The opset of the functions is not changed. */
MIL_API mil_status mil_model_set_spec_version(mil_model *m, int spec_version);

/* The path the model was loaded from ("" for models built in memory). */
MIL_API const char *mil_model_path(const mil_model *m);

/* The decoded description. For a model loaded from .mil text (no stored
 * description) the view is synthesized from the program when possible and
 * otherwise has no functions. The pointer stays valid until the next call
 * that changes the description (mil_model_sync_description, save,
 * set_program). Never NULL. */
MIL_API const mil_model_desc *mil_model_description(mil_model *m);
/* The description of function `name` (NULL = the default function), or
 * NULL when the description has none. */
MIL_API const mil_function_desc *mil_model_function_desc(mil_model *m, const char *name);
/* Value of userDefined metadata key `key`, or NULL. */
MIL_API const char *mil_model_metadata(mil_model *m, const char *key);
/* Sets (value != NULL) or removes (value == NULL) a userDefined metadata
 * entry. Errors: MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_set_metadata(mil_model *m, const char *key, const char *value);

/* Describes input (input true) or output `f->name` of function `function`
 * (NULL: the default function) as f: a multi-array (dtype, default shape,
 * enumerated shapes or one size range per dim) or an image (width, height,
 * colour space, enumerated sizes or a size range), with f->short_description
 * when not empty; ct.convert's ImageType / EnumeratedShapes / RangeDim
 * descriptions (coremltools/converters/mil/backend/mil/load.py). The rest
 * of the description is first synthesized from the program when the model
 * has none. The feature is kept by later syncs and saves while it fits the
 * var (same dtype, the image's H/W or a flexible shape containing the
 * var's). Errors: MIL_ERR_INVALID (no name, a kind other than MULTIARRAY /
 * IMAGE), MIL_ERR_NOT_FOUND (no such function or feature), MIL_ERR_NOMEM,
 * and those of mil_model_sync_description. */
MIL_API mil_status mil_model_set_feature(mil_model *m, const char *function, bool input, const mil_feature *f,
                                         mil_diag *d);
/* Sets the classifier fields predictedFeatureName / predictedProbabilitiesName
 * of function `function` (NULL: the default; for a single-function model the
 * description's own fields). Errors: MIL_ERR_NOT_FOUND, MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_set_predicted_names(mil_model *m, const char *function, const char *feature,
                                                 const char *probs, mil_diag *d);
/* Sets a metadata field as coremltools' MLModel properties do: field is
 * "author", "license", "short_description" or "version" (versionString);
 * value NULL clears it. Errors: MIL_ERR_INVALID (other field), MIL_ERR_NOMEM. */
MIL_API mil_status mil_model_set_info(mil_model *m, const char *field, const char *value, mil_diag *d);

/* Brings the description in line with the program's functions: features
 * whose name and type still fit the program's inputs/outputs (same dtype,
 * same shape or a compatible flexible shape, or an image of the same H/W)
 * are kept unchanged, others are synthesized as mil_model_from_program does,
 * features of vars that no longer exist are dropped, and the order follows
 * the program. Metadata and predicted-feature names are kept. Errors as
 * mil_model_from_program. */
MIL_API mil_status mil_model_sync_description(mil_model *m, mil_diag *d);

/* Weight files opened while loading (usually zero or one). */
MIL_API int32_t mil_model_n_weight_files(const mil_model *m);
MIL_API mil_blob_file *mil_model_weight_file(const mil_model *m, int32_t i);
/* mil_blob_file_check on every weight file of m (MIL_OK when there is
 * none): the first error, naming the file that was truncated. */
MIL_API mil_status mil_model_check_weights(const mil_model *m, mil_diag *d);

/* Short name of a feature kind ("multiArray", "image", "state", ...) and of
 * an array dtype ("FLOAT32", ...). Never NULL. */
MIL_API const char *mil_feature_kind_name(mil_feature_kind k);
MIL_API const char *mil_array_dtype_name(mil_array_dtype t);

#ifdef __cplusplus
}
#endif
#endif
