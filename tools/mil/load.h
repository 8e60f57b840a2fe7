/* Loading any model the CLI accepts (.mil, .mlmodel, .mlpackage, and .onnx through the importer). */
#ifndef MIL_CLI_LOAD_H
#define MIL_CLI_LOAD_H

#include "mil/mil.h"
#include "mil/model.h"

typedef struct cli_loaded {
  mil_program *program; /* borrowed from model when model != NULL */
  void *model;          /* mil_model * for .mlmodel / .mlpackage */
} cli_loaded;

/* Loads path by its extension. On failure d holds the reason. */
/* mil_model_load, or mil_onnx_import (default options) for a .onnx path. */
mil_status cli_load_model(const char *path, mil_model **out, mil_diag *d);
mil_status cli_load(const char *path, cli_loaded *out, mil_diag *d);
void cli_unload(cli_loaded *m);
/* Absolute paths of the weight files a loaded model's consts came from, for
 * printing them as @blob references that resolve wherever the text goes
 * (mil_print_extra.blob_ref; ud is a cli_blob_paths). */
typedef struct cli_blob_paths {
  const char *model_path; /* the path the model was loaded from */
  cli_loaded *m;
  const char *keys[16]; /* interned blob_file names seen */
  char *vals[16];       /* their absolute paths (NULL: not found) */
  int n;
} cli_blob_paths;
const char *cli_blob_abs_ref(void *ud, const mil_value *v, uint64_t *offset);
void cli_blob_paths_free(cli_blob_paths *b);

/* Writes the program of m to out: "-" (complete-form text on standard
 * output, weights referred to by absolute path unless inline_weights), .mil
 * (mil_save_text: weights in a weight file beside it unless
 * inline_weights), or .mlmodel / .mlpackage (mil_model_save; a program
 * without a model gets a synthesized description). */
mil_status cli_write_output(const char *out, const char *in_path, cli_loaded *m, bool inline_weights, mil_diag *d);

/* Prefixes messages d->msgs[from..] found after loading `path` (type
 * errors, verifier findings) with the file name, and for a .mil file with
 * the line:column of the op a message names ("op 'x'"), found by its
 * name="x" in the text. Messages already naming the file are left alone. */
void cli_diag_locate(mil_diag *d, size_t from, const char *path);

/* True when path names a format `mil` writes: .mil, .mlmodel or
 * .mlpackage (a trailing '/' ignored), or "-" when allow_stdout. */
bool cli_output_format_ok(const char *path, bool allow_stdout);

/* --target NAME of `mil convert` / `mil opt`: "iOS15".."iOS18" or "iOS26"
 * (the ML Program targets, as ct.convert's minimum_deployment_target) into
 * *version (MIL_IOS15..). A usage error (CLI_USAGE, the valid choices
 * listed) otherwise; CLI_OK on success. */
int cli_parse_target(const char *cmd, const char *name, int *version);
/* Every check `mil validate` runs on a loaded program. */
mil_status cli_validate_program(const mil_program *p, mil_diag *d);

/* cli_load, except that .mil text is parsed directly (no model description
 * to keep; one is synthesized when the result is written as a model). */
mil_status cli_load_any(const char *path, cli_loaded *out, mil_diag *d);

#endif
