/* Image inputs of `mil run` / `mil verify`: a picture (PNG, JPEG) or a
 * (H, W, C) uint8 .npy for an input the description declares an image,
 * as coremltools' MLModel.predict takes a PIL.Image for it. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mil/image.h"
#include "run_image.h"

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static const mil_feature *image_feature(const mil_function_desc *fd, const char *name) {
  for (int32_t i = 0; fd && name && i < fd->n_inputs; i++)
    if (!strcmp(fd->inputs[i].name, name) && fd->inputs[i].kind == MIL_FEATURE_IMAGE) return &fd->inputs[i];
  return NULL;
}

/* FILE.npy as (H, W, C) uint8 pixels; NULL (and *handled false) when it
 * is an array of another kind. */
static uint8_t *npy_pixels(const char *path, int64_t *h, int64_t *w, int *c, bool *handled, mil_status *st,
                           mil_diag *d) {
  mil_npy *a = NULL;
  *handled = false;
  if ((*st = mil_npy_read(path, &a, d)) != MIL_OK) {
    *handled = true;
    return NULL;
  }
  uint8_t *px = NULL;
  if (a->dtype == MIL_DT_UINT8 && a->rank == 3 && (a->shape[2] == 1 || a->shape[2] == 3)) {
    *handled = true;
    *h = a->shape[0], *w = a->shape[1], *c = (int)a->shape[2];
    px = malloc(a->nbytes ? a->nbytes : 1);
    if (!px) *st = mil_diag_error(d, MIL_ERR_NOMEM, "out of memory");
    else memcpy(px, a->data, a->nbytes);
  }
  mil_npy_free(a);
  return px;
}

int cli_image_input(const mil_function_desc *fd, const char *name, const char *path, const mil_type *want,
                    cli_tensor *out, mil_status *st, mil_diag *d) {
  const mil_feature *f = image_feature(fd, name);
  if (!f) return 0;
  memset(out, 0, sizeof *out);
  int channels = mil_image_channels(f), c = channels;
  int64_t h = 0, w = 0;
  uint8_t *px = NULL;
  if (has_suffix(path, ".png") || has_suffix(path, ".jpg") || has_suffix(path, ".jpeg")) {
    *st = mil_image_read(path, channels, &px, &h, &w, d);
    if (*st != MIL_OK) return 1;
  } else if (has_suffix(path, ".npy")) {
    bool handled;
    px = npy_pixels(path, &h, &w, &c, &handled, st, d);
    if (!handled) return 0; /* a tensor .npy: read as a tensor */
    if (*st != MIL_OK) return 1;
  } else {
    return 0;
  }
  *st = mil_image_size_check(f, name, w, h, d);
  int64_t shape[4] = {1, channels, h, w};
  if (*st == MIL_OK) *st = cli_tensor_alloc(MIL_DT_FP32, 4, shape, out, d);
  if (*st == MIL_OK) *st = mil_image_planes(f, px, h, w, c, out->buf, d);
  if (*st == MIL_OK && want && want->kind == MIL_TYPE_TENSOR && want->dtype == MIL_DT_FP16) {
    /* GRAYSCALE_FLOAT16: the pixels as fp16 */
    cli_tensor h16;
    *st = cli_tensor_alloc(MIL_DT_FP16, 4, shape, &h16, d);
    for (int64_t i = 0; *st == MIL_OK && i < out->t.numel; i++)
      ((uint16_t *)h16.buf)[i] = mil_fp32_to_fp16(((float *)out->buf)[i]);
    cli_tensor_free(out);
    if (*st == MIL_OK) {
      *out = h16;
      out->t.shape = out->shape;
    }
  }
  if (*st != MIL_OK) cli_tensor_free(out);
  free(px);
  return 1;
}
