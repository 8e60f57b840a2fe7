/* common::merge_affine_dequantize_with_consecutive_ops — fold a chain of
 * shape ops after a constexpr_affine_dequantize into its quantized data:
 * transpose, reshape, expand_dims and squeeze for a per-tensor scale and
 * zero point, transpose alone (moving the axis along) per channel.
 *
 *   main[CoreML6]() {
 *     block0() {
 *       %q: (2, 3, int8)*(Tensor) = const(val=[[1, 2, 3], [4, 5, 6]], name="q")
 *       %zp: (int8)*(Scalar) = const(val=0, name="zp")
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %w: (2, 3, fp32)(Tensor) = constexpr_affine_dequantize(quantized_data=%q, zero_point=%zp, scale=%s, axis=%ax, name="w")
 *       %perm: (2,int32)*(Tensor) = const(val=[1, 0], name="perm")
 *       %t: (3, 2, fp32)(Tensor) = transpose(x=%w, perm=%perm, name="t")
 *     } -> (%t)
 *   }
 *
 * becomes
 *
 *   main[CoreML6]() {
 *     block0() {
 *       %q: (2, 3, int8)*(Tensor) = const(val=[[1, 2, 3], [4, 5, 6]], name="q")
 *       %zp: (int8)*(Scalar) = const(val=0, name="zp")
 *       %s: (fp32)*(Scalar) = const(val=0.5, name="s")
 *       %ax: (int32)*(Scalar) = const(val=0, name="ax")
 *       %perm: (2,int32)*(Tensor) = const(val=[1, 0], name="perm")
 *       %t_quantized_data_0: (3, 2, int8)*(Tensor) = const(val=[[1, 4], [2, 5], [3, 6]], name="t_quantized_data_0")
 *       %t: (3, 2, fp32)(Tensor) = constexpr_affine_dequantize(quantized_data=%t_quantized_data_0, zero_point=%zp, scale=%s, axis=%ax, name="t")
 *     } -> (%t)
 *   }
 *
 * Conditions: the quantized data is read by this op only; the chain
 * follows single readers (a link's output read by exactly one op of a
 * supported type) and stops at an output of the block. The new op takes
 * the name of the chain's last op; per channel the axis becomes a new
 * const. Blocks are swept until nothing changes.
 *
 * Mirrors coremltools/converters/mil/mil/passes/defs/optimize_quantization.py
 * (merge_affine_dequantize_with_consecutive_ops).
 */
#include <stdlib.h>
#include <string.h>

#include "passes/fuse_util_internal.h"
#include "passes/pass_internal.h"

#define PASS "merge_affine_dequantize_with_consecutive_ops"

static bool is_output_of(const mil_var *v, const mil_block *b) {
  for (int32_t i = 0; i < b->n_outputs; i++)
    if (b->outputs[i].var == v) return true;
  return false;
}

static bool supported(const mil_op *op, bool per_tensor) {
  if (strcmp(op->type, "transpose") == 0) return true;
  return per_tensor && (strcmp(op->type, "reshape") == 0 || strcmp(op->type, "expand_dims") == 0 ||
                        strcmp(op->type, "squeeze") == 0);
}

