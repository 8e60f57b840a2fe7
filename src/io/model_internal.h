/* Internal table of contents of libmil's model I/O: the protobuf reader and
 * writer (proto_*.c), the model description (model_desc.c), the package
 * layer (package.c) and the model object (model.c). Not part of the public
 * API. Everything here is hidden from the shared library's symbol table.
 *
 *   proto_check.c  wire-format checker in front of protobuf-c's unpacker
 *   proto_type.c   ValueType <-> mil_type, weight-file lookup, protobuf-c helpers
 *   proto_value.c  Value <-> mil_value
 *   proto_read.c   Model / Program protobuf -> mil_model / mil_program
 *   proto_write.c  mil_program -> Program protobuf, mil_model -> Model bytes
 *   model_desc.c   ModelDescription: decoded view, synthesis, sync, checks
 *   package.c      .mlpackage directories and Manifest.json
 *   model.c        the mil_model object, load/save dispatch, atomic writes
 */
#ifndef MIL_IO_MODEL_INTERNAL_H
#define MIL_IO_MODEL_INTERNAL_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "Model.pb-c.h"
#include "mil/blob.h"
#include "mil/ir.h"
#include "mil/model.h"

#if defined(__GNUC__)
#define IO_MODEL_HIDDEN __attribute__((visibility("hidden")))
#else
#define IO_MODEL_HIDDEN
#endif

/* Deepest message nesting accepted in a protobuf, and written: a block
 * nested MIL_MAX_BLOCK_DEPTH deep sits 5 + 2 * MIL_MAX_BLOCK_DEPTH messages
 * down (Model, MLProgram, function entry, Function, specialization entry,
 * then Operation and Block per level); 96 more leave room for an op's
 * arguments, values and types (a list type costs two levels, a nested
 * list/tuple value three). The writer refuses a model deeper than this
 * (io_proto_depth_ok), so whatever libmil writes it reads. */
#define IO_PROTO_MAX_DEPTH (5 + 2 * MIL_MAX_BLOCK_DEPTH + 96)

/* The first specification version with multi-function models (iOS18):
 * a program with several functions needs it everywhere (loading .mil,
 * mil_model_from_program, the writer, the description check). */
#define IO_SPEC_MULTI_FUNCTION 9

/* The fileName coremltools writes into every BlobFileValue. */
#define IO_BLOB_FILE_NAME "@model_path/weights/weight.bin"

/* ---- the model object (model.c) ---- */
typedef struct io_desc_view io_desc_view;

struct mil_model {
  mil_program *prog;
  int spec_version;
  bool is_updatable;
  Coreml__ModelDescription *desc; /* owned; NULL when there is none (.mil) */
  char *path;                     /* source path ("" when built in memory) */
  int32_t n_weights;
  mil_blob_file **weights;        /* one reference each */
  io_desc_view *view;             /* decoded description, built on demand */
};

/* Drops the decoded description view (after any change to m->desc). */
IO_MODEL_HIDDEN void io_model_drop_view(mil_model *m);

/* ---- proto_check.c ---- */
/* Walks a serialized message with its descriptor and reports the first
 * wire-level defect (offset, field path, expected and found); also enforces
 * IO_PROTO_MAX_DEPTH. MIL_ERR_FORMAT on any defect. */
IO_MODEL_HIDDEN mil_status io_proto_check(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                                          const char *file, mil_diag *d);
/* Whether message m nests at most `limit` messages below itself; false
 * (with the depth found, or limit + 1, in *depth) otherwise. */
IO_MODEL_HIDDEN bool io_proto_depth_ok(const ProtobufCMessage *m, int limit, int *depth);
/* io_proto_check, then protobuf-c's unpack (default allocator). NULL on
 * failure, with the message in d. Free with io_pb_free. */
IO_MODEL_HIDDEN ProtobufCMessage *io_proto_unpack(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                                                  const char *file, mil_diag *d);

