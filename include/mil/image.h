/* libmil — images for image inputs: PNG and JPEG decoding (libpng,
 * libjpeg) and the planes an image input of a model takes.
 *
 * A Core ML image input (ImageFeatureType) takes a picture; the runtime
 * hands the model its pixels as a (1, C, H, W) tensor in the feature's
 * colour order: RGB or BGR (C = 3) or grayscale (C = 1; fp16 values for
 * GRAYSCALE_FLOAT16), as 0..255 values; the model's own preprocessing
 * (the scale and bias ops ct.ImageType adds) follows. coremltools'
 * MLModel.predict takes a PIL.Image for such an input.
 */
#ifndef MIL_IMAGE_H
#define MIL_IMAGE_H

#include <stdint.h>

#include "mil/model.h"
#include "mil/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decodes the PNG or JPEG file at `path` (by its signature, not its name)
 * into 8-bit pixels, row-major (H, W, C): C = 3 (RGB) when channels is 3,
 * C = 1 (luminance) when channels is 1 (colour images are converted; an
 * alpha channel is dropped, composited on black). *pixels is malloc'd
 * (free()); *h and *w get the size. Errors (naming the file):
 *   MIL_ERR_IO           the file cannot be read;
 *   MIL_ERR_FORMAT       neither PNG nor JPEG, or a corrupt image;
 *   MIL_ERR_UNSUPPORTED  an image larger than 16384 x 16384 or 256 MiB of pixels;
 *   MIL_ERR_INVALID      channels not 1 or 3;
 *   MIL_ERR_NOMEM. */
MIL_API mil_status mil_image_read(const char *path, int channels, uint8_t **pixels, int64_t *h, int64_t *w,
                                  mil_diag *d);

/* Whether an image of width w and height h is one the image feature f
 * accepts: its width x height, one of its enumerated sizes, or within its
 * size ranges. When it is not, d gets an error naming `input`, the size and
 * what is allowed, and MIL_ERR_INVALID is returned. */
MIL_API mil_status mil_image_size_check(const mil_feature *f, const char *input, int64_t w, int64_t h, mil_diag *d);

/* The channels (1 or 3) an image feature's colour space takes. */
MIL_API int mil_image_channels(const mil_feature *f);

/* Writes the (1, C, H, W) planes of (H, W, c) pixels for image feature f
 * into out (C * H * W floats), in f's channel order (BGR reverses RGB
 * pixels); c must be mil_image_channels(f). MIL_ERR_INVALID otherwise. */
MIL_API mil_status mil_image_planes(const mil_feature *f, const uint8_t *pixels, int64_t h, int64_t w, int c,
                                    float *out, mil_diag *d);

/* The image input `input` of function `function` (NULL: the default) of
 * model m: its channels (1 or 3), or 0 when it is not an image input. */
MIL_API int mil_model_image_channels(mil_model *m, const char *function, const char *input);

/* mil_image_size_check and mil_image_planes for the image input `input` of
 * m's function `function` (NULL: the default): out receives the
 * C * h * w floats. Errors: MIL_ERR_NOT_FOUND (no such image input) and
 * those of the two functions. */
MIL_API mil_status mil_model_image_planes(mil_model *m, const char *function, const char *input,
                                          const uint8_t *pixels, int64_t h, int64_t w, int c, float *out,
                                          mil_diag *d);

#ifdef __cplusplus
}
#endif

#endif
