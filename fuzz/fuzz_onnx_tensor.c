/* Fuzz target: the input bytes are a serialized TensorProto. Reads them
 * with the automatic dialect and with each explicit one (no base directory:
 * external data is refused without touching the file system); an accepted
 * tensor is written back (raw_data, or string_data for strings) in the
 * dialect it was read with and must read back with the same data type,
 * shape and bytes. The same bytes are also decoded as a TypeProto and a
 * ValueInfoProto. Any crash, sanitizer report or mismatch is a bug. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mil/ir.h"
#include "mil/onnx_tensor.h"

static void roundtrip(const mil_onnx_tensor *a, mil_diag *d) {
  if (a->nbytes > (1u << 20)) return;
  mil_onnx_write_opts wo = {a->dialect, MIL_ONNX_ENC_RAW, a->onnx_type, a->name, NULL};
  void *buf = NULL;
  size_t len = 0;
  if (mil_onnx_tensor_encode(a->dtype, a->rank, a->shape, a->data, &wo, &buf, &len, d) != MIL_OK) abort();
  mil_onnx_read_opts ro = {a->dialect, MIL_ONNX_EXACT, NULL};
  mil_onnx_tensor *b = NULL;
  if (mil_onnx_tensor_read_mem(buf, len, "back.pb", &ro, &b, d) != MIL_OK) abort();
  if (b->onnx_type != a->onnx_type || b->dtype != a->dtype || b->rank != a->rank || b->numel != a->numel) abort();
  if (a->rank && memcmp(a->shape, b->shape, (size_t)a->rank * sizeof a->shape[0]) != 0) abort();
  if (a->dtype == MIL_DT_STRING) {
    for (int64_t i = 0; i < a->numel; i++)
      if (strcmp(((const char *const *)a->data)[i], ((const char *const *)b->data)[i]) != 0) abort();
  } else if (a->nbytes && memcmp(a->data, b->data, a->nbytes) != 0) {
    abort();
  }
  mil_onnx_tensor_free(b);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mil_diag d = {0};
  d.max_msgs = 4;
  for (int dia = MIL_ONNX_DIALECT_AUTO; dia <= MIL_ONNX_DIALECT_ND4J; dia++) {
    mil_onnx_read_opts ro = {(mil_onnx_dialect)dia, MIL_ONNX_EXACT, NULL};
    mil_onnx_tensor *t = NULL;
    if (mil_onnx_tensor_read_mem(data, size, "fuzz.pb", &ro, &t, &d) == MIL_OK) {
      roundtrip(t, &d);
      mil_program *p = mil_program_new(NULL);
      if (p && t->nbytes <= (1u << 20) && !mil_onnx_tensor_to_value(p, t)) abort();
      mil_program_free(p);
      mil_onnx_tensor_free(t);
    }
    mil_diag_clear(&d);
    ro.flags = MIL_ONNX_CLAMP; /* the narrowing path */
    if (mil_onnx_tensor_read_mem(data, size, "fuzz.pb", &ro, &t, &d) == MIL_OK) mil_onnx_tensor_free(t);
    mil_diag_clear(&d);
  }
  mil_program *p = mil_program_new(NULL);
  if (p) {
    const mil_type *ty = NULL;
    const char *name = NULL;
    if (mil_onnx_type_decode(p, data, size, 0, "fuzz.pb", &ty, &d) == MIL_OK) {
      void *buf = NULL;
      size_t len = 0;
      if (mil_onnx_type_encode(ty, MIL_ONNX_DIALECT_ONNX, &buf, &len, &d) == MIL_OK) free(buf);
    }
    mil_diag_clear(&d);
    (void)mil_onnx_value_info_decode(p, data, size, 0, "fuzz.pb", &name, &ty, &d);
    mil_diag_clear(&d);
    mil_program_free(p);
  }
  return 0;
}
