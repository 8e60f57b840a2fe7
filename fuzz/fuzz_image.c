/* Fuzz target: the input bytes are a picture file (PNG, JPEG or anything)
 * for an image input (mil_image_read, with 3 and with 1 channels). A decoded
 * image must have a size within the reader's limits (1 MiB of pixels in
 * fuzzing builds, src/io/image.c) and its planes must be
 * computable for an RGB and a BGR feature of that size. Any crash, hang,
 * sanitizer report or inconsistency is a bug. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mil/image.h"

static char g_path[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_path[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/fuzz_image_%ld.img", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  }
  FILE *f = fopen(g_path, "wb");
  if (!f) return 0;
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
  for (int channels = 1; channels <= 3; channels += 2) {
    mil_diag d = {0};
    d.max_msgs = 4;
    uint8_t *px = NULL;
    int64_t h = 0, w = 0;
    if (mil_image_read(g_path, channels, &px, &h, &w, &d) == MIL_OK) {
      if (!px || h <= 0 || w <= 0 || h > 16384 || w > 16384) abort();
      if (h * w <= (1 << 16)) { /* the planes of larger images take the same loops, per pixel */
        mil_feature feat;
        memset(&feat, 0, sizeof feat);
        feat.name = "image";
        feat.short_description = "";
        feat.kind = MIL_FEATURE_IMAGE;
        feat.width = w;
        feat.height = h;
        feat.color_space = channels == 3 ? MIL_COLOR_BGR : MIL_COLOR_GRAYSCALE;
        float *planes = malloc((size_t)(h * w * channels) * sizeof *planes);
        if (!planes) abort();
        if (mil_image_size_check(&feat, "image", w, h, &d) != MIL_OK) abort();
        if (mil_image_planes(&feat, px, h, w, channels, planes, &d) != MIL_OK) abort();
        free(planes);
      }
      free(px);
    } else if (px) {
      abort();
    }
    mil_diag_clear(&d);
  }
  unlink(g_path);
  return 0;
}