/* Decoding into a bump arena: protobuf-c's unpacker makes one allocation
 * per message, field array and string (a model's tree is ten times the
 * size of its file); carving them from big chunks saves the per-allocation
 * overhead and returns the whole tree at once. Parts of a message decoded
 * in an arena must not be freed with io_pb_free: copy what outlives it. */
typedef struct io_pb_arena io_pb_arena;
IO_MODEL_HIDDEN io_pb_arena *io_pb_arena_new(void);
IO_MODEL_HIDDEN void io_pb_arena_free(io_pb_arena *ar);
/* io_proto_unpack with the tree in ar (NULL: default allocator). */
IO_MODEL_HIDDEN ProtobufCMessage *io_proto_unpack_in(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                                                     io_pb_arena *ar, const char *file, mil_diag *d);
/* A deep copy with the default allocator (free with io_pb_free); NULL for
 * NULL or out of memory. */
IO_MODEL_HIDDEN void *io_pb_clone(const void *msg);

/* Messages libmil builds (the model it saves) take every part from
 * io_wr_alloc: from the default allocator, or, while io_wr_arena is set
 * (io_model_encode builds and packs a whole program that way), from that
 * arena, whose release frees the tree at once (millions of small frees
 * cost a third of a save otherwise); io_pb_free / io_wr_free do nothing
 * then. */
IO_MODEL_HIDDEN extern _Thread_local io_pb_arena *io_wr_arena;
/* n bytes from the arena, not zeroed (NULL on OOM). */
IO_MODEL_HIDDEN void *io_pb_arena_alloc(io_pb_arena *ar, size_t n);
static inline void *io_wr_alloc(size_t n) { return io_wr_arena ? io_pb_arena_alloc(io_wr_arena, n ? n : 1) : malloc(n ? n : 1); }
static inline void *io_wr_calloc(size_t n) {
  void *p = io_wr_alloc(n);
  if (p) memset(p, 0, n ? n : 1);
  return p;
}
static inline void io_wr_free(void *p) {
  if (!io_wr_arena) free(p);
}
static inline void *io_pb_new(const ProtobufCMessageDescriptor *desc) {
  ProtobufCMessage *m = (ProtobufCMessage *)io_wr_calloc(desc->sizeof_message);
  if (m) desc->message_init(m);
  return m;
}
static inline void io_pb_free(void *m) {
  if (m && !io_wr_arena) protobuf_c_message_free_unpacked((ProtobufCMessage *)m, NULL);
}
/* Appends elem to a pointer array (*arr, *n) from io_wr_alloc. false on OOM. */
IO_MODEL_HIDDEN bool io_pb_push(void *arr_ptr, size_t *n, void *elem);
/* snprintf for the context strings of errors (formatted for every op and
 * input, most never shown): only %s and %zu. */
