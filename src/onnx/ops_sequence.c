/* ONNX sequence ops inside a graph: SequenceEmpty, SequenceConstruct,
 * SequenceInsert, SequenceErase, SequenceAt, SequenceLength,
 * ConcatFromSequence, SplitToSequence. A sequence becomes a MIL list
 * (make_list, then list_write of each element in order, as coremltools'
 * torch frontend builds lists), which also records its composition in the
 * program: a list var whose ops are list_write at const indices back to a
 * make_list of length 0 has known elements, and the ops on it resolve at
 * conversion (SequenceAt -> the element, SequenceLength -> a const,
 * ConcatFromSequence -> concat); the lists left unused are dead code.
 * Elements must share dtype and rank (dims that differ become symbols of
 * the list's element type). Positions must be known at conversion, and a
 * sequence of unknown composition (a Loop's, a graph input) is refused. */
#include <stdio.h>
#include <string.h>

#include "onnx/import_internal.h"

#define SEQ_MAX 256

typedef struct seq {
  int32_t n;
  mil_var *e[SEQ_MAX];
} seq;

/* The elements of list var v as its list_write chain records them. */
static bool seq_of(const mil_var *v, seq *s) {
  const mil_op *op = v ? v->op : NULL;
  if (!op) return false;
  if (strcmp(op->type, "make_list") == 0) {
    s->n = 0;
    return true;
  }
  if (strcmp(op->type, "list_write") != 0) return false;
  const mil_var *ls = NULL;
  const mil_value *idx = NULL;
  mil_var *val = NULL;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->n_args != 1) continue;
    mil_var *a = in->args[0].use.var;
    if (strcmp(in->name, "ls") == 0) ls = a;
    else if (strcmp(in->name, "index") == 0) idx = a ? a->val : in->args[0].value;
    else if (strcmp(in->name, "value") == 0) val = a;
  }
  if (!ls || !idx || !val || !seq_of(ls, s)) return false;
  int64_t i = mil_value_get_i64(idx, 0);
  if (i < 0 || i > s->n || i >= SEQ_MAX) return false;
  s->e[i] = val;
  if (i == s->n) s->n++;
  return true;
}

/* A MIL list holding s's elements (dtype dt when empty). */
static mil_var *make_seq(onnx_ctx *c, const seq *s, mil_dtype dt) {
  int32_t rank = s->n ? onnx_rank(s->e[0]) : 0;
  if (s->n) dt = onnx_dtype(s->e[0]);
  for (int32_t k = 1; k < s->n; k++)
    if (onnx_rank(s->e[k]) != rank || onnx_dtype(s->e[k]) != dt) {
      onnx_fail(c, MIL_ERR_UNSUPPORTED, "sequence elements of different dtypes or ranks");
      return NULL;
    }
  if (rank < 0) {
    onnx_fail(c, MIL_ERR_UNSUPPORTED, "sequence elements of unknown rank");
    return NULL;
  }
  /* elem_shape: the common dims, a fresh symbol where they differ */
  mil_var *shape[MIL_INTERP_MAX_RANK_ONNX];
  for (int32_t d = 0; d < rank; d++) {
    int64_t sz = s->e[0]->type->dims[d].size;
    for (int32_t k = 1; k < s->n && sz >= 0; k++)
      if (s->e[k]->type->dims[d].size != sz) sz = -1;
    if (sz >= 0) shape[d] = onnx_const(c, onnx_i32(c, sz));
    else {
      const mil_dim sym = mil_dim_new_symbol(c->p);
      shape[d] = onnx_const(c, onnx_str(c, sym.sym ? sym.sym : "seq_dim"));
    }
    if (!shape[d]) return NULL;
  }
  mil_var *ls = ONNX_OP(c, "make_list", K("init_length", onnx_i32(c, 0)), K("dynamic_length", onnx_bool(c, true)),
                        AT("elem_shape", shape, rank), K("dtype", onnx_str(c, mil_dtype_name(dt))));
  for (int32_t k = 0; k < s->n && ls; k++)
    ls = ONNX_OP(c, "list_write", A("ls", ls), K("index", onnx_i32(c, k)), A("value", s->e[k]));
  return ls;
}

