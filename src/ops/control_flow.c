/* Op family "control_flow" (coremltools ops/defs/iOS15/control_flow.py):
 * const, cond, while_loop, select and the list ops (make_list, list_length,
 * list_write, list_read, list_gather, list_scatter).
 *
 *   %c_0: (2, fp32)(Tensor) = cond(pred=%p, name="c")
 *     c_true() { ... } -> (%a)
 *     c_false() { ... } -> (%b)
 *   %l: List[?, (2,fp32)](List) = make_list(init_length=1, dynamic_length=True, elem_shape=(%two),
 *                                            dtype="fp32", name="l")
 *
 * The nested blocks of cond / while_loop are built by the reader; their
 * outputs' types give the op's output types. Const ops carry their value on
 * the output var; the validator skips them. */
#include <string.h>

#include "ops/fold_internal.h"
#include "ops/ops_defaults.h"
#include "ops/ops_internal.h"

#define DTS_LIST_ELEM (MIL_DTS_FLOAT_INT32 | MIL_DTS_BOOL)

static const mil_input_spec k_const_in[] = {
    IN_SPEC("val", MIL_IK_ANY, 0, NULL, MIL_IF_CONST | MIL_IF_INTERNAL, NULL),
};
static const mil_input_spec k_cond_in[] = {
    IN_SPEC("pred", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, 0, NULL),
    IN_SPEC("_true_fn", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL, NULL),
    IN_SPEC("_false_fn", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL, NULL),
    IN_SPEC("_existing_blocks", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL | MIL_IF_OPTIONAL, NULL),
};
static const mil_input_spec k_select_in[] = {
    IN_SPEC("cond", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, 0, NULL),
    IN_SPEC("a", MIL_IK_TENSOR, DTS_LIST_ELEM, "T", 0, NULL),
    IN_SPEC("b", MIL_IK_TENSOR, DTS_LIST_ELEM, "T", 0, NULL),
};
static const mil_input_spec k_while_in[] = {
    IN_SPEC("_cond", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL, NULL),
    IN_SPEC("_body", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL, NULL),
    IN_SPEC("loop_vars", MIL_IK_TUPLE | MIL_IK_ANY, 0, NULL, 0, NULL),
    IN_SPEC("_existing_blocks", MIL_IK_ANY, 0, NULL, MIL_IF_INTERNAL | MIL_IF_OPTIONAL, NULL),
};
static const mil_input_spec k_make_list_in[] = {
    IN_SPEC("init_length", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, MIL_IF_OPTIONAL, "1"),
    IN_SPEC("dynamic_length", MIL_IK_TENSOR, MIL_DTS_BOOL, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "True"),
    IN_SPEC("elem_shape", MIL_IK_TUPLE | MIL_IK_TENSOR, 0, NULL, 0, NULL),
    IN_SPEC("dtype", MIL_IK_TENSOR, MIL_DTS_STRING, NULL, MIL_IF_CONST | MIL_IF_OPTIONAL, "\"fp32\""),
};
static const mil_input_spec k_list_length_in[] = {
    IN_SPEC("ls", MIL_IK_LIST, 0, NULL, 0, NULL),
};
static const mil_input_spec k_list_write_in[] = {
    IN_SPEC("ls", MIL_IK_LIST, 0, NULL, 0, NULL),
    IN_SPEC("index", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
    IN_SPEC("value", MIL_IK_TENSOR, DTS_LIST_ELEM, "T", 0, NULL),
};
static const mil_input_spec k_list_read_in[] = {
    IN_SPEC("ls", MIL_IK_LIST, 0, NULL, 0, NULL),
    IN_SPEC("index", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
};
static const mil_input_spec k_list_gather_in[] = {
    IN_SPEC("ls", MIL_IK_LIST, 0, NULL, 0, NULL),
    IN_SPEC("indices", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
};
static const mil_input_spec k_list_scatter_in[] = {
    IN_SPEC("ls", MIL_IK_LIST, 0, NULL, 0, NULL),
    IN_SPEC("indices", MIL_IK_TENSOR, MIL_DTS_INT32, NULL, 0, NULL),
    IN_SPEC("value", MIL_IK_TENSOR, DTS_LIST_ELEM, "T", 0, NULL),
};

/* ---- const ---- */

static const mil_value *const_value(const mil_infer_ctx *c) {
  if (c->op->n_outputs >= 1 && c->op->outputs[0]->val) return c->op->outputs[0]->val;
  return op_val(c, "val");
}

static mil_status infer_const(mil_infer_ctx *c) {
  const mil_value *v = const_value(c);
  if (!v) return op_fail(c, "a const op must hold a value");
  const mil_type *t = v->type;
  if (!t && c->op->n_outputs >= 1) t = c->op->outputs[0]->type;
  if (!t) return op_fail(c, "the value of the const has no type");
  op_set_out(c, 0, t);
  return MIL_OK;
}

/* A _const_symbolic holds a value with symbols, which MIL text does not
 * print: without a value its declared type stands, and its value is
 * symbolic. */
static mil_status infer_const_symbolic(mil_infer_ctx *c) {
  if (const_value(c)) return infer_const(c);
  if (c->op->n_outputs < 1 || !c->op->outputs[0]->type)
    return op_fail(c, "a _const_symbolic op must hold a value or declare its output type");
  op_set_out(c, 0, c->op->outputs[0]->type);
  c->mark[0] = MIL_MARK_SYMBOLIC;
  return MIL_OK;
}

static mil_status fold_const(mil_infer_ctx *c) {
  c->val[0] = const_value(c);
  return MIL_OK;
}

/* ---- type relations (coremltools types.is_subtype / is_compatible_type) ---- */

static bool dim_is_sym(const mil_dim *d) { return d->size < 0; }

/* Tensor a is a subtype of tensor b: same dtype and rank; each dim equal,
 * or both symbolic, or b's symbolic. */
static bool tensor_subtype(const mil_type *a, const mil_type *b) {
  if (a->dtype != b->dtype) return false;
  if (a->rank < 0 || b->rank < 0) return a->rank == b->rank;
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; i++) {
    const mil_dim *x = &a->dims[i], *y = &b->dims[i];
    if (!dim_is_sym(x) && !dim_is_sym(y) && x->size != y->size) return false;
    if (dim_is_sym(x) && !dim_is_sym(y)) return false;
  }
  return true;
}

static bool is_subtype(const mil_type *a, const mil_type *b) {
  if (!b || b->kind == MIL_TYPE_UNKNOWN) return true;
  if (!a) return false;
  if (b->kind == MIL_TYPE_LIST) return a->kind == MIL_TYPE_LIST && is_subtype(a->elem, b->elem);
  if (a->kind == MIL_TYPE_TENSOR && b->kind == MIL_TYPE_TENSOR) {
    if (a->is_scalar != b->is_scalar) return false; /* a scalar is not a rank-0 tensor */
    return tensor_subtype(a, b);
  }
  return mil_type_equal(a, b);
}

/* Two branch outputs agree: rank-0 tensors count as scalars; tensors of one
 * dtype and rank whose dims are equal or symbolic on either side. */
static bool compatible(const mil_type *a, const mil_type *b) {
  if (!a || !b) return a == b;
  if (a->kind == MIL_TYPE_TENSOR && b->kind == MIL_TYPE_TENSOR) {
    if (a->dtype != b->dtype) return false;
    if (a->rank == 0 || b->rank == 0) return a->rank == b->rank || (a->rank < 0 || b->rank < 0);
    if (a->rank < 0 || b->rank < 0) return true;
    if (a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
      if (!dim_is_sym(&a->dims[i]) && !dim_is_sym(&b->dims[i]) && a->dims[i].size != b->dims[i].size) return false;
    return true;
  }
  return is_subtype(a, b);
}

/* ---- cond ---- */

static mil_status infer_cond(mil_infer_ctx *c) {
  const mil_op *op = c->op;
  if (op->n_blocks != 2) return op_fail(c, "cond must have 2 blocks (true and false branches), got %d", op->n_blocks);
  const mil_block *t = op->blocks[0], *f = op->blocks[1];
  int32_t n = t->n_outputs < f->n_outputs ? t->n_outputs : f->n_outputs;
  for (int32_t i = 0; i < n; i++) {
    const mil_var *vt = t->outputs[i].var, *vf = f->outputs[i].var;
    if (!vt || !vf) return op_fail(c, "block output %d is unbound", i);
    if (!compatible(vt->type, vf->type))
      return op_fail(c, "true branch output %%%s is %s but false branch output %%%s is %s", vt->name,
                     op_tstr(c, vt->type), vf->name, op_tstr(c, vf->type));
  }
  if (op->n_outputs && op->n_outputs != t->n_outputs)
    return op_fail(c, "has %d outputs but its true branch returns %d values", op->n_outputs, t->n_outputs);
  if (t->n_outputs > c->n_out && op->n_outputs == 0)
    return op_fail(c, "returns %d values; declare its outputs before inferring", t->n_outputs);
  for (int32_t i = 0; i < t->n_outputs && i < c->n_out; i++) {
    if (!t->outputs[i].var) return op_fail(c, "true branch output %d is unbound", i);
    op_set_out(c, i, t->outputs[i].var->type);
  }
  return MIL_OK;
}

static mil_status fold_cond(mil_infer_ctx *c) {
  const mil_value *p = op_val(c, "pred");
  if (!p || p->kind != MIL_VAL_TENSOR || p->numel < 1) return MIL_OK;
  const mil_block *b = c->op->blocks[mil_value_get_i64(p, 0) ? 0 : 1];
  for (int32_t i = 0; i < c->n_out && i < b->n_outputs; i++)
    if (!b->outputs[i].var || !b->outputs[i].var->val) return MIL_OK;
  for (int32_t i = 0; i < c->n_out && i < b->n_outputs; i++) c->val[i] = b->outputs[i].var->val;
  return MIL_OK;
}

/* ---- while_loop ---- */

static mil_status infer_while(mil_infer_ctx *c) {
  const mil_op *op = c->op;
  if (op->n_blocks != 2) return op_fail(c, "while_loop must have 2 blocks (cond and body), got %d", op->n_blocks);
  const mil_block *body = op->blocks[1];
  const mil_input *lv = op_input(c, "loop_vars");
  int32_t n_vars = lv ? lv->n_args : 0;
  if (body->n_outputs != n_vars)
    return op_fail(c, "body block returns %d values but there are %d loop_vars", body->n_outputs, n_vars);
  if (op->n_outputs && op->n_outputs != body->n_outputs)
    return op_fail(c, "has %d outputs but its body returns %d values", op->n_outputs, body->n_outputs);
  if (body->n_outputs > c->n_out && op->n_outputs == 0)
    return op_fail(c, "returns %d values; declare its outputs before inferring", body->n_outputs);
  for (int32_t i = 0; i < body->n_outputs && i < c->n_out; i++) {
    if (!body->outputs[i].var) return op_fail(c, "body output %d is unbound", i);
    op_set_out(c, i, body->outputs[i].var->type);
  }
  return MIL_OK;
}

/* ---- select ---- */

static mil_status infer_select(mil_infer_ctx *c) {
  const mil_type *a = op_type(c, "a"), *b = op_type(c, "b");
  if (a->is_scalar && b->is_scalar) op_set_out(c, 0, op_scalar(c, a->dtype));
  else if (b->is_scalar) op_set_out(c, 0, a);
  else if (a->is_scalar) op_set_out(c, 0, b);
  else {
    mil_dim dims[OP_MAX_RANK];
    int32_t rank;
    mil_status st = op_broadcast(c, a, b, dims, &rank);
    if (st != MIL_OK) return st;
    op_set_out(c, 0, op_tensor(c, a->dtype, rank, rank > 0 ? dims : NULL));
  }
  return MIL_OK;
}

/* select's fold when cond is bool and a, b and the output share a dtype of
 * whole bytes, each operand of the output's element count (the same flat
 * order) or a single element: the chosen element's bytes are copied, as
 * numpy's where does. false when the case is not one of these. */
static bool select_bytes(const mil_value *cv, const mil_value *a, const mil_value *b, mil_value *out) {
  mil_dtype dt = out->type->dtype;
  size_t es = mil_dtype_size(dt);
  int64_t n = out->numel;
  if (cv->type->dtype != MIL_DT_BOOL || a->type->dtype != dt || b->type->dtype != dt || n < 1) return false;
  if (es != 1 && es != 2 && es != 4 && es != 8) return false;
  bool sc = cv->numel == n, sa = a->numel == n, sb = b->numel == n;
  if ((!sc && cv->numel != 1) || (!sa && a->numel != 1) || (!sb && b->numel != 1)) return false;
  const uint8_t *cd = mil_value_data(cv), *ad = mil_value_data(a), *bd = mil_value_data(b);
  uint8_t *od = mil_value_data_mut(out);
  if (!cd || !ad || !bd || !od) return false;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *src = cd[sc ? i : 0] ? ad + (size_t)(sa ? i : 0) * es : bd + (size_t)(sb ? i : 0) * es;
    memcpy(od + (size_t)i * es, src, es);
  }
  return true;
}

static mil_status fold_select(mil_infer_ctx *c) {
  const mil_value *cv = fold_tensor(c, "cond"), *a = fold_tensor(c, "a"), *b = fold_tensor(c, "b");
  if (!cv || !a || !b) return MIL_OK;
  mil_value *out = fold_out(c, 0);
  if (!out) return MIL_OK;
  if (out->numel >= 64 && select_bytes(cv, a, b, out)) {
    c->val[0] = out;
    return MIL_OK;
  }
  int64_t shape[OP_MAX_RANK];
  int32_t rank = fold_shape(out, shape);
  const mil_value *ins[3] = {cv, a, b};
  fold_iter it;
  if (!fold_iter_init(&it, rank, shape, 3, ins)) return MIL_OK;
  bool is_float = fold_is_float(out->type->dtype);
  for (int64_t i = 0; i < out->numel; i++, fold_iter_next(&it)) {
    const mil_value *src = mil_value_get_i64(cv, it.off[0]) ? a : b;
    int64_t j = src == a ? it.off[1] : it.off[2];
    if (is_float) mil_value_set_f64(out, i, mil_value_get_f64(src, j));
    else mil_value_set_i64(out, i, mil_value_get_i64(src, j));
  }
  c->val[0] = out;
  return MIL_OK;
}

/* ---- lists ---- */

static const mil_type *list_of(mil_infer_ctx *c, const mil_type *elem, mil_dim length) {
  return mil_type_list(c->prog, elem, length);
}

static bool dtype_by_name(const char *s, mil_dtype *dt) {
  static const struct { const char *n; mil_dtype dt; } names[] = {
      {"bool", MIL_DT_BOOL},   {"fp16", MIL_DT_FP16},   {"fp32", MIL_DT_FP32},   {"fp64", MIL_DT_FP64},
      {"int8", MIL_DT_INT8},   {"int16", MIL_DT_INT16}, {"int32", MIL_DT_INT32}, {"int64", MIL_DT_INT64},
      {"uint8", MIL_DT_UINT8}, {"uint16", MIL_DT_UINT16}, {"uint32", MIL_DT_UINT32}, {"uint64", MIL_DT_UINT64},
      {"string", MIL_DT_STRING}, {"bf16", MIL_DT_BF16}, {"int4", MIL_DT_INT4}, {"uint1", MIL_DT_UINT1},
      {"uint2", MIL_DT_UINT2}, {"uint3", MIL_DT_UINT3}, {"uint4", MIL_DT_UINT4}, {"uint6", MIL_DT_UINT6},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(names[i].n, s) == 0) {
      *dt = names[i].dt;
      return true;
    }
  return false;
}

static mil_status infer_make_list(mil_infer_ctx *c) {
  const char *ds = op_str(c, "dtype", "fp32");
  mil_dtype dt;
  if (!dtype_by_name(ds, &dt)) return op_fail(c, "input 'dtype' must name a dtype, got \"%s\"", ds);
  const mil_input *es = op_input(c, "elem_shape");
  int32_t rank = es ? es->n_args : 0;
  if (rank > OP_MAX_RANK) return op_fail(c, "input 'elem_shape' has %d entries, more than supported", rank);
  mil_dim dims[OP_MAX_RANK];
  for (int32_t i = 0; i < rank; i++) {
    const mil_arg *a = &es->args[i];
    const mil_value *v = a->value ? a->value : a->use.var ? a->use.var->val : NULL;
    if (!v || v->kind != MIL_VAL_TENSOR || v->numel < 1)
      return op_fail(c, "input 'elem_shape' must be a tuple of consts; entry %d (%%%s) is not", i,
                     a->use.var ? a->use.var->name : "?");
    if (v->type->dtype == MIL_DT_STRING) /* a named symbol */
      dims[i] = (mil_dim){-1, mil_program_intern(c->prog, mil_value_get_str(v, 0), (size_t)-1), false};
    else dims[i] = op_dim(mil_value_get_i64(v, 0));
  }
  const mil_type *elem = op_tensor(c, dt, rank, rank ? dims : NULL);
  bool dynamic = op_bool(c, "dynamic_length", true);
  mil_dim len = {-1, NULL, false};
  if (!dynamic) {
    const mil_value *iv = op_val(c, "init_length");
    len = op_has(c, "init_length") ? (iv && iv->kind == MIL_VAL_TENSOR ? op_dim(mil_value_get_i64(iv, 0)) : len)
                                   : op_dim(1);
  }
  op_set_out(c, 0, list_of(c, elem, len));
  return MIL_OK;
}

static mil_status defaults_make_list(mil_infer_ctx *c) {
  mil_status st = op_add_default_int(c, "init_length", 1);
  if (st == MIL_OK) st = op_add_default_bool(c, "dynamic_length", true);
  if (st == MIL_OK) st = op_add_default_str(c, "dtype", "fp32");
  return st;
}

static mil_status infer_list_length(mil_infer_ctx *c) {
  op_set_out(c, 0, op_scalar(c, MIL_DT_INT32));
  return MIL_OK;
}

static mil_status fold_list_length(mil_infer_ctx *c) {
  const mil_type *ls = op_type(c, "ls");
  if (!ls || ls->length.size < 0) return MIL_OK;
  c->val[0] = mil_value_new_scalar_i64(c->prog, MIL_DT_INT32, ls->length.size);
  return c->val[0] ? MIL_OK : MIL_ERR_NOMEM;
}

static bool elem_unknown(const mil_type *e) { return !e || e->kind == MIL_TYPE_UNKNOWN; }

static mil_status infer_list_write(mil_infer_ctx *c) {
  const mil_type *ls = op_type(c, "ls"), *v = op_type(c, "value");
  if (elem_unknown(ls->elem)) {
    op_set_out(c, 0, list_of(c, v, ls->length));
    return MIL_OK;
  }
  if (!is_subtype(v, ls->elem))
    return op_fail(c, "input 'value' is %s but the list holds %s", op_tstr(c, v), op_tstr(c, ls->elem));
  op_set_out(c, 0, ls);
  return MIL_OK;
}

static mil_status infer_list_read(mil_infer_ctx *c) {
  const mil_type *ls = op_type(c, "ls");
  if (!ls->elem) return op_fail(c, "input 'ls' has an unknown element type (the list may never have been written)");
  op_set_out(c, 0, ls->elem);
  return MIL_OK;
}

static mil_status infer_list_gather(mil_infer_ctx *c) {
  const mil_type *ls = op_type(c, "ls"), *idx = op_type(c, "indices");
  if (elem_unknown(ls->elem))
    return op_fail(c, "input 'ls' has an unknown element type (the list may never have been written)");
  if (idx->rank < 1) return op_fail(c, "input 'indices' must be at least rank 1, got %s", op_tstr(c, idx));
  const mil_type *e = ls->elem;
  if (e->kind != MIL_TYPE_TENSOR || e->rank < 0 || e->rank + 1 > OP_MAX_RANK)
    return op_fail(c, "input 'ls' must hold tensors of known rank, got %s", op_tstr(c, ls));
  mil_dim dims[OP_MAX_RANK];
  dims[0] = idx->dims[0];
  for (int32_t i = 0; i < e->rank; i++) dims[i + 1] = e->dims[i];
  op_set_out(c, 0, op_tensor(c, e->dtype, e->rank + 1, dims));
  return MIL_OK;
}

static bool same_dim(const mil_dim *a, const mil_dim *b) {
  if (a->size >= 0 || b->size >= 0) return a->size == b->size;
  return a->sym && b->sym && strcmp(a->sym, b->sym) == 0;
}

static mil_status infer_list_scatter(mil_infer_ctx *c) {
  const mil_type *ls = op_type(c, "ls"), *idx = op_type(c, "indices"), *v = op_type(c, "value");
  if (idx->rank < 1) return op_fail(c, "input 'indices' must be at least rank 1, got %s", op_tstr(c, idx));
  if (v->rank < 1) return op_fail(c, "input 'value' must be at least rank 1, got %s", op_tstr(c, v));
  if (!same_dim(&idx->dims[0], &v->dims[0]))
    return op_fail(c, "cannot scatter %s values to %s indices (value %s, indices %s)",
                   v->dims[0].size >= 0 ? "a different number of" : "an unknown number of",
                   idx->dims[0].size >= 0 ? "these" : "unknown", op_tstr(c, v), op_tstr(c, idx));
  const mil_type *elem = op_tensor(c, v->dtype, v->rank - 1, v->rank > 1 ? v->dims + 1 : NULL);
  if (elem_unknown(ls->elem)) {
    op_set_out(c, 0, list_of(c, elem, ls->length));
    return MIL_OK;
  }
  if (!is_subtype(elem, ls->elem))
    return op_fail(c, "elements of input 'value' are %s but the list holds %s", op_tstr(c, elem),
                   op_tstr(c, ls->elem));
  op_set_out(c, 0, ls);
  return MIL_OK;
}

const mil_op_def op_defs_control_flow[] = {
    {"_const_symbolic", MIL_IOS13, "control_flow", k_const_in, 1, 1, infer_const_symbolic, fold_const, NULL,
     "a constant holding a symbolic value (coremltools-internal)"},
    {"cond", MIL_IOS13, "control_flow", k_cond_in, 4, -1, infer_cond, fold_cond, NULL,
     "runs the true or the false block depending on pred; outputs are the branch's outputs"},
    {"const", MIL_IOS13, "control_flow", k_const_in, 1, 1, infer_const, fold_const, NULL,
     "a compile-time constant value"},
    {"list_gather", MIL_IOS13, "control_flow", k_list_gather_in, 2, 1, infer_list_gather, NULL, NULL,
     "stacks the list elements at indices into a tensor"},
    {"list_length", MIL_IOS13, "control_flow", k_list_length_in, 1, 1, infer_list_length, fold_list_length, NULL,
     "number of elements of a list (int32 scalar)"},
    {"list_read", MIL_IOS13, "control_flow", k_list_read_in, 2, 1, infer_list_read, NULL, NULL,
     "the list element at index"},
    {"list_scatter", MIL_IOS13, "control_flow", k_list_scatter_in, 3, 1, infer_list_scatter, NULL, NULL,
     "writes the slices of value into the list at indices"},
    {"list_write", MIL_IOS13, "control_flow", k_list_write_in, 3, 1, infer_list_write, NULL, NULL,
     "writes value into the list at index"},
    {"make_list", MIL_IOS13, "control_flow", k_make_list_in, 4, 1, infer_make_list, NULL, defaults_make_list,
     "a new list of tensors of dtype and elem_shape"},
    {"select", MIL_IOS13, "control_flow", k_select_in, 3, 1, infer_select, fold_select, NULL,
     "a where cond else b (a and b broadcast)"},
    {"while_loop", MIL_IOS13, "control_flow", k_while_in, 4, -1, infer_while, NULL, NULL,
     "repeats the body block while the cond block returns true; outputs are the final loop vars"},
};
OP_FAMILY_COUNT(control_flow);
