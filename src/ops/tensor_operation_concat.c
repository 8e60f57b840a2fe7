/* concat, split, stack, tile and pad of the tensor_operation family.
 * Mirrors coremltools ops/defs/iOS15/tensor_operation.py. */
#include <string.h>

#include "ops/ops_defaults.h"
#include "ops/tensor_operation_internal.h"

static const mil_type *arg_type(const mil_arg *a) {
  return a->value ? a->value->type : a->use.var ? a->use.var->type : NULL;
}

static const mil_value *arg_val(const mil_arg *a) {
  return a->value ? a->value : a->use.var ? a->use.var->val : NULL;
}

/* ---- concat ---- */

mil_status to_infer_concat(mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  int64_t axis;
  bool interleave;
  if (!in || in->n_args == 0) return op_fail(c, "Concat %s got 0 values", c->op->name);
  if (!op_need_int(c, "axis", &axis) || !op_bool_or(c, "interleave", false, &interleave)) return MIL_ERR_TYPE;
  const mil_type *t0 = arg_type(&in->args[0]);
  for (int32_t i = 0; i < in->n_args; i++) {
    const mil_type *t = arg_type(&in->args[i]);
    if (!t || t->kind != MIL_TYPE_TENSOR)
      return op_fail(c, "input 'values'[%d] must be a tensor, got %s", i, op_tstr(c, t));
    if (t->rank != t0->rank)
      return op_fail(c, "Input values[%d] has rank %d != other inputs rank %d", i, t->rank, t0->rank);
  }
  int32_t rank = t0->rank;
  if (rank > TOP_RANK) return op_fail(c, "input 'values' has rank %d, larger than supported (%d)", rank, TOP_RANK);
  if (rank < 0) {
    op_set_out(c, 0, op_tensor(c, t0->dtype, -1, NULL));
    return MIL_OK;
  }
  int64_t ax = axis < 0 ? axis + rank : axis;
  if (rank > 0 && (ax < 0 || ax >= rank))
    return op_fail(c, "In %s of op_type concat: axis %lld out of bound for input (rank %d)", c->op->name,
                   (long long)axis, rank);
  for (int32_t i = 1; i < in->n_args; i++)
    if (arg_type(&in->args[i])->dtype != t0->dtype)
      return op_fail(c, "Tensors in 'values' of the concat op (%s) should share the same data type. Got %s and %s.",
                     c->op->name, mil_dtype_name(t0->dtype), mil_dtype_name(arg_type(&in->args[i])->dtype));
  mil_dim ret[TOP_RANK];
  for (int32_t d = 0; d < rank; d++) ret[d] = t0->dims[d];
  for (int32_t i = 1; i < in->n_args; i++) {
    const mil_type *t = arg_type(&in->args[i]);
    for (int32_t d = 0; d < rank; d++) {
      if (ret[d].size < 0 || t->dims[d].size < 0) continue;
      if (d != ax && ret[d].size != t->dims[d].size)
        return op_fail(c, "Dimension mismatch in concat (\"%s\"): shapes %s vs. %s", c->op->name, op_tstr(c, t0),
                       op_tstr(c, t));
      if (interleave && ret[d].size != t->dims[d].size)
        return op_fail(c,
                       "Dimension mismatch in concat (\"%s\"): shapes %s vs. %s. All inputs must have same shape when "
                       "'interleave' option is True.",
                       c->op->name, op_tstr(c, t0), op_tstr(c, t));
    }
  }
  mil_dim len = op_dim(0);
  for (int32_t i = 0; i < in->n_args; i++) {
    const mil_type *t = arg_type(&in->args[i]);
    mil_dim tax = t->rank == 0 ? op_dim(1) : t->dims[ax];
    if (tax.size < 0) {
      len = op_dim_sym(c);
      break;
    }
    len.size += tax.size;
  }
  if (rank == 0) {
    op_set_out(c, 0, op_tensor(c, t0->dtype, 1, &len));
  } else {
    ret[ax] = len;
    op_set_out(c, 0, op_tensor(c, t0->dtype, rank, ret));
  }
  return MIL_OK;
}

