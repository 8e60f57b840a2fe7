/* ONNX sequences whose structure is known at conversion time: the
 * sequence is a list of MIL vars the importer keeps (no MIL list at run
 * time) as long as every position and split is known. SequenceEmpty,
 * SequenceConstruct, SequenceInsert, SequenceErase, SequenceAt,
 * SequenceLength, SplitToSequence (split op), ConcatFromSequence (concat,
 * or stack with new_axis). Sequences as graph inputs or outputs, and
 * positions computed at run time, are refused. */
#include <string.h>

#include "onnx/import/import_internal.h"

static onnx_seq *seq_new(onnx_ctx *c, int32_t n, mil_dtype dt) {
  onnx_seq *s = mil_program_alloc(c->p, sizeof *s);
  if (!s) return NULL;
  s->items = mil_program_alloc(c->p, (size_t)(n ? n : 1) * sizeof *s->items);
  if (!s->items) return NULL;
  s->n = n;
  s->dtype = dt;
  return s;
}

static onnx_seq *seq_in(onnx_ctx *c, onnx_node *n, int32_t i) {
  const char *nm = i < n->n_in ? n->proto->input[i] : NULL;
  onnx_seq *s = nm && nm[0] ? onnx_seq_lookup(c, nm) : NULL;
  if (!s) onnx_fail(c, MIL_ERR_UNSUPPORTED, "input %d is not a sequence known at conversion time", (int)i);
  return s;
}

static mil_status seq_out(onnx_ctx *c, onnx_node *n, onnx_seq *s) {
  if (!s) return MIL_ERR_NOMEM;
  return onnx_seq_bind(c, n->proto->output[0], s);
}

/* a known position in [-len, len] (insert) or [-len, len) */
static bool position(onnx_ctx *c, onnx_node *n, int32_t i, int32_t len, bool insert, int32_t *out) {
  mil_var *p = onnx_in(n, i);
  if (!p) {
    *out = insert ? len : len - 1;
    return true;
  }
  if (!p->val) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "a position computed at run time");
    return false;
  }
  int64_t v = mil_value_get_i64(p->val, 0);
  if (v < 0) v += len;
  if (v < 0 || v > len || (!insert && v == len)) {
    onnx_fail(c, MIL_ERR_INVALID, "position %lld out of range for a sequence of %d", (long long)v, (int)len);
    return false;
  }
  *out = (int32_t)v;
  return true;
}

