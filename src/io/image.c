/* PNG and JPEG decoding (libpng's simplified API, libjpeg) and the planes
 * an image input takes (mil/image.h). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "io/fsafe.h"
#include "mil/image.h"

#define MAX_SIDE 16384
/* Fuzzing builds (fuzz/CMakeLists.txt) read at most 1 MiB of pixels: a
 * hundred-byte PNG or JPEG can claim 256 MiB of pixels, and decoding and
 * faulting in those pages, not the code under test, would take the
 * fuzzer's time. The refusal past the cap is exercised all the same. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define MAX_BYTES ((uint64_t)1 << 20)
#else
#define MAX_BYTES ((uint64_t)1 << 28)
#endif

static mil_status size_ok(const char *path, uint64_t w, uint64_t h, int c, mil_diag *d) {
  if (w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE || w * h * (uint64_t)c > MAX_BYTES)
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: an image of %llu x %llu pixels is outside what libmil reads "
                          "(1 to %d pixels a side, %llu MiB in all)", path, (unsigned long long)w,
                          (unsigned long long)h, MAX_SIDE, (unsigned long long)(MAX_BYTES >> 20));
  return MIL_OK;
}

static mil_status read_png(const char *path, FILE *f, int channels, uint8_t **px, int64_t *h, int64_t *w,
                           mil_diag *d) {
  png_image im;
  memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_stdio(&im, f))
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: not a readable PNG (%s)", path, im.message);
  mil_status st = size_ok(path, im.width, im.height, channels, d);
  if (st != MIL_OK) {
    png_image_free(&im);
    return st;
  }
  im.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  size_t n = PNG_IMAGE_SIZE(im);
  uint8_t *buf = malloc(n);
  png_color black = {0, 0, 0};
  if (!buf) {
    png_image_free(&im);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory for %zu bytes of pixels", path, n);
  }
  if (!png_image_finish_read(&im, &black, buf, 0, NULL)) {
    free(buf);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: corrupt PNG (%s)", path, im.message);
  }
  *px = buf;
  *h = im.height;
  *w = im.width;
  return MIL_OK;
}

typedef struct jerr {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
} jerr;

static void jpeg_fail(j_common_ptr cinfo) {
  jerr *e = (jerr *)cinfo->err;
  (*cinfo->err->format_message)(cinfo, e->msg);
  longjmp(e->jb, 1);
}

/* Warnings are quiet, except a premature end of the data: a truncated
 * file is refused (as PIL refuses one, "image file is truncated") instead
 * of decoded as gray rows, and its rows not read one failed read at a time
 * (a 20-byte JPEG claiming 16384 rows read the file 16384 times). */
static void jpeg_quiet(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) jpeg_fail(cinfo);
}

static mil_status read_jpeg(const char *path, FILE *f, int channels, uint8_t **px, int64_t *h, int64_t *w,
                            mil_diag *d) {
  struct jpeg_decompress_struct ci;
  jerr e;
  uint8_t *volatile buf = NULL;
  ci.err = jpeg_std_error(&e.pub);
  e.pub.error_exit = jpeg_fail;
  e.pub.emit_message = jpeg_quiet;
  if (setjmp(e.jb)) {
    jpeg_destroy_decompress(&ci);
    free(buf);
    return mil_diag_error(d, MIL_ERR_FORMAT, "%s: corrupt JPEG (%s)", path, e.msg);
  }
  jpeg_create_decompress(&ci);
  jpeg_stdio_src(&ci, f);
  jpeg_read_header(&ci, TRUE);
  ci.out_color_space = channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
  mil_status st = size_ok(path, ci.image_width, ci.image_height, channels, d);
  if (st != MIL_OK) {
    jpeg_destroy_decompress(&ci);
    return st;
  }
  jpeg_start_decompress(&ci);
  size_t row = (size_t)ci.output_width * (size_t)ci.output_components;
  buf = malloc(row * ci.output_height);
  if (!buf) {
    jpeg_destroy_decompress(&ci);
    return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory for the pixels", path);
  }
  while (ci.output_scanline < ci.output_height) {
    JSAMPROW r = buf + row * ci.output_scanline;
    jpeg_read_scanlines(&ci, &r, 1);
  }
  *h = ci.output_height;
  *w = ci.output_width;
  jpeg_finish_decompress(&ci);
  jpeg_destroy_decompress(&ci);
  *px = buf;
  return MIL_OK;
}