mil_status to_fold_concat(mil_infer_ctx *c) {
  bool interleave;
  const mil_input *in = op_input(c, "values");
  if (!op_bool_or(c, "interleave", false, &interleave)) return MIL_OK;
  if (interleave) return MIL_OK; /* coremltools would fold it as a plain concat, which is wrong: leave it */
  bool known = true;
  for (int32_t i = 0; i < in->n_args && known; i++) known = arg_val(&in->args[i]) != NULL;
  if (!known) return op_fold_symbolic(c);
  int64_t oshape[TOP_RANK];
  int32_t orank;
  mil_dtype dt = c->out[0]->dtype;
  if (!op_static_shape(c->out[0], oshape, &orank) || !op_foldable_dtype(dt)) return MIL_OK;
  int64_t axis;
  if (!op_known_int(c, "axis", &axis)) return MIL_OK;
  if (axis < 0) axis += orank;
  if (axis < 0 || axis >= orank) return MIL_OK;
  int64_t outer = op_numel((int32_t)axis, oshape);
  mil_value *v = op_new_value(c, dt, orank, oshape, false);
  if (!v) return MIL_OK;
  int64_t k = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int32_t i = 0; i < in->n_args; i++) {
      const mil_value *x = arg_val(&in->args[i]);
      if (x->type->dtype != dt) return MIL_OK;
      int64_t chunk = outer ? x->numel / outer : 0;
      for (int64_t j = 0; j < chunk && k < v->numel; j++) op_copy_elem(v, k++, x, o * chunk + j);
    }
  if (k == v->numel) op_set_val(c, 0, v);
  return MIL_OK;
}

mil_status to_defaults_concat(mil_infer_ctx *c) { return op_add_default_bool(c, "interleave", false); }

/* ---- split ---- */

/* coremltools' _get_num_splits_and_sizes. sizes[i] are dims. */
static mil_status split_sizes(mil_infer_ctx *c, const mil_type *x, int64_t axis, int *nsplit, mil_dim *sizes, int max) {
  bool has_n = op_has(c, "num_splits"), has_s = op_has(c, "split_sizes");
  if (!has_n && !has_s)
    return op_fail(c, "At least one of num_splits and split_sizes must be specified in split op %s", c->op->name);
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_ERR_NOMEM;
  bool have_sv = has_s && op_in_symval(c, "split_sizes", 0, sv);
  mil_status rc = MIL_OK;
  if (has_n) {
    int64_t n;
    if (!op_need_int(c, "num_splits", &n)) goto fail;
    if (n <= 0 || n > max) {
      rc = op_fail(c, "input 'num_splits' must be in [1, %d], got %lld", max, (long long)n);
      goto out;
    }
    *nsplit = (int)n;
    if (!has_s) {
      mil_dim d = x->dims[axis];
      if (d.size >= 0 && d.size % n != 0) {
        rc = op_fail(c, "num_split %lld does not divide split dim (length = %lld)", (long long)n, (long long)d.size);
        goto out;
      }
      for (int i = 0; i < n; i++) sizes[i] = d.size >= 0 ? op_dim(d.size / n) : (n == 1 ? d : op_dim_sym(c));
    } else if (have_sv) {
      if (sv->n > n) {
        rc = op_fail(c, "input 'split_sizes' has %lld entries, more than num_splits (%lld)", (long long)sv->n,
                     (long long)n);
        goto out;
      }
      for (int i = 0; i < n; i++) sizes[i] = i < sv->n ? op_sym_dim(c, &sv->e[i]) : x->dims[axis];
    } else {
      for (int i = 0; i < n; i++) sizes[i] = op_dim_sym(c);
    }
    goto out;
  }
  if (have_sv) {
    if (sv->n > max || sv->n == 0) {
      rc = op_fail(c, "input 'split_sizes' must have between 1 and %d entries, got %lld", max, (long long)sv->n);
      goto out;
    }
    *nsplit = (int)sv->n;
    for (int64_t i = 0; i < sv->n; i++) sizes[i] = op_sym_dim(c, &sv->e[i]);
    goto out;
  }
  const mil_type *st = op_type(c, "split_sizes");
  for (int32_t d = 0; d < st->rank; d++)
    if (st->dims[d].size < 0) {
      rc = op_fail(c, "Unable to determine number of splits");
      goto out;
    }
  /* coremltools counts the rank of split_sizes here */
  *nsplit = st->rank > 0 ? st->rank : 1;
  for (int i = 0; i < *nsplit; i++) sizes[i] = op_dim_sym(c);
  goto out;
fail:
  rc = MIL_ERR_TYPE;
out:
  op_tmp_free(c, sv, sizeof *sv);
  return rc;
}

