/* common::reduce_transposes: the axis-update ops, which a transpose can
 * pass once one of their parameters is rewritten (an axis, axes, the pad
 * amounts, a constant or reshaped second operand). See reduce_transposes.c.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_repeat_ops.py
 * (_TransformConcat, _TransformSplit, _TransformPad, _TransformReduceMean,
 * _TransformAdd, TransformAxisUpdateOps._find_transpose_compliment).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/reduce_transposes_internal.h"

int rt_axis_kind(const mil_op *op) {
  static const char *const reduces[] = {"reduce_l1_norm",  "reduce_l2_norm", "reduce_max",  "reduce_log_sum",
                                        "reduce_log_sum_exp", "reduce_mean", "reduce_min", "reduce_prod",
                                        "reduce_sum",      "reduce_sum_square"};
  static const char *const binaries[] = {"add", "mul", "sub", "real_div", "maximum", "minimum"};
  if (strcmp(op->type, "concat") == 0) return RT_K_CONCAT;
  if (strcmp(op->type, "split") == 0) return RT_K_SPLIT;
  if (strcmp(op->type, "pad") == 0) return RT_K_PAD;
  for (size_t i = 0; i < sizeof reduces / sizeof reduces[0]; i++)
    if (strcmp(op->type, reduces[i]) == 0) return RT_K_REDUCE;
  for (size_t i = 0; i < sizeof binaries / sizeof binaries[0]; i++)
    if (strcmp(op->type, binaries[i]) == 0) return RT_K_BINARY;
  return RT_K_OTHER;
}

void rt_rebind(mil_op *op, mil_var *old, mil_var *new_var) {
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t a = 0; a < op->inputs[i].n_args; a++)
      if (op->inputs[i].args[a].use.var == old) mil_arg_set_var(op, &op->inputs[i].args[a], new_var);
}

/* perm with negative entries made positive; false when out of range */
static bool norm_perm(const int64_t *perm, int32_t rank, int64_t *out) {
  for (int32_t i = 0; i < rank; i++)
    if ((out[i] = rt_pyindex(perm[i], rank)) < 0) return false;
  return true;
}

/* _find_transpose_compliment: the inverse permutation. */
static bool inverse_perm(const int64_t *perm, int32_t rank, int64_t *inv) {
  int64_t p[RT_MAX_RANK];
  if (!norm_perm(perm, rank, p)) return false;
  for (int32_t i = 0; i < rank; i++) inv[i] = -1;
  for (int32_t i = 0; i < rank; i++) {
    if (inv[p[i]] >= 0) return false;
    inv[p[i]] = i;
  }
  return true;
}

/* numpy transpose of value v read with shape `shape` (rank r) by perm p
 * (positive); NULL when the dtype has no fixed byte size or on OOM. */
static mil_value *transpose_value(mil_program *prog, const mil_value *v, const int64_t *shape, int32_t r,
                                  const int64_t *p) {
  mil_dtype dt = v->type->dtype;
  size_t es = mil_dtype_size(dt);
  if (!es || dt == MIL_DT_STRING) return NULL;
  int64_t oshape[RT_MAX_RANK], istride[RT_MAX_RANK], numel = 1;
  for (int32_t i = 0; i < r; i++) {
    oshape[i] = shape[p[i]];
    numel *= shape[i];
  }
  if (numel != v->numel) return NULL;
  for (int32_t i = r - 1, s = 1; i >= 0; i--) {
    istride[i] = s;
    s *= (int32_t)shape[i];
  }
  mil_value *o = mil_value_new_tensor(prog, dt, r, oshape, r == 0 && v->type->is_scalar, NULL);
  uint8_t *dst = o ? mil_value_data_mut(o) : NULL;
  if (!dst) return NULL;
  const uint8_t *src = mil_value_data(v);
  int64_t idx[RT_MAX_RANK] = {0};
  for (int64_t k = 0; k < numel; k++) {
    int64_t off = 0;
    for (int32_t i = 0; i < r; i++) off += idx[i] * istride[p[i]];
    memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
    for (int32_t i = r - 1; i >= 0; i--) {
      if (++idx[i] < oshape[i]) break;
      idx[i] = 0;
    }
  }
  return o;
}

/* mb.const(val=v, before_op=op) ("const_<k>") rebound in op for old. */
static int new_const_for(rt_ctx *t, mil_op *op, mil_var *old, const mil_value *v) {
  if (!v) return pass_t_oom(t->c);
  const char *name = rt_fresh(t, "const");
  mil_op *k = name ? mil_const_new(t->c->p, name, v) : NULL;
  if (!k || k->n_outputs != 1) return pass_t_oom(t->c);
  mil_block_insert_before(op, k);
  if (!rt_name_add(t, k->outputs[0]->name)) return pass_t_oom(t->c);
  if (old) rt_rebind(op, old, k->outputs[0]);
  return 0;
}

/* ---------- concat / split ---------- */