static mil_status need_seq(onnx_ctx *c, onnx_node *n, seq *s) {
  mil_var *v = onnx_req(c, n, 0);
  if (!v) return MIL_ERR_INVALID;
  if (!seq_of(v, s)) return ONNX_UNSUP(c, "a sequence whose elements are not known at conversion");
  return MIL_OK;
}

/* A position input (or dflt when absent), normalized against n (in [0, n + extra)). */
static mil_status position(onnx_ctx *c, onnx_node *n, int32_t i, int64_t dflt, int32_t len, int32_t extra, int32_t *out) {
  int64_t p = dflt;
  mil_var *v = onnx_in(n, i);
  if (v) {
    int64_t *a;
    int32_t k;
    if (!onnx_val_ints(c, v, &a, &k) || k != 1) return ONNX_UNSUP(c, "position not known at conversion");
    p = a[0];
  }
  if (p < 0) p += len;
  if (p < 0 || p >= len + extra) return onnx_fail(c, MIL_ERR_INVALID, "position out of range for a sequence of %d", (int)len);
  *out = (int32_t)p;
  return MIL_OK;
}

static mil_dtype attr_dtype(onnx_node *n) {
  mil_dtype dt = onnx_mil_dtype((int)onnx_attr_i(n, "dtype", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT));
  return dt == MIL_DT_UNUSED ? MIL_DT_FP32 : dt;
}

static mil_status conv_seq_empty(onnx_ctx *c, onnx_node *n) {
  seq s = {0};
  return onnx_set_out(c, n, 0, make_seq(c, &s, attr_dtype(n)));
}

static mil_status conv_seq_construct(onnx_ctx *c, onnx_node *n) {
  seq s = {0};
  if (n->n_in > SEQ_MAX) return ONNX_UNSUP(c, "more than %d elements", SEQ_MAX);
  for (int32_t i = 0; i < n->n_in; i++)
    if (!(s.e[s.n++] = onnx_req(c, n, i))) return MIL_ERR_INVALID;
  return onnx_set_out(c, n, 0, make_seq(c, &s, MIL_DT_FP32));
}

static mil_status conv_seq_insert(onnx_ctx *c, onnx_node *n) {
  seq s;
  mil_status st = need_seq(c, n, &s);
  mil_var *t = onnx_req(c, n, 1);
  if (st != MIL_OK) return st;
  if (!t) return MIL_ERR_INVALID;
  if (s.n >= SEQ_MAX) return ONNX_UNSUP(c, "more than %d elements", SEQ_MAX);
  int32_t p;
  if ((st = position(c, n, 2, s.n, s.n, 1, &p)) != MIL_OK) return st;
  memmove(&s.e[p + 1], &s.e[p], (size_t)(s.n - p) * sizeof s.e[0]);
  s.e[p] = t;
  s.n++;
  return onnx_set_out(c, n, 0, make_seq(c, &s, onnx_dtype(t)));
}

static mil_status conv_seq_erase(onnx_ctx *c, onnx_node *n) {
  seq s;
  mil_status st = need_seq(c, n, &s);
  if (st != MIL_OK) return st;
  int32_t p;
  if ((st = position(c, n, 1, -1, s.n, 0, &p)) != MIL_OK) return st;
  mil_dtype dt = onnx_dtype(s.e[p]);
  memmove(&s.e[p], &s.e[p + 1], (size_t)(s.n - p - 1) * sizeof s.e[0]);
  s.n--;
  return onnx_set_out(c, n, 0, make_seq(c, &s, dt));
}

static mil_status conv_seq_at(onnx_ctx *c, onnx_node *n) {
  seq s;
  mil_status st = need_seq(c, n, &s);
  if (st != MIL_OK) return st;
  int32_t p;
  if ((st = position(c, n, 1, 0, s.n, 0, &p)) != MIL_OK) return st;
  return onnx_set_out(c, n, 0, ONNX_OP(c, "identity", A("x", s.e[p])));
}