mil_status to_infer_split(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  int64_t axis;
  if (!op_need_rank(c, "x", x) || !op_need_int(c, "axis", &axis)) return MIL_ERR_TYPE;
  if (axis < -x->rank || axis >= x->rank)
    return op_fail(c, "input 'axis' (%lld) is out of range for %s", (long long)axis, op_tstr(c, x));
  if (axis < 0) axis += x->rank;
  int n = 0;
  mil_dim sizes[64];
  mil_status st = split_sizes(c, x, axis, &n, sizes, 64);
  if (st) return st;
  if ((st = to_set_n_out(c, n))) return st;
  mil_dim d[TOP_RANK];
  for (int32_t k = 0; k < x->rank; k++) d[k] = x->dims[k];
  for (int i = 0; i < n; i++) {
    d[axis] = sizes[i];
    op_set_out(c, i, op_tensor(c, x->dtype, x->rank, d));
  }
  return MIL_OK;
}

mil_status to_fold_split(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  if (!x) return op_fold_symbolic(c);
  int64_t shape[TOP_RANK], axis, off = 0;
  int32_t rank;
  if (!op_foldable_dtype(x->type->dtype) || !op_known_int(c, "axis", &axis)) return MIL_OK;
  if (!op_value_shape(x, shape, &rank)) return MIL_OK;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return MIL_OK;
  int64_t sizes[64];
  for (int32_t i = 0; i < c->n_out; i++) {
    const mil_type *t = c->out[i];
    if (!mil_type_is_static(t) || t->rank != rank) return MIL_OK;
    sizes[i] = t->dims[axis].size;
    off += sizes[i];
  }
  if (off != shape[axis]) return MIL_OK;
  off = 0;
  for (int32_t i = 0; i < c->n_out; i++) {
    int64_t start[TOP_RANK] = {0}, step[TOP_RANK], len[TOP_RANK];
    for (int32_t d = 0; d < rank; d++) {
      step[d] = 1;
      len[d] = d == axis ? sizes[i] : shape[d];
    }
    start[axis] = off;
    off += sizes[i];
    mil_value *v = op_value_slice(c, x->type->dtype, rank, shape, start, step, len, rank, len, false, x);
    if (v) {
      op_set_val(c, i, v);
      continue;
    }
    int64_t n = op_numel(rank, len);
    int64_t *map = op_tmp_alloc(c, (size_t)(n ? n : 1) * sizeof *map);
    if (!map) return MIL_OK;
    op_map_slice(rank, shape, start, step, len, map);
    op_set_val(c, i, op_value_from_map(c, x->type->dtype, rank, len, false, x, map, NULL));
    op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  }
  return MIL_OK;
}

/* ---- stack ---- */

static bool dims_compatible(const mil_type *a, const mil_type *b) {
  if (a->rank != b->rank) return false;
  for (int32_t d = 0; d < a->rank; d++)
    if (a->dims[d].size >= 0 && b->dims[d].size >= 0 && a->dims[d].size != b->dims[d].size) return false;
  return true;
}

