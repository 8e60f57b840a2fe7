/* What the two config fuzz targets share: read the bytes as YAML or JSON,
 * and check an accepted config round-trips through its dictionary form. */
#ifndef MIL_FUZZ_CONFIG_H
#define MIL_FUZZ_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "mil/compress.h"
#include "mil/mil.h"

static bool fuzz_config_same(const mil_compress_config *a, const mil_compress_config *b) {
  if (!mil_op_compress_config_equal(&a->global, &b->global)) return false;
  if (a->n_op_type != b->n_op_type || a->n_op_name != b->n_op_name) return false;
  for (int32_t i = 0; i < a->n_op_type; i++)
    if (!mil_op_compress_config_equal(&a->op_type[i].cfg, &b->op_type[i].cfg)) return false;
  for (int32_t i = 0; i < a->n_op_name; i++)
    if (!mil_op_compress_config_equal(&a->op_name[i].cfg, &b->op_name[i].cfg)) return false;
  return true;
}

static void fuzz_config_one(const uint8_t *data, size_t size, bool yaml) {
  /* the first byte picks the default config type (as the CLI's and the
   * Python API's entry points pass one) */
  mil_cfg_type dt = MIL_CFG_NONE;
  if (size) {
    dt = (mil_cfg_type)(data[0] % 5);
    data++;
    size--;
  }
  mil_diag d = {0};
  d.max_msgs = 4;
  mil_compress_config *c = NULL;
  const char *text = (const char *)data;
  mil_status st = yaml ? mil_compress_config_from_yaml(text, size, "fuzz.yaml", dt, &c, &d)
                       : mil_compress_config_from_json(text, size, "fuzz.json", dt, &c, &d);
  if ((st == MIL_OK) != (c != NULL)) abort();
  if (st != MIL_OK && !mil_diag_first_error(&d)) abort();
  if (c) {
    char *j = mil_compress_config_to_json(c);
    if (!j) abort();
    mil_compress_config *c2 = NULL;
    if (mil_compress_config_from_json(j, (size_t)-1, "back", MIL_CFG_NONE, &c2, &d) != MIL_OK) abort();
    if (!fuzz_config_same(c, c2)) abort();
    mil_compress_config_free(c2);
    free(j);
    mil_compress_config_free(c);
  }
  mil_diag_clear(&d);
}

#endif