static mil_status conv_seq_empty(onnx_ctx *c, onnx_node *n) {
  int dt = (int)onnx_attr_i(n, "dtype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
  return seq_out(c, n, seq_new(c, 0, onnx_mil_dtype(dt)));
}

static mil_status conv_seq_construct(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_new(c, n->n_in, n->n_in ? onnx_dtype(onnx_in(n, 0)) : MIL_DT_FP32);
  for (int32_t i = 0; s && i < n->n_in; i++)
    if (!(s->items[i] = onnx_req(c, n, i))) return MIL_ERR_INVALID;
  return seq_out(c, n, s);
}

static mil_status conv_seq_insert(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_in(c, n, 0);
  mil_var *t = onnx_req(c, n, 1);
  int32_t at;
  if (!s || !t) return MIL_ERR_UNSUPPORTED;
  if (!position(c, n, 2, s->n, true, &at)) return MIL_ERR_UNSUPPORTED;
  onnx_seq *r = seq_new(c, s->n + 1, s->dtype);
  for (int32_t i = 0, k = 0; r && i <= s->n; i++) r->items[i] = i == at ? t : s->items[k++];
  return seq_out(c, n, r);
}

static mil_status conv_seq_erase(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_in(c, n, 0);
  int32_t at;
  if (!s) return MIL_ERR_UNSUPPORTED;
  if (!position(c, n, 1, s->n, false, &at)) return MIL_ERR_UNSUPPORTED;
  onnx_seq *r = seq_new(c, s->n - 1, s->dtype);
  for (int32_t i = 0, k = 0; r && i < s->n; i++)
    if (i != at) r->items[k++] = s->items[i];
  return seq_out(c, n, r);
}

static mil_status conv_seq_at(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_in(c, n, 0);
  int32_t at;
  if (!s) return MIL_ERR_UNSUPPORTED;
  if (!onnx_in(n, 1)) return onnx_fail(c, MIL_ERR_INVALID, "position is required");
  if (!position(c, n, 1, s->n, false, &at)) return MIL_ERR_UNSUPPORTED;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", s->items[at])));
}

static mil_status conv_seq_length(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_in(c, n, 0);
  if (!s) return MIL_ERR_UNSUPPORTED;
  return onnx_set_out(c, n, 0, onnx_const(c, onnx_i32(c, s->n)));
}

/* A split whose sizes are computed at run time but whose count k is known
 * (a rank-1 split input of static length): part i is the slice
 * [exclusive cumsum i, inclusive cumsum i) along axis, also of a dim that
 * is symbolic. */
static mil_var *runtime_bound(onnx_ctx *c, mil_var *sums, int32_t i, int32_t rank, int64_t axis) {
  mil_var *b = ONNX_OP(c, "slice_by_index", A("x", sums), K("begin", onnx_i32s(c, 1, (int64_t[]){i})),
                       K("end", onnx_i32s(c, 1, (int64_t[]){i + 1})));
  if (!b || rank == 1) return b;
  mil_var *parts[3];
  int32_t np = 0;
  int64_t zeros[8] = {0};
  if (axis > 0) parts[np++] = onnx_const(c, onnx_i32s(c, (int32_t)axis, zeros));
  parts[np++] = b;
  if (axis < rank - 1) parts[np++] = onnx_const(c, onnx_i32s(c, (int32_t)(rank - 1 - axis), zeros));
  return ONNX_OP(c, "concat", AT("values", parts, np), K("axis", onnx_i32(c, 0)));
}

static mil_status split_runtime_sizes(onnx_ctx *c, onnx_node *n, mil_var *x, mil_var *sp, int64_t axis) {
  int32_t rank = onnx_rank(x);
  int64_t k = onnx_rank(sp) == 1 ? sp->type->dims[0].size : -1;
  if (k < 1 || k > 1023 || rank > 8) return ONNX_UNSUP(c, "split sizes computed at run time (of a count not known)");
  mil_var *sz = onnx_cast(c, sp, MIL_DT_INT32);
  mil_var *hi = ONNX_OP(c, "cumsum", A("x", sz), K("axis", onnx_i32(c, 0)));
  mil_var *lo = ONNX_OP(c, "cumsum", A("x", sz), K("axis", onnx_i32(c, 0)), K("exclusive", onnx_bool(c, true)));
  if (!hi || !lo) return MIL_ERR_TYPE;
  mil_value *m = mil_value_new_tensor(c->p, MIL_DT_BOOL, 1, (int64_t[]){rank}, false, NULL);
  if (!m) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < rank; i++) mil_value_set_i64(m, i, i != axis);
  onnx_seq *s = seq_new(c, (int32_t)k, onnx_dtype(x));
  if (!s) return MIL_ERR_NOMEM;
  for (int32_t i = 0; i < (int32_t)k; i++) {
    mil_var *b = runtime_bound(c, lo, i, rank, axis), *e = runtime_bound(c, hi, i, rank, axis);
    if (!b || !e) return MIL_ERR_TYPE;
    s->items[i] = ONNX_OP(c, "slice_by_index", A("x", x), A("begin", b), A("end", e), K("begin_mask", m),
                          K("end_mask", m));
    if (!s->items[i]) return MIL_ERR_TYPE;
  }
  return seq_out(c, n, s);
}