mil_status mil_image_read(const char *path, int channels, uint8_t **pixels, int64_t *h, int64_t *w, mil_diag *d) {
  *pixels = NULL;
  if (channels != 1 && channels != 3)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: images are read with 1 or 3 channels, not %d", path, channels);
  mil_status st;
  int fd = io_fs_open_regular(path, NULL, "image", NULL, &st, d);
  if (fd < 0) return st;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    close(fd);
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot read the image", path);
  }
  unsigned char sig[8] = {0};
  size_t n = fread(sig, 1, sizeof sig, f);
  rewind(f);
  if (n == 8 && !png_sig_cmp(sig, 0, 8)) st = read_png(path, f, channels, pixels, h, w, d);
  else if (n >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF) st = read_jpeg(path, f, channels, pixels, h, w, d);
  else st = mil_diag_error(d, MIL_ERR_FORMAT, "%s: neither a PNG nor a JPEG image", path);
  fclose(f);
  return st;
}

int mil_image_channels(const mil_feature *f) {
  return f->color_space == MIL_COLOR_GRAYSCALE || f->color_space == MIL_COLOR_GRAYSCALE_FLOAT16 ? 1 : 3;
}

static bool in_range(mil_size_range r, int64_t v) {
  return v >= (int64_t)r.lower && (r.upper < 0 || v <= r.upper);
}

mil_status mil_image_size_check(const mil_feature *f, const char *input, int64_t w, int64_t h, mil_diag *d) {
  if (f->n_image_sizes > 0) {
    for (int32_t i = 0; i < f->n_image_sizes; i++)
      if ((int64_t)f->image_sizes[2 * i] == w && (int64_t)f->image_sizes[2 * i + 1] == h) return MIL_OK;
    char allowed[512];
    size_t k = 0;
    for (int32_t i = 0; i < f->n_image_sizes && k + 32 < sizeof allowed; i++)
      k += (size_t)snprintf(allowed + k, sizeof allowed - k, "%s%llux%llu", i ? ", " : "",
                            (unsigned long long)f->image_sizes[2 * i], (unsigned long long)f->image_sizes[2 * i + 1]);
    return mil_diag_error(d, MIL_ERR_INVALID, "input '%s': an image of %lldx%lld (width x height); the model takes "
                          "%s", input, (long long)w, (long long)h, allowed);
  }
  if (f->has_image_range) {
    if (in_range(f->width_range, w) && in_range(f->height_range, h)) return MIL_OK;
    return mil_diag_error(d, MIL_ERR_INVALID, "input '%s': an image of %lldx%lld (width x height); the model takes "
                          "widths %llu..%lld and heights %llu..%lld (-1: unbounded)", input, (long long)w,
                          (long long)h, (unsigned long long)f->width_range.lower, (long long)f->width_range.upper,
                          (unsigned long long)f->height_range.lower, (long long)f->height_range.upper);
  }
  if (w == f->width && h == f->height) return MIL_OK;
  return mil_diag_error(d, MIL_ERR_INVALID, "input '%s': an image of %lldx%lld (width x height); the model takes "
                        "%lldx%lld only", input, (long long)w, (long long)h, (long long)f->width, (long long)f->height);
}

mil_status mil_image_planes(const mil_feature *f, const uint8_t *pixels, int64_t h, int64_t w, int c, float *out,
                            mil_diag *d) {
  int want = mil_image_channels(f);
  if (c != want)
    return mil_diag_error(d, MIL_ERR_INVALID, "image feature '%s' takes %d channel(s), the pixels have %d", f->name,
                          want, c);
  int64_t plane = h * w;
  bool bgr = f->color_space == MIL_COLOR_BGR;
  for (int k = 0; k < c; k++) {
    int src = bgr ? c - 1 - k : k;
    float *o = out + (int64_t)k * plane;
    for (int64_t i = 0; i < plane; i++) o[i] = (float)pixels[i * c + src];
  }
  return MIL_OK;
}

static const mil_feature *model_image(mil_model *m, const char *function, const char *input) {
  const mil_function_desc *fd = mil_model_function_desc(m, function);
  for (int32_t i = 0; fd && input && i < fd->n_inputs; i++)
    if (!strcmp(fd->inputs[i].name, input) && fd->inputs[i].kind == MIL_FEATURE_IMAGE) return &fd->inputs[i];
  return NULL;
}

int mil_model_image_channels(mil_model *m, const char *function, const char *input) {
  const mil_feature *f = model_image(m, function, input);
  return f ? mil_image_channels(f) : 0;
}

mil_status mil_model_image_planes(mil_model *m, const char *function, const char *input, const uint8_t *pixels,
                                  int64_t h, int64_t w, int c, float *out, mil_diag *d) {
  const mil_feature *f = model_image(m, function, input);
  if (!f) return mil_diag_error(d, MIL_ERR_NOT_FOUND, "input '%s' is not an image input", input ? input : "");
  mil_status st = mil_image_size_check(f, input, w, h, d);
  return st == MIL_OK ? mil_image_planes(f, pixels, h, w, c, out, d) : st;
}
