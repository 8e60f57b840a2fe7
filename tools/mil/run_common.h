/* Helpers shared by `mil run` and `mil verify` (run_common.c): feeding
 * .npy files or random tensors to an interpreter and summarizing outputs. */
#ifndef MIL_CLI_RUN_COMMON_H
#define MIL_CLI_RUN_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "mil/interp.h"
#include "mil/model.h"
#include "mil/npy.h"
#include "mil/onnx_tensor.h"

/* One --input NAME=FILE.npy argument (FILE alone names the only input). */
typedef struct cli_input_arg {
  const char *name; /* NULL when the argument had no NAME= */
  const char *file;
} cli_input_arg;

/* Splits "NAME=FILE" (or "FILE") into a. */
void cli_parse_input_arg(const char *s, cli_input_arg *a);

/* Parses --input argument s into ins[*n] and counts it (*n += 1). A second
 * value for the same input name (or a second argument without NAME=) is a
 * usage error: returns CLI_USAGE after printing it, else CLI_OK. */
int cli_add_input_arg(const char *cmd, const char *s, cli_input_arg *ins, int *n);
/* Option values: a non-negative integer (decimal or 0x hex) / a finite
 * non-negative number; anything else is a usage error naming opt
 * (returns CLI_USAGE), else CLI_OK with *out set. */
int cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
int cli_parse_nonneg(const char *cmd, const char *opt, const char *s, double *out);

/* A tensor owned by the caller (free with cli_tensor_free). */
typedef struct cli_tensor {
  mil_tensor t;
  int64_t shape[MIL_INTERP_MAX_RANK];
  void *buf;
} cli_tensor;
void cli_tensor_free(cli_tensor *t);
/* A zeroed tensor of that dtype and shape in *out. */
mil_status cli_tensor_alloc(mil_dtype dt, int32_t rank, const int64_t *shape, cli_tensor *out, mil_diag *d);

/* Reads FILE.npy, or FILE.pb (an ONNX TensorProto, mil/onnx_tensor.h), as a
 * tensor for an input declared `want`: a numeric array of another dtype is
 * converted to the declared dtype (noted on stderr). Errors name the file
 * and the input. */
mil_status cli_tensor_from_npy(const char *path, const char *input, const mil_type *want, cli_tensor *out,
                               mil_diag *d);
/* Whether path names an ONNX TensorProto file (ends in ".pb"). */
bool cli_is_pb(const char *path);

/* A random tensor for an input declared `want` (symbolic dims become 1):
 * floats uniform in [-1, 1), ints uniform in [0, 10) (bool 0/1), drawn from
 * a splitmix64 stream started at *state. */
mil_status cli_tensor_random(const char *input, const mil_type *want, uint64_t *state, cli_tensor *out, mil_diag *d);

/* Sets the interpreter's inputs: each input named in args (or the only
 * input for an argument without NAME=) from its .npy file, and, when
 * random_state is non-NULL, every other non-state input with random
 * values. Errors name the argument. `kept` receives the tensors set (array
 * of n_inputs entries, freed by the caller with cli_tensor_free). */
mil_status cli_set_inputs(mil_interp *ip, const cli_input_arg *args, int n_args, uint64_t *random_state,
                          cli_tensor *kept, mil_diag *d);
/* Same, with the function's description (may be NULL): an image input
 * also takes a PNG or JPEG file or a (H, W, C) uint8 .npy of pixels
 * (run_image.h). */
mil_status cli_set_inputs_described(mil_interp *ip, const mil_function_desc *fd, const cli_input_arg *args,
                                    int n_args, uint64_t *random_state, cli_tensor *kept, mil_diag *d);

/* Element i of t as double (any numeric dtype). */
double cli_tensor_get(const mil_tensor *t, int64_t i);

/* Prints "name: shape dtype min max mean" for t. */
void cli_print_summary(const char *name, const mil_tensor *t);

#endif
