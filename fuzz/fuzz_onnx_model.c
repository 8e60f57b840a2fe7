/* Fuzz target: the input bytes are a serialized ONNX ModelProto, imported
 * with mil_onnx_import_buffer (no directory: external data is refused
 * without touching the file system; no pipeline, so each input exercises
 * the importer itself). An accepted model must pass mil_program_validate
 * and serialize as a Core ML model. Any crash or sanitizer report is a bug. */
#include <stdint.h>
#include <stdlib.h>

#include "mil/model.h"
#include "mil/onnx.h"
#include "mil/ops.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mil_diag d = {0};
  d.max_msgs = 4;
  mil_onnx_options o = {0};
  mil_model *m = NULL;
  if (mil_onnx_import_buffer(data, size, "fuzz.onnx", NULL, &o, &m, &d) == MIL_OK) {
    if (mil_program_validate(mil_model_program(m), &d) != MIL_OK) abort();
    void *buf = NULL;
    size_t len = 0;
    if (mil_model_serialize(m, NULL, &buf, &len, &d) == MIL_OK) free(buf);
    mil_model_free(m);
  }
  mil_diag_clear(&d);
  return 0;
}