static mil_status conv_seq_length(onnx_ctx *c, onnx_node *n) {
  seq s;
  mil_status st = need_seq(c, n, &s);
  if (st != MIL_OK) return st;
  return onnx_set_out(c, n, 0, onnx_const(c, onnx_i32(c, s.n)));
}

static mil_status conv_concat_from_seq(onnx_ctx *c, onnx_node *n) {
  seq s;
  mil_status st = need_seq(c, n, &s);
  if (st != MIL_OK) return st;
  if (!s.n) return onnx_fail(c, MIL_ERR_INVALID, "an empty sequence");
  if (!onnx_attr(n, "axis")) return onnx_fail(c, MIL_ERR_INVALID, "the axis attribute is required");
  int64_t axis = onnx_attr_i(n, "axis", 0);
  bool new_axis = onnx_attr_i(n, "new_axis", 0) != 0;
  int32_t r = onnx_rank(s.e[0]) + (new_axis ? 1 : 0);
  if (!onnx_axis(&axis, r)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)r);
  if (new_axis)
    for (int32_t k = 0; k < s.n; k++)
      if (!(s.e[k] = ONNX_OP(c, "expand_dims", A("x", s.e[k]), K("axes", onnx_i32s(c, 1, &axis))))) return MIL_ERR_TYPE;
  mil_var *y = s.n > 1 ? ONNX_OP(c, "concat", AT("values", s.e, s.n), K("axis", onnx_i32(c, axis)))
                       : ONNX_OP(c, "identity", A("x", s.e[0]));
  return onnx_set_out(c, n, 0, y);
}

/* SplitToSequence(input, split): chunks along axis of the given sizes
 * (one size each: equal chunks, the last smaller; absent: size 1 and
 * keepdims chooses whether the axis stays). */