mil_status to_infer_stack(mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  int64_t axis;
  if (!in || in->n_args == 0) return op_fail(c, "Cannot stack 0 tensor");
  if (!op_need_int(c, "axis", &axis)) return MIL_ERR_TYPE;
  const mil_type *ts = NULL;
  for (int32_t i = 0; i < in->n_args; i++) {
    const mil_type *t = arg_type(&in->args[i]);
    if (!t || t->kind != MIL_TYPE_TENSOR || t->rank < 0)
      return op_fail(c, "input 'values'[%d] must be a tensor of known rank, got %s", i, op_tstr(c, t));
    if (!ts && mil_type_is_static(t)) ts = t;
  }
  if (!ts) ts = arg_type(&in->args[0]);
  for (int32_t i = 0; i < in->n_args; i++) {
    const mil_type *t = arg_type(&in->args[i]);
    if (!dims_compatible(t, ts))
      return op_fail(c, "Component tensor values[%d] has shape %s, others have %s", i, op_tstr(c, t), op_tstr(c, ts));
    if (t->dtype != arg_type(&in->args[0])->dtype)
      return op_fail(c, "Tensors in 'values' of the stack op (%s) should share the same data type. Got %s and %s.",
                     c->op->name, mil_dtype_name(arg_type(&in->args[0])->dtype), mil_dtype_name(t->dtype));
  }
  int32_t rank = arg_type(&in->args[0])->rank;
  if (axis < 0) axis += rank + 1;
  if (axis > rank || axis < 0)
    return op_fail(c, "axis must in range [%d, %d). Got %lld", -rank, rank, (long long)axis);
  if (rank + 1 > TOP_RANK) return op_fail(c, "output rank is larger than supported (%d)", TOP_RANK);
  mil_dim d[TOP_RANK];
  for (int32_t i = 0, k = 0; i <= rank; i++) d[i] = i == axis ? op_dim(in->n_args) : ts->dims[k++];
  op_set_out(c, 0, op_tensor(c, arg_type(&in->args[0])->dtype, rank + 1, d));
  return MIL_OK;
}

mil_status to_fold_stack(mil_infer_ctx *c) {
  const mil_input *in = op_input(c, "values");
  for (int32_t i = 0; i < in->n_args; i++)
    if (!arg_val(&in->args[i])) return op_fold_symbolic(c);
  int64_t oshape[TOP_RANK], axis;
  int32_t orank;
  mil_dtype dt = c->out[0]->dtype;
  if (!op_static_shape(c->out[0], oshape, &orank) || !op_foldable_dtype(dt) || !op_known_int(c, "axis", &axis))
    return MIL_OK;
  if (axis < 0) axis += orank;
  int64_t outer = op_numel((int32_t)axis, oshape);
  mil_value *v = op_new_value(c, dt, orank, oshape, false);
  if (!v) return MIL_OK;
  int64_t k = 0;
  for (int64_t o = 0; o < outer; o++)
    for (int32_t i = 0; i < in->n_args; i++) {
      const mil_value *x = arg_val(&in->args[i]);
      if (x->type->dtype != dt) return MIL_OK;
      int64_t inner = outer ? x->numel / outer : 0;
      for (int64_t j = 0; j < inner && k < v->numel; j++) op_copy_elem(v, k++, x, o * inner + j);
    }
  if (k == v->numel) op_set_val(c, 0, v);
  return MIL_OK;
}

/* ---- tile ---- */

