/* libmil: NumPy .npy files (format versions 1.0, 2.0 and 3.0).
 *
 * Mirrors numpy/lib/format.py (read_array_header_{1,2}_0, write_array):
 *
 *   "\x93NUMPY" major minor   magic and version (1.0, 2.0 or 3.0)
 *   header_len                u16 (1.0) or u32 (2.0, 3.0), little-endian
 *   header                    a Python dict literal, e.g.
 *                             {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }
 *                             padded with spaces and ended by '\n'
 *   data                      the elements in C order
 *
 * Supported element types (descr): '<f2' fp16, '<f4' fp32, '<f8' fp64,
 * '|i1' int8, '<i2' int16, '<i4' int32, '<i8' int64, '|u1' uint8,
 * '<u2' uint16, '<u4' uint32, '<u8' uint64, '|b1' bool. Byte order '<' and
 * '|' (and '=', native, on little-endian hosts) are read; big-endian ('>')
 * and Fortran order are refused as unsupported. Data is returned in
 * libmil's in-memory layout (value.h): fp16 as uint16_t bit patterns, bool
 * as one byte 0 or 1.
 */
#ifndef MIL_NPY_H
#define MIL_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* numpy's own limit on the number of dimensions (NPY_MAXDIMS, numpy 1.x). */
#define MIL_NPY_MAX_RANK 32

/* An array read from a .npy file. Owns `data`; free with mil_npy_free. */
typedef struct mil_npy {
  mil_dtype dtype;
  int rank;                         /* 0 for a scalar array */
  int64_t shape[MIL_NPY_MAX_RANK];  /* rank entries, each >= 0 */
  int64_t numel;                    /* product of shape (1 for rank 0) */
  void *data;                       /* numel elements, C order; NULL when numel == 0 */
  size_t nbytes;                    /* numel * element size */
  int version_major, version_minor; /* format version of the file */
} mil_npy;

/* Reads the .npy file at `path`. On success *out is a new array (release
 * with mil_npy_free). Trailing bytes after the data are ignored with a
 * warning, as numpy ignores them. Errors (messages name the file, the byte
 * offset, what was expected and what was found):
 *   MIL_ERR_IO          cannot open or read the file
 *   MIL_ERR_FORMAT      bad magic, unknown version, truncated header,
 *                       header not a dict literal, missing / unknown /
 *                       duplicate keys, bad shape, data shorter than the
 *                       shape says, shape whose byte size overflows
 *   MIL_ERR_UNSUPPORTED descr not in the list above (incl. structured
 *                       dtypes), big-endian byte order, fortran_order True
 *   MIL_ERR_NOMEM, MIL_ERR_INVALID (NULL arguments) */
MIL_API mil_status mil_npy_read(const char *path, mil_npy **out, mil_diag *d);

/* Same as mil_npy_read for an in-memory image of a file of `len` bytes.
 * `name` (may be NULL: "<memory>") is used in messages. The data is copied. */
MIL_API mil_status mil_npy_read_mem(const void *buf, size_t len, const char *name, mil_npy **out, mil_diag *d);

/* Frees an array from mil_npy_read / mil_npy_read_mem. NULL is ignored. */
MIL_API void mil_npy_free(mil_npy *a);

/* Writes a C-order array as a version 1.0 .npy file (2.0 only if the
 * header would not fit, which cannot happen below MIL_NPY_MAX_RANK dims),
 * byte for byte as numpy.save does, including numpy's header padding. The
 * file is written to a temporary sibling and renamed over `path`; on
 * failure no temporary file is left behind and `path` is untouched.
 * `data` holds product(shape) elements in libmil's in-memory layout (may be
 * NULL when that product is 0); `shape` may be NULL when rank is 0.
 * Supported dtypes: the twelve listed above.
 * Errors: MIL_ERR_UNSUPPORTED (other dtypes), MIL_ERR_INVALID (rank outside
 * 0..MIL_NPY_MAX_RANK, negative dim, size overflow, NULL arguments),
 * MIL_ERR_IO (create, write, close or rename failed), MIL_ERR_NOMEM. */
MIL_API mil_status mil_npy_write(const char *path, mil_dtype dt, int rank, const int64_t *shape, const void *data,
                                 mil_diag *d);

/* The numpy descr string libmil writes for dt ("<f4", "|u1", ...), or NULL
 * when dt has no .npy representation here. */
MIL_API const char *mil_npy_descr(mil_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
