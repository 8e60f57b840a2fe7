/* libmil: compile-time values (MIL.proto Value: immediate tensors, lists,
 * tuples, dictionaries, and blob-file references).
 *
 * A value is immutable once built and owned by a program (its arena), except
 * that its tensor bytes may be a borrowed view into a memory-mapped weight
 * file that outlives the program's use of it (see blob.h: the weight file must stay open while views of it are in use). Passes that change
 * a weight build a new value; they never write through a view.
 *
 * In-memory tensor layout (row-major, C order), by dtype:
 *   bool            1 byte per element, 0 or 1
 *   fp16 / bf16     uint16_t bit patterns
 *   fp8 e4m3/e5m2   uint8_t bit patterns
 *   int8..int64, uint8..uint64, fp32, fp64, complex64 (2 floats), complex128
 *                   native little-endian
 *   int4, uint1/2/3/4/6
 *                   bit-packed LSB-first exactly as in weight.bin (formats.md
 *                   section 4.4): element i occupies stream bits [i*b, (i+1)*b)
 *   string          array of numel NUL-terminated `const char *`
 */
#ifndef MIL_VALUE_H
#define MIL_VALUE_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mil_program mil_program;

typedef enum mil_value_kind {
  MIL_VAL_TENSOR = 0, /* tensor or scalar, including strings */
  MIL_VAL_LIST = 1,
  MIL_VAL_TUPLE = 2,
  MIL_VAL_DICT = 3,
} mil_value_kind;

typedef enum mil_storage {
  MIL_STORE_ARENA = 0, /* bytes owned by the program arena */
  MIL_STORE_VIEW = 1,  /* borrowed bytes (memory-mapped weight file, caller buffer) */
} mil_storage;

typedef struct mil_value mil_value;
struct mil_value {
  mil_value_kind kind;
  const mil_type *type; /* TENSOR: static tensor type; LIST/TUPLE/DICT: the container type (may be NULL) */
  /* TENSOR */
  /* private: the bytes, or NULL while the value is deferred (computed from
   * another value when first needed); read them through mil_value_data */
  const void *raw;
  size_t nbytes;
  int64_t numel;
  mil_storage storage;
  /* Where the bytes came from when loaded from a weight file (blob_file
   * interned, e.g. "@model_path/weights/weight.bin"; blob_offset = offset of
   * the blob's metadata record). NULL when immediate. */
  const char *blob_file;
  uint64_t blob_offset;
  /* The bytes lie in a read-only mapping of a weight file: their pages may
   * be dropped from memory at any time (mil_value_release_pages) and are
   * read back from the file on the next access. */
  bool file_mapped;
  /* The bytes are borrowed from memory that stays unchanged as long as the
   * program lives (an ONNX model's decoded raw_data, which the program
   * keeps): as for file_mapped, casts and transposes of a large weight may
   * be deferred to its readers, but its pages are never dropped. */
  bool stable_view;
  /* A scalar bool that PyMIL holds as a Python bool rather than a numpy
   * bool: one written in MIL text (what PyMIL printed from a builder
   * argument or a default input). Values read from a model protobuf
   * (coremltools' milproto loader makes np.bool_) or computed by value
   * inference are numpy ones. coremltools' const_deduplication never merges
   * Python bools (isinstance(val, bool)) but merges numpy ones like any
   * value when const_threshold <= 1. */
  bool py_bool;
  struct ir_big *big; /* private: the program's large-buffer record holding the bytes, or NULL */
  /* private: for an fp32 value cast from fp16, that fp16 value; casting it
   * back to fp16 gives those very bytes, so the cast shares the value */
  const mil_value *widened_from;
  /* private: a deferred value's recipe (mil_value_new_deferred_cast), or NULL */
  const struct ir_deferred *deferred;
  /* LIST / TUPLE / DICT: n items (DICT: keys[i] -> items[i]) */
  int32_t n;
  const mil_value *const *items;
  const mil_value *const *keys;
};

/* Creates a tensor value of the given dtype and shape (rank 0 with
 * is_scalar=true makes a scalar). When `data` is non-NULL its bytes (layout
 * above; for STRING an array of numel char pointers) are copied into the
 * arena; when NULL the bytes are zeroed and may be written through
 * mil_value_data_mut before the value is shared. Returns NULL on allocation
 * failure or an invalid dtype. */
MIL_API mil_value *mil_value_new_tensor(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape,
                                        bool is_scalar, const void *data);
/* Like mil_value_new_tensor with data NULL, but the bytes are left
 * unspecified (large buffers are not zeroed first): for producers that
 * write every byte through mil_value_data_mut, such as a cast of a weight.
 * NULL for STRING (whose elements must be set) and as above. */
MIL_API mil_value *mil_value_new_tensor_uninit(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape,
                                               bool is_scalar);
/* A tensor value whose bytes are borrowed (not copied); the caller keeps
 * `data` alive and unchanged as long as the program uses the value. */