mil_status to_infer_tile(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x");
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_ERR_NOMEM;
  mil_dim d[TOP_RANK];
  mil_status rc = MIL_OK;
  if (!op_in_symval(c, "reps", 0, sv)) {
    for (int32_t i = 0; i < x->rank; i++) d[i] = op_dim_sym(c);
  } else if (sv->n == 0 || sv->n != x->rank) {
    rc = op_fail(c, "Length of the reps (%lld) must be at least 1, and equal to the rank of the input x (%d)",
                 (long long)sv->n, x->rank);
  } else {
    for (int32_t i = 0; i < x->rank && !rc; i++) {
      const op_sym *r = &sv->e[i];
      if (r->kind != OP_SYM_KNOWN) d[i] = op_dim_sym(c);
      else if (r->x <= 0) rc = op_fail(c, "All entries of reps parameter must be greater than 0, got %lld", (long long)op_sym_i64(r->x));
      else if (x->dims[i].size < 0) d[i] = r->x == 1 ? x->dims[i] : op_dim_sym(c);
      else d[i] = op_dim_mul(c, x->dims[i], op_sym_i64(r->x));
    }
  }
  op_tmp_free(c, sv, sizeof *sv);
  if (!rc) op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return rc;
}

mil_status to_fold_tile(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t xs[TOP_RANK], os[TOP_RANK], st[TOP_RANK];
  int32_t xr, orank;
  if (!x || !op_foldable_dtype(x->type->dtype) || !op_static_shape(c->out[0], os, &orank)) return MIL_OK;
  if (!op_value_shape(x, xs, &xr)) return MIL_OK;
  if (xr != orank || !op_in_known(c, "reps")) return MIL_OK;
  int64_t n = op_numel(orank, os);
  int64_t *map = op_tmp_alloc(c, (size_t)(n ? n : 1) * sizeof *map);
  if (!map) return MIL_OK;
  op_strides(xr, xs, st);
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k, src = 0;
    for (int32_t d = orank - 1; d >= 0; d--) {
      int64_t i = rem % os[d];
      rem /= os[d];
      src += (i % xs[d]) * st[d];
    }
    map[k] = src;
  }
  op_set_val(c, 0, op_value_from_map(c, x->type->dtype, orank, os, false, x, map, NULL));
  op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  return MIL_OK;
}

/* ---- pad ---- */

mil_status to_infer_pad(mil_infer_ctx *c) {
  const mil_type *x = op_type(c, "x"), *pt = op_type(c, "pad");
  if (!op_need_rank(c, "x", x)) return MIL_ERR_TYPE;
  if (pt->rank != 1) return op_fail(c, "Pad should be a 1D tensor! Got %s", op_tstr(c, pt));
  const char *mode = op_str(c, "mode", "constant");
  if (op_has(c, "mode") && !op_val(c, "mode")) return op_fail(c, "input 'mode' must be a known string");
  if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "replicate"))
    return op_fail(c, "Pad mode should be one of {'constant', 'reflect', 'replicate'}, got \"%s\"", mode);
  int64_t P = pt->dims[0].size;
  op_symval *sv = op_tmp_alloc(c, sizeof *sv);
  if (!sv) return MIL_ERR_NOMEM;
  bool have = op_in_symval(c, "pad", 0, sv);
  bool known = have && !op_symval_has_sym(sv);
  mil_status rc = MIL_OK;
  mil_dim d[TOP_RANK];
  for (int32_t i = 0; i < x->rank; i++) d[i] = x->dims[i];
  if (!known && P != 2 * (int64_t)x->rank) {
    rc = op_fail(c, "Non-constant 'pad' must have shape (%d,). Got %s", 2 * x->rank, op_tstr(c, pt));
  } else if (!have) {
    for (int64_t i = 0; i < P / 2; i++) d[x->rank - P / 2 + i] = op_dim_sym(c);
  } else if (sv->n % 2 != 0) {
    rc = op_fail(c, "Number of elements in the argument Pad must be divisible by 2, got %lld", (long long)sv->n);
  } else if (sv->n / 2 > x->rank) {
    rc = op_fail(c,
                 "Number of dimensions specified through pad must less than or equal to rank of input x (%lld pairs "
                 "for rank %d)",
                 (long long)(sv->n / 2), x->rank);
  } else {
    for (int64_t i = 0; i < sv->n && !rc; i++)
      if (sv->e[i].kind == OP_SYM_KNOWN && sv->e[i].x < 0)
        rc = op_fail(c, "pad must be non-negative integer, got %lld at index %lld", (long long)op_sym_i64(sv->e[i].x), (long long)i);
    int64_t np_ = sv->n / 2;
    for (int64_t i = 0; i < np_ && !rc; i++) {
      const op_sym *a = &sv->e[2 * i], *b = &sv->e[2 * i + 1];
      int32_t k = (int32_t)(x->rank - np_ + i);
      if (a->kind == OP_SYM_KNOWN && b->kind == OP_SYM_KNOWN) d[k] = op_dim_add(c, d[k], op_sym_i64(a->x + b->x));
      else d[k] = op_dim_sym(c);
    }
  }
  op_tmp_free(c, sv, sizeof *sv);
  if (!rc) op_set_out(c, 0, op_tensor(c, x->dtype, x->rank, d));
  return rc;
}

