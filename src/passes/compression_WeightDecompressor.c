/* compression::WeightDecompressor — every constexpr_* op (that the
 * op_selector accepts) is replaced by const ops holding its decompressed
 * outputs, one per output, each named after the output var:
 *
 *   %w: (32, 64, fp16)(Tensor) = constexpr_affine_dequantize(quantized_data=%q, zero_point=%z, scale=%s, axis=%a, name="w")
 *
 * becomes
 *
 *   %w: (32, 64, fp16)*(Tensor) = const(val=[...], name="w")
 *
 * The consts that fed the constexpr op stay (dead) as coremltools leaves
 * them. The values are the op registry's decompression (the same the
 * interpreter and the weight readers use), which computes what
 * coremltools' materialized_val_inference computes.
 *
 * Mirrors coremltools/optimize/coreml/_quantization_passes.py
 * (WeightDecompressor) and passes/defs/quantization.py
 * (AbstractQuantizationPass.apply: nested blocks first, then the op).
 */
#include <string.h>

#include "passes/pass_internal.h"

#define PASS "compression::WeightDecompressor"

static int decompress(pass_bld *c, const mil_pass_options *o, mil_op *op) {
  if (strncmp(op->type, "constexpr_", 10) != 0 || !mil_pass_opt_selects(o, "op_selector", op)) return 0;
  for (int32_t i = 0; i < op->n_outputs; i++) {
    mil_var *out = op->outputs[i];
    const mil_value *v = mil_op_materialize(op, i, c->d);
    if (!v)
      return -(int)mil_diag_error(c->d, MIL_ERR_INVALID, PASS ": cannot decompress output %d of %s (%s)", i,
                                  op->name, op->type);
    mil_op *k = mil_const_new(c->p, out->name, v);
    if (!k) return -(int)mil_diag_error(c->d, MIL_ERR_NOMEM, PASS ": out of memory");
    mil_block_insert_before(op, k);
    mil_var_replace_uses_after(out, k->outputs[0], k);
  }
  mil_status st = pass_remove_ops(&op, 1, c->d);
  return st == MIL_OK ? 1 : -(int)st;
}

static int walk(pass_bld *c, const mil_pass_options *o, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return -(int)mil_diag_error(c->d, MIL_ERR_UNSUPPORTED, PASS ": blocks nested too deep");
  int n = 0;
  for (mil_op *op = b->first, *next; op; op = next) {
    next = op->next;
    for (int32_t i = 0; i < op->n_blocks; i++) {
      int r = walk(c, o, op->blocks[i], depth + 1);
      if (r < 0) return r;
      n += r;
    }
    int r = decompress(c, o, op);
    if (r < 0) return r;
    n += r;
  }
  return n;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  pass_bld c = {p, d, PASS, NULL, NULL, 0};
  int total = 0;
  for (int32_t f = 0; f < p->n_functions; f++) {
    mil_function *fun = p->functions[f];
    for (int32_t s = 0; s < fun->n_specs; s++) {
      int r = walk(&c, o, fun->specs[s].block, 0);
      if (r < 0) {
        pass_bld_free(&c);
        return (mil_status)-r;
      }
      total += r;
    }
  }
  pass_bld_free(&c);
  if (stats) stats->changes += total;
  return MIL_OK;
}

static const mil_pass_option_def k_options[] = {
    {"op_selector", MIL_POPT_SELECTOR, NULL, false, false, 0, 0, "only constexpr ops it accepts (C API only)"},
};
const mil_pass_def pass_def_compression_WeightDecompressor = {
    PASS, "replace every constexpr op by a const of its decompressed value", k_options, 1, run, NULL};
