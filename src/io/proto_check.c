/* A protobuf wire-format checker driven by protoc-c's message descriptors.
 *
 * protobuf-c's unpacker only says "failed". Before unpacking a model, libmil
 * walks the bytes once with the schema at hand and reports the first defect
 * precisely: the byte offset, the path of fields from the root message
 * ("Model.mlProgram > Program.functions > ..."), and what was expected and
 * found (a truncated varint, a length running past the end of its parent, a
 * wire type that does not match the field's declared type, a packed array
 * that is not a whole number of elements, a deprecated group). The walk also
 * caps message nesting, which keeps protobuf-c's recursive unpacker (and
 * libmil's converters, which recurse no deeper than the message nesting) from
 * exhausting the stack on hostile input.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/model_internal.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

typedef struct frame {
  const ProtobufCMessageDescriptor *desc;
  const ProtobufCFieldDescriptor *field; /* field of the parent that holds this message */
} frame;

typedef struct checker {
  const uint8_t *buf;
  const char *file;
  mil_diag *d;
  frame stack[IO_PROTO_MAX_DEPTH + 1];
  int depth;
} checker;

static const char *wire_name(int wt) {
  switch (wt) {
  case WT_VARINT: return "0 (varint)";
  case WT_I64: return "1 (64-bit)";
  case WT_LEN: return "2 (length-delimited)";
  case WT_SGROUP: return "3 (start group)";
  case WT_EGROUP: return "4 (end group)";
  case WT_I32: return "5 (32-bit)";
  default: return "6/7 (invalid)";
  }
}

/* Short message name: the part after the package ("milproto.Program" -> "Program"). */
static const char *short_name(const ProtobufCMessageDescriptor *d) {
  const char *n = d->name ? d->name : "?";
  return n;
}

/* "Model.mlProgram(502) > Program.functions(2) > ..." for the current stack. */
static void path_str(const checker *c, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int i = 1; i <= c->depth && len + 1 < cap; i++) {
    const frame *parent = &c->stack[i - 1];
    int n = snprintf(out + len, cap - len, "%s%s.%s(%u)", i > 1 ? " > " : "", short_name(parent->desc),
                     c->stack[i].field->name, (unsigned)c->stack[i].field->id);
    if (n < 0) break;
    len += (size_t)n;
    if (len >= cap) {
      len = cap - 1;
      break;
    }
  }
  if (len == 0) snprintf(out, cap, "%s", short_name(c->stack[0].desc));
}

static mil_status fail(checker *c, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static mil_status fail(checker *c, size_t off, const char *fmt, ...) {
  char path[512], what[256];
  path_str(c, path, sizeof path);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return mil_diag_error(c->d, MIL_ERR_FORMAT, "%s: byte %zu: in %s: %s", c->file, off, path, what);
}

/* Reads a varint at *pos (< end). Returns 0 on success, 1 when truncated, 2 when longer than 10 bytes. */
static int read_varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *out) {
  uint64_t v = 0;
  for (int i = 0; i < 10; i++) {
    if (*pos >= end) return 1;
    uint8_t b = buf[(*pos)++];
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *out = v;
      return 0;
    }
  }
  return 2;
}

/* The wire type the field's declared type uses when not packed. */
static int natural_wire_type(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_BOOL:
  case PROTOBUF_C_TYPE_ENUM: return WT_VARINT;
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_FLOAT: return WT_I32;
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE: return WT_I64;
  default: return WT_LEN; /* string, bytes, message */
  }
}

static const char *type_name(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32: return "int32";
  case PROTOBUF_C_TYPE_SINT32: return "sint32";
  case PROTOBUF_C_TYPE_SFIXED32: return "sfixed32";
  case PROTOBUF_C_TYPE_INT64: return "int64";
  case PROTOBUF_C_TYPE_SINT64: return "sint64";
  case PROTOBUF_C_TYPE_SFIXED64: return "sfixed64";
  case PROTOBUF_C_TYPE_UINT32: return "uint32";
  case PROTOBUF_C_TYPE_FIXED32: return "fixed32";
  case PROTOBUF_C_TYPE_UINT64: return "uint64";
  case PROTOBUF_C_TYPE_FIXED64: return "fixed64";
  case PROTOBUF_C_TYPE_FLOAT: return "float";
  case PROTOBUF_C_TYPE_DOUBLE: return "double";
  case PROTOBUF_C_TYPE_BOOL: return "bool";
  case PROTOBUF_C_TYPE_ENUM: return "enum";
  case PROTOBUF_C_TYPE_STRING: return "string";
  case PROTOBUF_C_TYPE_BYTES: return "bytes";
  case PROTOBUF_C_TYPE_MESSAGE: return "message";
  }
  return "?";
}

static mil_status check_message(checker *c, size_t pos, size_t end);