static bool concat_can_pass(rt_ctx *t, mil_op *op) {
  mil_var *ins[1024];
  int32_t n = rt_input_vars(op, true, ins, 1024);
  if (n > 1024) return false;
  for (int32_t i = 0; i < n; i++) {
    rt_hv *h = rt_hv_get(t, ins[i]);
    if (!h || !h->lazy) return false;
  }
  const mil_value *a = pass_input_value(op, "axis");
  return a && a->numel == 1;
}

static int concat_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank, bool consts) {
  mil_var *axis_var = mil_op_input_var(op, "axis");
  const mil_value *av = pass_input_value(op, "axis");
  int64_t ai = av ? rt_pyindex(mil_value_get_i64(av, 0), rank) : -1;
  if (ai < 0) return 0;
  int64_t new_axis = perm[ai];
  if (consts) {
    int64_t inv[RT_MAX_RANK], p[RT_MAX_RANK];
    if (!norm_perm(perm, rank, p)) return 0;
    for (int32_t i = 0; i < rank; i++) inv[p[i]] = i;
    const mil_input *vals = mil_op_find_input(op, "values");
    int32_t n = vals ? vals->n_args : 0;
    mil_var **snap = calloc((size_t)n + 1, sizeof *snap);
    if (!snap) return pass_t_oom(t->c);
    for (int32_t i = 0; i < n; i++) snap[i] = vals->args[i].use.var;
    for (int32_t i = 0; i < n; i++) {
      mil_var *v = snap[i];
      if (!v || !v->op || !mil_op_is_const(v->op) || !v->val || pass_t_rank(v) != rank) continue;
      int64_t shape[RT_MAX_RANK];
      for (int32_t d = 0; d < rank; d++) shape[d] = v->type->dims[d].size;
      int r = new_const_for(t, op, v, transpose_value(t->c->p, v->val, shape, rank, inv));
      if (r < 0) {
        free(snap);
        return r;
      }
    }
    free(snap);
  }
  return new_const_for(t, op, axis_var, pass_t_i32(t->c->p, new_axis));
}

/* ---------- pad ---------- */

/* _compute_new_pad_values; false when the pad cannot follow the transpose. */
static bool new_pads(const mil_op *op, const int64_t *perm, int32_t rank, int64_t *out, int64_t *n_out) {
  int64_t pad[2 * RT_MAX_RANK], np;
  if (!pass_t_ints(op, "pad", pad, 2 * RT_MAX_RANK, &np) || np % 2 != 0) return false;
  int64_t rows = np / 2, diff = rank - rows;
  if (diff < 0) return false;
  int64_t full[2 * RT_MAX_RANK] = {0}, moved[2 * RT_MAX_RANK] = {0};
  for (int64_t i = 0; i < np; i++) full[2 * diff + i] = pad[i];
  memcpy(moved, full, sizeof moved);
  for (int32_t i = 0; i < rank; i++) {
    int64_t ax = rt_pyindex(perm[i], rank);
    if (ax < 0) return false;
    moved[2 * ax] = full[2 * i];
    moved[2 * ax + 1] = full[2 * i + 1];
  }
  for (int64_t i = 0; i < 2 * diff; i++)
    if (moved[i] != 0) return false;
  *n_out = np;
  memcpy(out, moved + 2 * diff, (size_t)np * sizeof *out);
  return true;
}

static bool pad_can_pass(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank) {
  mil_var *ins[8];
  mil_var *pv = mil_op_input_var(op, "pad");
  if (rt_input_vars(op, true, ins, 8) != 1 || !pv || !pv->op || !mil_op_is_const(pv->op)) return false;
  if (rank < 2) return false;
  int64_t np[2 * RT_MAX_RANK], n;
  if (!new_pads(op, perm, rank, np, &n)) return false;
  const char *mode = pass_t_str_input(op, "mode");
  if (mode && strcmp(mode, "constant") != 0)
    for (int64_t i = 0; i + 4 < n; i++)
      if (np[i] != 0) return false;
  return true;
}

static int pad_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank) {
  int64_t np[2 * RT_MAX_RANK], n;
  mil_var *pv = mil_op_input_var(op, "pad");
  if (!pv || !pv->val || !new_pads(op, perm, rank, np, &n)) return 0;
  mil_value *v = mil_value_new_tensor(t->c->p, pv->val->type->dtype, 1, &n, false, NULL);
  if (!v) return pass_t_oom(t->c);
  for (int64_t i = 0; i < n; i++) mil_value_set_i64(v, i, np[i]);
  return new_const_for(t, op, pv, v);
}

/* ---------- reductions ---------- */

static bool reduce_can_pass(const mil_op *op) {
  const mil_value *kd = pass_input_value(op, "keep_dims");
  mil_var *axes = mil_op_input_var(op, "axes");
  if (!kd || kd->numel != 1 || !mil_value_get_i64(kd, 0)) return false;
  return axes && axes->op && mil_op_is_const(axes->op);
}