/* data permuted by perm (numpy transpose). */
static mil_value *permute(mil_program *p, const mil_value *v, const mil_value *perm) {
  const mil_type *t = v->type;
  int32_t r = t->rank;
  if (r < 1 || r > 16 || !perm || perm->numel != r) return NULL;
  int64_t pm[16], shape[16], src_strides[16], s = 1;
  for (int32_t i = r - 1; i >= 0; i--) {
    src_strides[i] = s;
    s *= t->dims[i].size;
  }
  for (int32_t i = 0; i < r; i++) {
    pm[i] = mil_value_get_i64(perm, i);
    if (pm[i] < 0) pm[i] += r;
    if (pm[i] < 0 || pm[i] >= r) return NULL;
    shape[i] = t->dims[pm[i]].size;
  }
  mil_value *out = mil_value_new_tensor(p, t->dtype, r, shape, false, NULL);
  if (!out) return NULL;
  int64_t idx[16] = {0};
  for (int64_t k = 0; k < v->numel; k++) {
    int64_t src = 0;
    for (int32_t a = 0; a < r; a++) src += idx[a] * src_strides[pm[a]];
    mil_value_set_i64(out, k, mil_value_get_i64(v, src));
    for (int32_t a = r - 1; a >= 0; a--) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
  return out;
}

static int transform(pass_bld *c, mil_op *op) {
  if (strcmp(op->type, "constexpr_affine_dequantize") != 0 || op->n_outputs != 1) return 0;
  mil_var *qd = mil_op_input_var(op, "quantized_data");
  mil_var *scale = mil_op_input_var(op, "scale"), *zp = mil_op_input_var(op, "zero_point");
  if (!qd || !qd->val || !scale || !zp || pass_n_op_uses(qd) != 1) return 0;
  bool per_tensor = scale->type && zp->type && scale->type->rank == 0 && zp->type->rank == 0;
  /* the chain of single readers */
  mil_block *b = op->block;
  mil_op *chain[256];
  int32_t n = 0;
  mil_op *cur = op;
  while (n < 256) {
    if (is_output_of(cur->outputs[0], b) || cur->n_outputs != 1) break;
    mil_op *child = pass_only_child_op(cur->outputs[0]);
    if (!child || !supported(child, per_tensor) || child->n_outputs != 1) break;
    chain[n++] = child;
    cur = child;
  }
  if (n == 0) return 0;
  const mil_value *data = qd->val;
  int64_t axis = 0;
  if (!per_tensor) {
    const mil_value *av = pass_input_value(op, "axis");
    if (!av) return 0;
    axis = mil_value_get_i64(av, 0);
    if (axis < 0) axis += qd->type ? qd->type->rank : 0;
  }
  for (int32_t i = 0; i < n; i++) {
    mil_op *f = chain[i];
    if (strcmp(f->type, "transpose") == 0) {
      const mil_value *perm = pass_input_value(f, "perm");
      if (!(data = permute(c->p, data, perm))) return 0;
      if (!per_tensor) {
        int64_t na = -1;
        for (int64_t k = 0; k < perm->numel && na < 0; k++) {
          int64_t pk = mil_value_get_i64(perm, k);
          if (pk == axis) na = k;
        }
        if (na < 0) return 0;
        axis = na;
      }
    } else {
      /* reshape / expand_dims / squeeze keep the element order: take the
       * op's (static) output shape */
      const mil_type *ot = f->outputs[0]->type;
      if (!mil_type_is_static(ot) || ot->rank > 64) return 0;
      int64_t shape[64];
      for (int32_t k = 0; k < ot->rank; k++) shape[k] = ot->dims[k].size;
      if (!(data = pass_bld_reshape(c->p, data, ot->rank, shape))) return 0;
    }
  }
  mil_op *last = chain[n - 1];
  mil_status st = MIL_OK;
  mil_value *axv = per_tensor ? NULL : pass_bld_i32(c->p, axis);
  if (!per_tensor && !axv) return -(int)MIL_ERR_NOMEM;
  pass_barg a[] = {PASS_BK("quantized_data", data), PASS_BV("zero_point", zp), PASS_BV("scale", scale),
                   per_tensor ? PASS_BV("axis", mil_op_input_var(op, "axis")) : PASS_BK("axis", axv)};
  mil_var *nv = pass_bld_var(c, NULL, last, "constexpr_affine_dequantize", last->outputs[0]->name, 4, a, &st);
  if (!nv) return -(int)st;
  pass_replace_uses_after(last, last->outputs[0], nv);
  mil_op *dead[257];
  dead[0] = op;
  for (int32_t i = 0; i < n; i++) dead[i + 1] = chain[i];
  st = pass_remove_ops(dead, n + 1, c->d);
  return st != MIL_OK ? -(int)st : 1;
}

/* The op types transform() can rewrite at (it returns 0 at any other). */
static const char *const k_types[] = {"constexpr_affine_dequantize", NULL};

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  (void)o;
  pass_walk_spec ws = {PASS, k_types, true, PASS_WALK_NESTED_FIXPOINT, true, NULL};
  return pass_bld_walk(p, d, &ws, transform, stats);
}

static const char *const k_anchors[] = {"constexpr_affine_dequantize", NULL};
const mil_pass_def pass_def_merge_affine_dequantize_with_consecutive_ops = {
    "common::" PASS, "fold per-tensor ops on constexpr_affine_dequantize into its parameters", NULL, 0, run, k_anchors};