/* Checks a packed repeated payload [pos, end) of scalars with wire type wt. */
static mil_status check_packed(checker *c, const ProtobufCFieldDescriptor *f, int wt, size_t pos, size_t end) {
  size_t n = end - pos;
  if ((wt == WT_I32 && n % 4) || (wt == WT_I64 && n % 8))
    return fail(c, pos, "packed field '%s' (%u, %s) holds %zu bytes, not a multiple of %d", f->name, (unsigned)f->id,
                type_name(f->type), n, wt == WT_I32 ? 4 : 8);
  if (wt == WT_VARINT) {
    while (pos < end) {
      uint64_t v;
      size_t at = pos;
      int r = read_varint(c->buf, &pos, end, &v);
      if (r)
        return fail(c, at, "%s varint in packed field '%s' (%u)", r == 1 ? "truncated" : "over-long", f->name,
                    (unsigned)f->id);
    }
  }
  return MIL_OK;
}

static mil_status check_field(checker *c, const ProtobufCFieldDescriptor *f, int wt, size_t tag_at, size_t *pos,
                              size_t end) {
  int want = natural_wire_type(f->type);
  bool packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && want != WT_LEN;
  if (wt != want && !(packed_ok && wt == WT_LEN))
    return fail(c, tag_at, "field '%s' (%u, %s) has wire type %s, expected %s", f->name, (unsigned)f->id,
                type_name(f->type), wire_name(wt), wire_name(want));
  if (wt == WT_VARINT) {
    uint64_t v;
    size_t at = *pos;
    int r = read_varint(c->buf, pos, end, &v);
    if (r)
      return fail(c, at, "%s varint value of field '%s' (%u)", r == 1 ? "truncated" : "over-long", f->name,
                  (unsigned)f->id);
    return MIL_OK;
  }
  if (wt == WT_I32 || wt == WT_I64) {
    size_t need = wt == WT_I32 ? 4 : 8;
    if (end - *pos < need)
      return fail(c, *pos, "truncated %zu-byte value of field '%s' (%u): %zu bytes left", need, f->name,
                  (unsigned)f->id, end - *pos);
    *pos += need;
    return MIL_OK;
  }
  /* length-delimited */
  uint64_t len;
  size_t at = *pos;
  int r = read_varint(c->buf, pos, end, &len);
  if (r)
    return fail(c, at, "%s length of field '%s' (%u)", r == 1 ? "truncated" : "over-long", f->name, (unsigned)f->id);
  if (len > end - *pos)
    return fail(c, at, "field '%s' (%u) declares %llu bytes but only %zu remain (truncated?)", f->name,
                (unsigned)f->id, (unsigned long long)len, end - *pos);
  size_t body = *pos, body_end = *pos + (size_t)len;
  *pos = body_end;
  if (want != WT_LEN) return check_packed(c, f, want, body, body_end);
  if (f->type == PROTOBUF_C_TYPE_STRING) {
    /* protobuf-c hands strings over NUL-terminated: "y\0z" would silently
     * become "y" */
    const uint8_t *nul = len ? memchr(c->buf + body, 0, (size_t)len) : NULL;
    if (nul)
      return fail(c, (size_t)(nul - c->buf), "string field '%s' (%u) holds a NUL byte (byte %zu of its %llu); a name "
                  "or string cannot contain one", f->name, (unsigned)f->id, (size_t)(nul - (c->buf + body)),
                  (unsigned long long)len);
    return MIL_OK;
  }
  if (f->type != PROTOBUF_C_TYPE_MESSAGE) return MIL_OK;
  if (c->depth >= IO_PROTO_MAX_DEPTH)
    return fail(c, tag_at, "messages nested deeper than %d levels", IO_PROTO_MAX_DEPTH);
  c->depth++;
  c->stack[c->depth].desc = f->descriptor;
  c->stack[c->depth].field = f;
  mil_status st = check_message(c, body, body_end);
  c->depth--;
  return st;
}

static mil_status skip_unknown(checker *c, int wt, uint64_t num, size_t tag_at, size_t *pos, size_t end) {
  uint64_t v;
  if (wt == WT_VARINT) {
    if (read_varint(c->buf, pos, end, &v)) return fail(c, tag_at, "bad varint in unknown field %llu", (unsigned long long)num);
    return MIL_OK;
  }
  if (wt == WT_I64 || wt == WT_I32) {
    size_t need = wt == WT_I32 ? 4 : 8;
    if (end - *pos < need) return fail(c, tag_at, "truncated fixed-size unknown field %llu", (unsigned long long)num);
    *pos += need;
    return MIL_OK;
  }
  if (read_varint(c->buf, pos, end, &v) || v > end - *pos)
    return fail(c, tag_at, "unknown field %llu has a length running past the end of its message",
                (unsigned long long)num);
  *pos += (size_t)v;
  return MIL_OK;
}