static mil_status conv_split_to_seq(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *sp = onnx_in(n, 1);
  if (!x) return MIL_ERR_INVALID;
  int32_t rank = onnx_rank(x);
  if (rank < 1) return onnx_fail(c, MIL_ERR_INVALID, "input of rank %d: nothing to split", (int)rank);
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, rank)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range");
  if (sp && !onnx_val(sp) && onnx_rank(sp) == 1) return split_runtime_sizes(c, n, x, sp, axis);
  int64_t dim = x->type->dims[axis].size;
  if (dim < 0) return ONNX_UNSUP(c, "splitting a symbolic dim");
  int64_t sizes[1024];
  int32_t k = 0;
  bool keep = true;
  if (!sp) {
    /* chunks of 1, squeezed unless keepdims */
    keep = onnx_attr_i(n, "keepdims", 1) != 0;
    for (; k < dim && k < 1024; k++) sizes[k] = 1;
  } else {
    const mil_value *v = onnx_val(sp);
    if (!v) return ONNX_UNSUP(c, "split sizes computed at run time");
    if (v->type->rank == 0) {
      int64_t chunk = mil_value_get_i64(v, 0);
      if (chunk <= 0) return onnx_fail(c, MIL_ERR_INVALID, "split %lld", (long long)chunk);
      for (int64_t left = dim; left > 0 && k < 1024; left -= chunk) sizes[k++] = left < chunk ? left : chunk;
    } else
      for (; k < v->numel && k < 1024; k++) sizes[k] = mil_value_get_i64(v, k);
  }
  if (k > 1023) return ONNX_UNSUP(c, "more than 1023 parts");
  onnx_seq *s = seq_new(c, k, onnx_dtype(x));
  if (!s) return MIL_ERR_NOMEM;
  mil_op *op = k == 1 ? NULL
                      : onnx_op_full(c, "split", 3, (pass_barg[]){A("x", x), K("split_sizes", onnx_i32s(c, k, sizes)),
                                                                 K("axis", onnx_i32(c, axis))});
  if (k > 1 && !op) return MIL_ERR_TYPE;
  for (int32_t i = 0; i < k; i++) {
    mil_var *part = op ? op->outputs[i] : ONNX_OP(c, "identity", A("x", x));
    if (!keep) part = ONNX_OP(c, "squeeze", A("x", part), K("axes", onnx_i32s(c, 1, &axis)));
    if (!(s->items[i] = part)) return MIL_ERR_TYPE;
  }
  return seq_out(c, n, s);
}

static mil_status conv_concat_from_seq(onnx_ctx *c, onnx_node *n) {
  onnx_seq *s = seq_in(c, n, 0);
  if (!s) return MIL_ERR_UNSUPPORTED;
  if (s->n == 0) return ONNX_UNSUP(c, "an empty sequence");
  int64_t axis = onnx_attr_i(n, "axis", 0);
  bool stack = onnx_attr_i(n, "new_axis", 0) != 0;
  int32_t rank = onnx_rank(s->items[0]) + (stack ? 1 : 0);
  if (axis < 0) axis += rank;
  mil_var *r = s->n == 1 ? (stack ? ONNX_OP(c, "expand_dims", A("x", s->items[0]), K("axes", onnx_i32s(c, 1, &axis)))
                                  : ONNX_OP(c, "identity", A("x", s->items[0])))
               : stack ? ONNX_OP(c, "stack", AT("values", s->items, s->n), K("axis", onnx_i32(c, axis)))
                       : ONNX_OP(c, "concat", AT("values", s->items, s->n), K("axis", onnx_i32(c, axis)));
  return onnx_set_out(c, n, 0, r);
}

const onnx_op_entry onnx_ops_sequence[] = {
    {"SequenceEmpty", "", 11, 0, conv_seq_empty, "(none: a sequence known at conversion)"},
    {"SequenceConstruct", "", 11, 0, conv_seq_construct, "(none)"},
    {"SequenceInsert", "", 11, 0, conv_seq_insert, "(none)"},
    {"SequenceErase", "", 11, 0, conv_seq_erase, "(none)"},
    {"SequenceAt", "", 11, 0, conv_seq_at, "identity"},
    {"SequenceLength", "", 11, 0, conv_seq_length, "const"},
    {"SplitToSequence", "", 11, 0, conv_split_to_seq, "split, squeeze / cumsum, slice_by_index"},
    {"ConcatFromSequence", "", 11, 0, conv_concat_from_seq, "concat / stack"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