MIL_API mil_value *mil_value_new_view(mil_program *p, mil_dtype dt, int32_t rank, const int64_t *shape,
                                      const void *data, size_t nbytes);
/* Scalar helpers. */
MIL_API mil_value *mil_value_new_scalar_f64(mil_program *p, mil_dtype dt, double v);
MIL_API mil_value *mil_value_new_scalar_i64(mil_program *p, mil_dtype dt, int64_t v);
MIL_API mil_value *mil_value_new_bool(mil_program *p, bool v);
MIL_API mil_value *mil_value_new_string(mil_program *p, const char *s);
/* Containers (items are referenced, not copied). */
MIL_API mil_value *mil_value_new_list(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *items);
MIL_API mil_value *mil_value_new_tuple(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *items);
MIL_API mil_value *mil_value_new_dict(mil_program *p, const mil_type *type, int32_t n, const mil_value *const *keys,
                                      const mil_value *const *items);

/* The bytes of a tensor value (layout above; nbytes of them). A deferred
 * value (mil_value_is_deferred) is computed here on first use and keeps
 * its bytes from then on, in a large buffer of its program. Returns NULL
 * for a value with no elements, for a non-tensor, and when the bytes of a
 * deferred value cannot be allocated. */
MIL_API const void *mil_value_data(const mil_value *v);
/* Whether v's bytes are not computed yet (they will be by mil_value_data,
 * or piecewise, without being kept, by mil_value_read). */
MIL_API bool mil_value_is_deferred(const mil_value *v);
/* Copies bytes [offset, offset + n) of tensor value v to dst; a deferred
 * value computes just those bytes (it stays deferred), so a writer can
 * stream a large deferred value through a small buffer. Returns false when
 * the range does not lie inside the value's nbytes (or v is not a tensor
 * with bytes). */
MIL_API bool mil_value_read(const mil_value *v, size_t offset, size_t n, void *dst);
/* A deferred cast of an fp32 or fp16 tensor `src` to `to` (fp16 from fp32,
 * round to nearest even as numpy's astype and the cast op; fp32 from a
 * deferred fp16 value, exact). `src` is a tensor whose bytes stay valid
 * while the program lives (a weight-file view or a value of the program),
 * or a deferred value: the recipes compose, so a weight cast, transposed
 * and cast again is still read straight from the weight file. Nothing is
 * converted now: readers get the bytes through mil_value_data /
 * mil_value_read, and the weight writer streams them, so a weight cast to
 * fp16 need never be resident whole. NULL when the cast is not one of
 * these or on allocation failure (the caller then computes it). Mirrors
 * the value coremltools' cast value inference computes. */
MIL_API mil_value *mil_value_new_deferred_cast(mil_program *p, const mil_value *src, mil_dtype to);
/* A deferred transpose (np.transpose(src, perm)) of an fp32 or fp16 tensor
 * (bytes as for mil_value_new_deferred_cast, or deferred) whose perm,
 * leaving out axes of size 1, moves a leading run of axes behind the rest:
 * a matrix transpose of src seen as rows x columns, as every transposed
 * weight is. NULL for other perms, when src is itself transposed along
 * another split, and when src is a deferred scaling. */
MIL_API mil_value *mil_value_new_deferred_transpose(mil_program *p, const mil_value *src, int32_t rank,
                                                    const int64_t *perm);
/* Which factor scales each element of a weight (mil_value_new_deferred_scale):
 * the elements, row-major, form runs of `run` consecutive elements, and run
 * r takes factor (r % period) * mult + (r / period) / div. A conv weight
 * (Cout, Cin/groups, *K) scaled per output channel is run = Cin/groups * K,
 * period = Cout, mult = 1, div = 1; a conv_transpose weight (Cin,
 * Cout/groups, *K), per row of coremltools' transpose + reshape to (Cout,
 * Cin/groups, *K), is run = K, period = Cout/groups, mult = groups,
 * div = Cin/groups; one factor for all is run = numel, period = 1, mult = 0,
 * div = 1. */
typedef struct mil_scale_map {
  int64_t run, period, mult, div;
} mil_scale_map;
/* A deferred per-channel scaling of an fp32 or fp16 tensor `src` (bytes not
 * deferred: a weight-file view or a computed value of the program): element
 * e becomes numpy's `(src[e] * f).astype(src.dtype)` with f =
 * factors[index of e's run, see mil_scale_map], the product computed in
 * dtype `product` (fp32 or fp64 for fp32 src; fp16, fp32 or fp64 for fp16
 * src; every factor must be a value of that dtype) and rounded to src's
 * dtype. The value has src's dtype and shape; the factors are copied.
 * Nothing is computed now: readers get the bytes through mil_value_data /
 * mil_value_read (a few elements at a time, vector loops), a deferred cast
 * to fp16 composes with it, so the weight writer streams the scaled fp16
 * weight straight from the source. NULL when src is deferred or of another
 * dtype, the product dtype does not fit, the map is malformed (run not
 * dividing numel, period or div below 1) or asks for a factor index >=
 * n_factors, or on allocation failure (the caller then computes it).
 * Mirrors the per-channel weight products of coremltools'
 * fuse_conv_batchnorm / fuse_conv_scale (passes/defs/optimize_conv.py). */