static mil_status conv_split_to_seq(onnx_ctx *c, onnx_node *n) {
  mil_var *x = onnx_req(c, n, 0), *split = onnx_in(n, 1);
  if (!x) return MIL_ERR_INVALID;
  int32_t r = onnx_rank(x);
  int64_t axis = onnx_attr_i(n, "axis", 0);
  if (!onnx_axis(&axis, r)) return onnx_fail(c, MIL_ERR_INVALID, "axis out of range for rank %d", (int)r);
  int64_t dim = x->type->dims[axis].size;
  seq s = {0};
  mil_var *idxs = NULL; /* run-time sizes: their inclusive cumsum */
  int64_t *sz = NULL;
  int32_t k = 0;
  if (split && !onnx_val_ints(c, split, &sz, &k)) {
    if (onnx_rank(split) != 1 || split->type->dims[0].size < 0)
      return ONNX_UNSUP(c, "split sizes of unknown count");
    k = (int32_t)split->type->dims[0].size;
    idxs = ONNX_OP(c, "cumsum", A("x", onnx_cast(c, split, MIL_DT_INT32)), K("axis", onnx_i32(c, 0)));
  } else if (split && onnx_rank(split) == 0) {
    if (dim < 0 || sz[0] <= 0) return ONNX_UNSUP(c, "a scalar split along a dim not known at conversion");
    int64_t each = sz[0];
    k = (int32_t)((dim + each - 1) / each);
    sz = mil_program_alloc(c->p, (size_t)(k ? k : 1) * sizeof *sz);
    for (int32_t i = 0; sz && i < k; i++) sz[i] = i < k - 1 ? each : dim - each * (k - 1);
  } else if (!split) {
    if (dim < 0) return ONNX_UNSUP(c, "splitting a dim not known at conversion");
    k = (int32_t)dim;
    sz = mil_program_alloc(c->p, (size_t)(k ? k : 1) * sizeof *sz);
    for (int32_t i = 0; sz && i < k; i++) sz[i] = 1;
  }
  if (k > SEQ_MAX) return ONNX_UNSUP(c, "more than %d chunks", SEQ_MAX);
  if (k && !sz && !idxs) return MIL_ERR_NOMEM;
  bool squeeze = !split && onnx_attr_i(n, "keepdims", 1) == 0;
  mil_var *xs = onnx_shape_of(c, x);
  for (int32_t i = 0, off = 0; i < k; i++) {
    mil_var *piece;
    if (sz) {
      /* the indices off .. off + sz[i] */
      mil_value *iv = mil_value_new_tensor(c->p, MIL_DT_INT32, 1, &sz[i], false, NULL);
      if (!iv) return MIL_ERR_NOMEM;
      for (int64_t j = 0; j < sz[i]; j++) mil_value_set_i64(iv, j, off + j);
      piece = ONNX_OP(c, "gather", A("x", x), K("indices", iv), K("axis", onnx_i32(c, axis)));
      off += (int32_t)sz[i];
    } else {
      /* [begin, end) along axis from the cumsum, the whole of the other axes */
      mil_var *e = ONNX_OP(c, "gather", A("x", idxs), K("indices", onnx_i32s(c, 1, (int64_t[]){i})), K("axis", onnx_i32(c, 0)));
      mil_var *b = i ? ONNX_OP(c, "gather", A("x", idxs), K("indices", onnx_i32s(c, 1, (int64_t[]){i - 1})), K("axis", onnx_i32(c, 0)))
                     : onnx_const(c, onnx_i32s(c, 1, (int64_t[]){0}));
      mil_var *bv[3], *ev[3];
      int32_t nb = 0;
      if (axis > 0) {
        bv[nb] = onnx_const(c, onnx_i32s(c, (int32_t)axis, (int64_t[MIL_INTERP_MAX_RANK_ONNX]){0}));
        ev[nb++] = ONNX_OP(c, "slice_by_index", A("x", xs), K("begin", onnx_i32s(c, 1, (int64_t[]){0})), K("end", onnx_i32s(c, 1, &axis)));
      }
      bv[nb] = b;
      ev[nb++] = e;
      if (axis < r - 1) {
        int64_t a1 = axis + 1;
        bv[nb] = onnx_const(c, onnx_i32s(c, (int32_t)(r - 1 - axis), (int64_t[MIL_INTERP_MAX_RANK_ONNX]){0}));
        ev[nb++] = ONNX_OP(c, "slice_by_index", A("x", xs), K("begin", onnx_i32s(c, 1, &a1)), K("end", onnx_i32s(c, 1, (int64_t[]){r})));
      }
      mil_var *bb = nb > 1 ? ONNX_OP(c, "concat", AT("values", bv, nb), K("axis", onnx_i32(c, 0))) : bv[0];
      mil_var *ee = nb > 1 ? ONNX_OP(c, "concat", AT("values", ev, nb), K("axis", onnx_i32(c, 0))) : ev[0];
      piece = ONNX_OP(c, "slice_by_index", A("x", x), A("begin", bb), A("end", ee));
    }
    if (piece && squeeze) piece = ONNX_OP(c, "squeeze", A("x", piece), K("axes", onnx_i32s(c, 1, &axis)));
    if (!piece) return MIL_ERR_TYPE;
    s.e[s.n++] = piece;
  }
  return onnx_set_out(c, n, 0, make_seq(c, &s, onnx_dtype(x)));
}

const onnx_op_entry onnx_ops_sequence[] = {
    {"SequenceEmpty", "", 11, 0, conv_seq_empty, "make_list"},
    {"SequenceConstruct", "", 11, 0, conv_seq_construct, "make_list, list_write"},
    {"SequenceInsert", "", 11, 0, conv_seq_insert, "make_list, list_write"},
    {"SequenceErase", "", 11, 0, conv_seq_erase, "make_list, list_write"},
    {"SequenceAt", "", 11, 0, conv_seq_at, "identity"},
    {"SequenceLength", "", 11, 0, conv_seq_length, "const"},
    {"ConcatFromSequence", "", 11, 0, conv_concat_from_seq, "expand_dims, concat"},
    {"SplitToSequence", "", 11, 0, conv_split_to_seq, "gather, slice_by_index, squeeze, make_list, list_write"},
    {NULL, NULL, 0, 0, NULL, NULL},
};