/* numpy 'reflect' index (period 2(n-1)) and 'edge' index. */
static int64_t reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  int64_t p = 2 * (n - 1);
  int64_t j = i < 0 ? -i : i;
  j %= p;
  return j < n ? j : p - j;
}

mil_status to_fold_pad(mil_infer_ctx *c) {
  const mil_value *x = op_val(c, "x");
  int64_t xs[TOP_RANK], os[TOP_RANK], st[TOP_RANK], pads[2 * TOP_RANK], lo[TOP_RANK] = {0};
  int32_t xr, orank;
  if (!x || !op_foldable_dtype(x->type->dtype) || !op_static_shape(c->out[0], os, &orank)) return MIL_OK;
  if (!op_value_shape(x, xs, &xr)) return MIL_OK;
  int np_ = op_known_ints(c, "pad", pads, 2 * TOP_RANK);
  if (np_ < 0 || np_ % 2 || np_ / 2 > xr || orank != xr) return MIL_OK;
  for (int i = 0; i < np_ / 2; i++) lo[xr - np_ / 2 + i] = pads[2 * i];
  const char *mode = op_str(c, "mode", "constant");
  const mil_value *cv = op_val(c, "constant_val");
  if (op_has(c, "constant_val") && !cv) return MIL_OK;
  int64_t n = op_numel(orank, os);
  int64_t *map = op_tmp_alloc(c, (size_t)(n ? n : 1) * sizeof *map);
  if (!map) return MIL_OK;
  op_strides(xr, xs, st);
  for (int64_t k = 0; k < n; k++) {
    int64_t rem = k, src = 0;
    bool outside = false;
    for (int32_t d = orank - 1; d >= 0; d--) {
      int64_t i = rem % os[d] - lo[d];
      rem /= os[d];
      if (i < 0 || i >= xs[d]) {
        if (!strcmp(mode, "constant")) outside = true;
        else if (!strcmp(mode, "reflect")) i = reflect_index(i, xs[d]);
        else i = i < 0 ? 0 : xs[d] - 1;
      }
      src += i * st[d];
    }
    map[k] = outside ? -1 : src;
  }
  mil_value *fill = NULL;
  if (cv && cv->numel >= 1) {
    fill = op_new_value(c, x->type->dtype, 0, NULL, true);
    if (fill) mil_value_set_f64(fill, 0, mil_value_get_f64(cv, 0));
  }
  op_set_val(c, 0, op_value_from_map(c, x->type->dtype, orank, os, false, x, map, fill));
  op_tmp_free(c, map, (size_t)(n ? n : 1) * sizeof *map);
  return MIL_OK;
}

mil_status to_defaults_pad(mil_infer_ctx *c) {
  mil_status st = op_add_default_str(c, "mode", "constant");
  return st ? st : op_add_default_f32(c, "constant_val", 0.0);
}