MIL_API mil_value *mil_value_new_deferred_scale(mil_program *p, const mil_value *src, const mil_scale_map *map,
                                                const double *factors, int64_t n_factors, mil_dtype product);
/* A deferred rank-1 value of the elements of an fp32 or fp16 tensor `src`
 * (bytes not deferred, valid while the program lives: a weight-file view
 * or a value of the program) whose bit is set in `mask` (uint8 packbits or
 * uint1, LSB first, one bit per element of src, ceil(numel / 8) bytes; a
 * value of the program, which the result keeps alive), in row-major
 * order: constexpr_sparse_to_dense's nonzero_data. nnz must be the number
 * of set bits. Nothing is gathered now: readers get the bytes through
 * mil_value_data / mil_value_read and the weight writer streams them
 * through its buffer, so pruning a weight never holds its nonzero data
 * whole. NULL when the dtypes, sizes or count do not fit or on allocation
 * failure (the caller then builds the value itself). */
MIL_API mil_value *mil_value_new_deferred_masked(mil_program *p, const mil_value *src, const mil_value *mask,
                                                 int64_t nnz);
/* Whether deferred value v holds exactly its source's elements, only
 * reordered or reshaped (a deferred transpose without a conversion):
 * order-free facts of its elements (largest magnitude, any NaN) are the
 * source's. false when v is not deferred. */
MIL_API bool mil_value_deferred_is_permutation(const mil_value *v);
/* Whether deferred fp32 value v holds its source's elements rounded to
 * fp16 and widened back (a deferred cast fp32 -> fp16 -> fp32, in some
 * order): elements within fp16's range stay within it. false when v is
 * not deferred. */
MIL_API bool mil_value_deferred_is_fp16_rounding(const mil_value *v);
/* The value a deferred value is computed from (NULL when v is not deferred). */
MIL_API const mil_value *mil_value_deferred_source(const mil_value *v);

/* Writable bytes of a value being built (ARENA storage only; NULL for views). */
MIL_API void *mil_value_data_mut(mil_value *v);
/* A hint after reading all of a large value that views a weight-file
 * mapping (file_mapped): drops the value's whole pages from the process's
 * resident memory, so that streaming through gigabytes of weights does not
 * keep them all resident. The bytes stay valid (they are read back from the
 * file when touched again). Does nothing for other values or below 64 KiB. */
MIL_API void mil_value_release_pages(const mil_value *v);
/* The same for bytes [offset, offset + nbytes) of the value only (whole
 * pages inside that range), for readers that stream through a weight in
 * pieces. */
MIL_API void mil_value_release_range(const mil_value *v, size_t offset, size_t nbytes);

/* Element access for tensor values, any numeric/bool dtype (sub-byte
 * unpacked, fp16/bf16/fp8 widened). Index is the flat row-major index;
 * out-of-range indices are a programming error (asserted). */
MIL_API double mil_value_get_f64(const mil_value *v, int64_t i);
MIL_API int64_t mil_value_get_i64(const mil_value *v, int64_t i);
/* String element i (STRING dtype). */
MIL_API const char *mil_value_get_str(const mil_value *v, int64_t i);
/* Stores element i of a value under construction, converting from double /
 * int64 to the value's dtype (round to nearest even for floats; integer
 * types wrap like a C cast; sub-byte types are masked). */
MIL_API void mil_value_set_f64(mil_value *v, int64_t i, double x);
MIL_API void mil_value_set_i64(mil_value *v, int64_t i, int64_t x);

/* Exact equality: same kind, dtype, shape and bytes (strings by content). */
MIL_API bool mil_value_equal(const mil_value *a, const mil_value *b);
/* 64-bit hash consistent with mil_value_equal. */
MIL_API uint64_t mil_value_hash(const mil_value *v);

/* Sub-byte bit-stream helpers (LSB-first, formats.md 4.4). `bits` is 1..8. */
MIL_API uint32_t mil_bits_get(const uint8_t *stream, int64_t i, int bits);
MIL_API void mil_bits_set(uint8_t *stream, int64_t i, int bits, uint32_t v);
/* The number of set bits among stream bits [0, nbits) (a packbits or uint1
 * mask's ones), read 64 bits at a time. */
MIL_API int64_t mil_bits_count(const uint8_t *stream, int64_t nbits);
/* Bytes needed to store n elements of dt (sub-byte: ceil(n*bits/8)). */
MIL_API size_t mil_dtype_storage_bytes(mil_dtype dt, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
