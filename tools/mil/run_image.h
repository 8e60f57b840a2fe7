/* Image inputs of `mil run` / `mil verify` (run_image.c). */
#ifndef MIL_CLI_RUN_IMAGE_H
#define MIL_CLI_RUN_IMAGE_H

#include "run_common.h"

/* When `name` is an image input of fd and FILE a PNG or JPEG image (by
 * its name: .png, .jpg, .jpeg) or a (H, W, C) uint8 .npy of pixels: reads
 * it into the (1, C, H, W) tensor the input takes (channels in the
 * feature's colour order, 0..255, fp16 for GRAYSCALE_FLOAT16), after
 * checking the size against the sizes the description allows. Returns 1
 * when it handled the input (*st its status, errors in d), 0 when the
 * caller reads FILE as a tensor. */
int cli_image_input(const mil_function_desc *fd, const char *name, const char *path, const mil_type *want,
                    cli_tensor *out, mil_status *st, mil_diag *d);

#endif