static mil_status check_message(checker *c, size_t pos, size_t end) {
  const ProtobufCMessageDescriptor *desc = c->stack[c->depth].desc;
  while (pos < end) {
    size_t tag_at = pos;
    uint64_t key;
    int r = read_varint(c->buf, &pos, end, &key);
    if (r) return fail(c, tag_at, "%s field tag", r == 1 ? "truncated" : "over-long");
    int wt = (int)(key & 7);
    uint64_t num = key >> 3;
    if (num == 0 || num > 536870911u) return fail(c, tag_at, "invalid field number %llu", (unsigned long long)num);
    if (wt == WT_SGROUP || wt == WT_EGROUP || wt > WT_I32)
      return fail(c, tag_at, "field %llu uses wire type %s, which is not allowed here", (unsigned long long)num,
                  wire_name(wt));
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, (unsigned)num);
    mil_status st = f ? check_field(c, f, wt, tag_at, &pos, end) : skip_unknown(c, wt, num, tag_at, &pos, end);
    if (st != MIL_OK) return st;
  }
  return MIL_OK;
}

mil_status io_proto_check(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc, const char *file,
                          mil_diag *d) {
  checker c;
  memset(&c, 0, sizeof c);
  c.buf = buf;
  c.file = file ? file : "<memory>";
  c.d = d;
  c.stack[0].desc = desc;
  return check_message(&c, 0, len);
}

/* ---- bump allocation for decoding ---- */

/* Chunks of at least 1 MiB; every decoded part is carved from the newest
 * chunk, nothing is freed until io_pb_arena_free. */
typedef struct pb_chunk {
  struct pb_chunk *next;
  size_t cap, used;
} pb_chunk;

struct io_pb_arena {
  pb_chunk *head;
  ProtobufCAllocator a;
};

_Thread_local io_pb_arena *io_wr_arena;

void *io_pb_arena_alloc(io_pb_arena *ar, size_t n) {
  n = (n + 15) & ~(size_t)15;
  pb_chunk *c = ar->head;
  const size_t hdr = (sizeof(pb_chunk) + 15) & ~(size_t)15;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
    c = malloc(hdr + cap);
    if (!c) return NULL;
    c->cap = cap;
    c->used = 0;
    c->next = ar->head;
    ar->head = c;
  }
  void *r = (char *)c + hdr + c->used;
  c->used += n;
  return r;
}

static void *pb_arena_alloc(void *ud, size_t n) { return io_pb_arena_alloc(ud, n); }

static void pb_arena_nofree(void *ud, void *ptr) {
  (void)ud;
  (void)ptr;
}

io_pb_arena *io_pb_arena_new(void) {
  io_pb_arena *ar = calloc(1, sizeof *ar);
  if (!ar) return NULL;
  ar->a.alloc = pb_arena_alloc;
  ar->a.free = pb_arena_nofree;
  ar->a.allocator_data = ar;
  return ar;
}

void io_pb_arena_free(io_pb_arena *ar) {
  if (!ar) return;
  for (pb_chunk *c = ar->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(ar);
}

ProtobufCMessage *io_proto_unpack(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                                  const char *file, mil_diag *d) {
  return io_proto_unpack_in(buf, len, desc, NULL, file, d);
}

ProtobufCMessage *io_proto_unpack_in(const void *buf, size_t len, const ProtobufCMessageDescriptor *desc,
                                     io_pb_arena *ar, const char *file, mil_diag *d) {
  if (io_proto_check(buf, len, desc, file, d) != MIL_OK) return NULL;
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, ar ? &ar->a : NULL, len, buf);
  if (!m)
    mil_diag_error(d, MIL_ERR_FORMAT, "%s: the %s message (%zu bytes) could not be decoded (out of memory or a "
                   "malformed field)", file ? file : "<memory>", desc->name, len);
  return m;
}

/* ---- depth of a message tree (before packing) ---- */

static int msg_depth(const ProtobufCMessage *m, int level, int limit) {
  if (level > limit) return level;
  int best = level;
  const ProtobufCMessageDescriptor *desc = m->descriptor;
  const char *base = (const char *)m;
  for (unsigned i = 0; i < desc->n_fields && best <= limit; i++) {
    const ProtobufCFieldDescriptor *f = &desc->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(const void *)(base + f->quantifier_offset);
      ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)(const void *)(base + f->offset);
      for (size_t k = 0; k < n && arr && best <= limit; k++)
        if (arr[k]) {
          int dd = msg_depth(arr[k], level + 1, limit);
          if (dd > best) best = dd;
        }
      continue;
    }
    if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
        *(const uint32_t *)(const void *)(base + f->quantifier_offset) != f->id)
      continue;
    const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(const void *)(base + f->offset);
    if (sub) {
      int dd = msg_depth(sub, level + 1, limit);
      if (dd > best) best = dd;
    }
  }
  return best;
}

bool io_proto_depth_ok(const ProtobufCMessage *m, int limit, int *depth) {
  int dd = m ? msg_depth(m, 0, limit) : 0;
  if (depth) *depth = dd;
  return dd <= limit;
}