IO_MODEL_HIDDEN void io_say(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Copy of s from io_wr_alloc (NULL -> ""). */
IO_MODEL_HIDDEN char *io_model_strdup(const char *s);

/* ---- weight files referenced while reading (proto_type.c) ---- */
typedef struct io_weights {
  char *dir;              /* directory fileNames resolve against; NULL = none */
  char *root;             /* canonical directory weight files must lie in; NULL = anywhere */
  int32_t n, cap;
  char **names;           /* last path component of each opened file */
  mil_blob_file **files;  /* one reference each */
} io_weights;

/* root (may be NULL): the directory (canonical, io_fs_root) the files must
 * resolve into; the model's package or directory. */
IO_MODEL_HIDDEN void io_weights_init(io_weights *w, const char *dir, const char *root);
/* Closes every file still held and frees the table. */
IO_MODEL_HIDDEN void io_weights_free(io_weights *w);
/* Moves the opened files into the model (appending to m->weights). */
IO_MODEL_HIDDEN mil_status io_weights_give(io_weights *w, mil_model *m);

/* ---- reading context (proto_read.c, proto_value.c) ---- */
typedef struct io_read {
  mil_program *p;
  io_weights *w;
  const char *file; /* model file, for messages */
  mil_diag *d;
  int spec_version;
  void *priv;       /* proto_read.c's scope and name tables */
} io_read;

/* The blob file a BlobFileValue.fileName names (opened on first use, kept
 * in r->w). `where` prefixes messages. */
IO_MODEL_HIDDEN mil_status io_weights_lookup(io_read *r, const char *file_name, const char *where, mil_blob_file **out);
/* ValueType -> type. Unknown dims get fresh "is<N>" symbols (coremltools'
 * get_new_symbol); rank 0 gives a scalar. `where` prefixes messages. */
IO_MODEL_HIDDEN mil_status io_type_from_proto(io_read *r, const Milproto__ValueType *t, const char *where,
                                              const mil_type **out);
/* Value -> value: immediate tensors from every TensorValue field, lists,
 * tuples, dictionaries, and blob references (zero-copy views). */
IO_MODEL_HIDDEN mil_status io_value_from_proto(io_read *r, const Milproto__Value *v, const char *where,
                                               const mil_value **out);

/* Program -> new mil_program. */
IO_MODEL_HIDDEN mil_status io_program_from_proto(const Milproto__Program *pb, int spec_version, io_weights *w,
                                                 const char *file, mil_program **out, mil_diag *d);
/* Serialized Model -> mil_model (program, description, version). */
IO_MODEL_HIDDEN mil_status io_model_decode(const void *buf, size_t len, const char *file, io_weights *w,
                                           mil_model **out, mil_diag *d);

/* ---- writing context (proto_write.c, proto_value.c) ---- */
typedef struct io_write {
  const mil_program *p;
  int spec_version;
  mil_blob_writer *bw;  /* NULL: every const immediate */
  const char *file;     /* output file, for messages */
  const char *blob_name; /* fileName of blob references (NULL: IO_BLOB_FILE_NAME) */
  mil_diag *d;
  mil_status st;        /* first error */
  int depth;            /* nesting of the block being written (body: 0) */
  /* blobs already written for values viewing the same bytes */
  size_t n_seen, cap_seen;
  struct io_seen_blob *seen;
} io_write;

/* Records an error for a write in progress (the first status sticks in
 * w->st) and returns NULL so builders can `return io_wfail(...)`. */
void *io_wfail(io_write *w, mil_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define OOM(w) io_wfail((w), MIL_ERR_NOMEM, "%s", "")

IO_MODEL_HIDDEN Milproto__ValueType *io_type_to_proto(io_write *w, const mil_type *t, const char *where);
/* allow_blob: the value may go to the weight file (const val, constexpr
 * params) when mil_blob_should_store says so. */
IO_MODEL_HIDDEN Milproto__Value *io_value_to_proto(io_write *w, const mil_value *v, bool allow_blob,
                                                   const char *where);
IO_MODEL_HIDDEN Milproto__Value *io_string_value(const char *s);
IO_MODEL_HIDDEN void io_write_free(io_write *w);

IO_MODEL_HIDDEN Milproto__Program *io_program_to_proto(io_write *w);
/* Packs the whole Model message of m into a malloc'ed buffer. Blob
 * references name `blob_name` (NULL: IO_BLOB_FILE_NAME). */
IO_MODEL_HIDDEN mil_status io_model_encode(mil_model *m, mil_blob_writer *bw, const char *blob_name, const char *file,
                                           void **data, size_t *len, mil_diag *d);

/* ---- model_desc.c ---- */
/* A decoded view of desc (may be NULL: no functions). The view points into
 * desc, which must outlive it; `owned` (may be NULL) is a description the
 * view takes over and frees. NULL when out of memory. */
IO_MODEL_HIDDEN io_desc_view *io_desc_view_new(const Coreml__ModelDescription *desc, Coreml__ModelDescription *owned);
IO_MODEL_HIDDEN const mil_model_desc *io_desc_view_get(const io_desc_view *v);
IO_MODEL_HIDDEN void io_desc_view_free(io_desc_view *v);
/* Synthesizes a description for p (the exporter's rules); `old` (may be
 * NULL) supplies features to keep, metadata and predicted names. */
IO_MODEL_HIDDEN mil_status io_desc_synthesize(const mil_program *p, int spec_version, const Coreml__ModelDescription *old,
                                              Coreml__ModelDescription **out, mil_diag *d);
/* Model-level checks of formats.md section 8 against the program. */
/* The least specification version the description's array types need
 * (FLOAT16: 7, INT8: 10), 0 when any will do. */
IO_MODEL_HIDDEN int io_desc_min_spec(const Coreml__ModelDescription *desc);
IO_MODEL_HIDDEN mil_status io_desc_validate(const Coreml__ModelDescription *desc, const mil_program *p,
                                            int spec_version, const char *file, mil_diag *d);

/* ---- package.c ---- */
typedef struct io_package {
  char *model_path;   /* <pkg>/Data/<root item path> */
  char *weights_dir;  /* weights item directory, or NULL */
  char *root;         /* canonical path of the package (io_package_open) */
} io_package;
/* Reads and checks Manifest.json (formats.md 5.3). Every item must
 * resolve (symlinks followed) inside the package. */
IO_MODEL_HIDDEN mil_status io_package_open(const char *pkg, io_package *out, mil_diag *d);
IO_MODEL_HIDDEN void io_package_close(io_package *pk);
/* Creates the package layout in the (new, empty) directory `dir` and writes
 * Manifest.json; fills the model file path and weights directory. */
IO_MODEL_HIDDEN mil_status io_package_create(const char *dir, io_package *out, mil_diag *d);

/* ---- model.c ---- */
/* Reads a whole file (regular files only, never blocking on a FIFO; at
 * most 2 GiB). root (may be NULL): the canonical directory the file must
 * resolve into. `what` names the file in messages. */
IO_MODEL_HIDDEN mil_status io_model_read_file(const char *path, const char *root, const char *what, void **data,
                                              size_t *len, mil_diag *d);
/* Writes len bytes to path (creating/truncating it). */
IO_MODEL_HIDDEN mil_status io_model_write_file(const char *path, const void *data, size_t len, mil_diag *d);
/* Removes a file or a directory tree (best effort). */
IO_MODEL_HIDDEN void io_model_remove_tree(const char *path);
/* malloc'ed "<a>/<b>". */
IO_MODEL_HIDDEN char *io_model_path_join(const char *a, const char *b);
/* lstat succeeds / stat says directory. */
IO_MODEL_HIDDEN bool io_model_path_exists(const char *p);
IO_MODEL_HIDDEN bool io_model_path_is_dir(const char *p);
/* The extension of the last path component ("mlpackage"), or "". */
IO_MODEL_HIDDEN const char *io_model_extension(const char *path);
/* MIL_OK when every function's opset is an ML Program one (CoreML5 or
 * later); otherwise MIL_ERR_UNSUPPORTED, "<path>: writing an ML Program
 * model needs opset CoreML5 (iOS15) or later, but function 'main' has
 * CoreML3 (iOS13); retarget it ...". */
IO_MODEL_HIDDEN mil_status io_model_check_opsets(const mil_model *m, const char *path, mil_diag *d);
/* malloc'ed copy of path without trailing slashes. */
IO_MODEL_HIDDEN char *io_model_clean_path(const char *path);
/* malloc'ed directory part of path ("." when none). */
IO_MODEL_HIDDEN char *io_model_dir_of(const char *path);

/* ---- model_save.c ---- */
/* Tests only: when > 0, the n-th step of this process's saves raises
 * io_save_crash_signal (0: SIGKILL), simulating a crash or an interruption
 * between two steps of a save. */
IO_MODEL_HIDDEN extern int io_save_crash_at, io_save_crash_signal;
/* Puts tmp (a finished file, or package directory when is_dir) at path,
 * replacing what is there atomically as mil_model_save does (for the model
 * utilities' pipeline packages). */
IO_MODEL_HIDDEN mil_status io_model_replace_path(const char *tmp, const char *path, bool is_dir, mil_diag *d);

#endif