static int reduce_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank) {
  int64_t axes[RT_MAX_RANK], n;
  mil_var *av = mil_op_input_var(op, "axes");
  if (!av || !pass_t_ints(op, "axes", axes, RT_MAX_RANK, &n)) return 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = rt_pyindex(axes[i], rank);
    if (k < 0) return 0;
    axes[i] = perm[k];
  }
  return new_const_for(t, op, av, pass_t_i32s(t->c->p, n, axes));
}

/* ---------- binary elementwise ops ---------- */

typedef struct binary_roles {
  mil_var *transpose_input, *other; /* other == NULL: both inputs lazy */
} binary_roles;

static bool binary_roles_of(rt_ctx *t, const mil_op *op, binary_roles *br) {
  mil_var *x = mil_op_input_var(op, "x"), *y = mil_op_input_var(op, "y");
  if (!x || !y) return false;
  rt_hv *hx = rt_hv_get(t, x), *hy = rt_hv_get(t, y);
  if (!hx || !hy) return false;
  if (hx->lazy && hy->lazy) *br = (binary_roles){x, NULL};
  else if (hy->lazy) *br = (binary_roles){y, x};
  else if (hx->lazy) *br = (binary_roles){x, y};
  else return false;
  return true;
}

/* other's shape with leading 1s up to rank; false when not fully known */
static bool padded_shape(const mil_var *v, int32_t rank, int64_t *shape) {
  int32_t r = pass_t_rank(v);
  if (r < 0 || r > rank || !pass_t_static(v)) return false;
  for (int32_t i = 0; i < rank - r; i++) shape[i] = 1;
  for (int32_t i = 0; i < r; i++) shape[rank - r + i] = v->type->dims[i].size;
  return true;
}

static bool binary_can_pass(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t prank) {
  binary_roles br;
  if (!binary_roles_of(t, op, &br)) return false;
  if (!br.other) return true;
  int32_t rank = pass_t_rank(br.transpose_input);
  if (rank < 0 || prank != rank) return false;
  int64_t shape[RT_MAX_RANK];
  if (!padded_shape(br.other, rank, shape)) return false;
  if (br.other->val) return true;
  int64_t inv[RT_MAX_RANK];
  if (!inverse_perm(perm, rank, inv)) return false;
  int32_t ones = 0;
  for (int32_t i = 0; i < rank; i++) ones += shape[i] == 1;
  if (ones == rank || ones == rank - 1) return true;
  for (int32_t i = 0; i < rank; i++)
    if (i != inv[i] && shape[inv[i]] != 1) return false;
  return true;
}

static int binary_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t prank) {
  binary_roles br;
  if (!binary_roles_of(t, op, &br) || !br.other) return 0;
  if (pass_t_rank(br.other) == 0) return 0;
  int32_t rank = pass_t_rank(br.transpose_input);
  int64_t shape[RT_MAX_RANK], inv[RT_MAX_RANK], new_shape[RT_MAX_RANK];
  if (rank < 0 || !padded_shape(br.other, rank, shape) || !inverse_perm(perm, rank, inv)) return 0;
  for (int32_t i = 0; i < rank; i++) new_shape[i] = shape[inv[i]];
  if (br.other->val)
    return new_const_for(t, op, br.other, transpose_value(t->c->p, br.other->val, shape, rank, inv));
  mil_op *rs = rt_new_op(t, op, "reshape", NULL);
  if (!rs) return pass_t_oom(t->c);
  pass_t_var(rs, "x", br.other);
  if (!rt_const_input(t, rs, "shape", pass_t_i32s(t->c->p, rank, new_shape))) return pass_t_oom(t->c);
  mil_status st = rt_finish_op(t, rs);
  if (st != MIL_OK) return -(int)st;
  rt_rebind(op, br.other, rs->outputs[0]);
  return 0;
}

/* ---------- dispatch ---------- */

bool rt_axis_can_pass(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank) {
  switch (rt_kind(t, op)) {
  case RT_K_CONCAT:
  case RT_K_SPLIT:
    return concat_can_pass(t, op);
  case RT_K_PAD:
    return pad_can_pass(t, op, perm, rank);
  case RT_K_REDUCE:
    return reduce_can_pass(op);
  case RT_K_BINARY:
    return binary_can_pass(t, op, perm, rank);
  default:
    return false;
  }
}

int rt_axis_update(rt_ctx *t, mil_op *op, const int64_t *perm, int32_t rank) {
  switch (rt_kind(t, op)) {
  case RT_K_CONCAT:
    return concat_update(t, op, perm, rank, true);
  case RT_K_SPLIT:
    return concat_update(t, op, perm, rank, false);
  case RT_K_PAD:
    return pad_update(t, op, perm, rank);
  case RT_K_REDUCE:
    return reduce_update(t, op, perm, rank);
  case RT_K_BINARY:
    return binary_update(t, op, perm, rank);
  default:
    return 0;
  }
}
