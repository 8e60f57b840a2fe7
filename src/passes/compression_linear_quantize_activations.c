/* compression::linear_quantize_activations — activation quantization
 * (W8A8's "A8") from calibrated ranges: quantize/dequantize pairs
 * (iOS17 ops) before and after the ops that Core ML can run on 8-bit
 * activations.
 *
 * Phase 1 (insert_prefix_quantize_dequantize_pair): before every conv,
 * avg_pool, max_pool, linear whose x is not a const, and every add whose x
 * and y are both not consts, each of those inputs goes through
 *
 *   %quantize_0 = quantize(input=%x, scale=s, [zero_point=z,] output_dtype="int8")
 *   %dequantize_0 = dequantize(input=%quantize_0, scale=s, [zero_point=z])
 *
 * Phase 2 (insert_suffix_quantize_dequantize_pair): after a pattern that
 * starts at a dequantize read only by a conv / add (both inputs
 * dequantized) / avg_pool / max_pool / linear, optionally followed by an
 * activation (leaky_relu, tanh, scaled_tanh, sigmoid, hard_sigmoid, relu,
 * relu6), whose output has a reader and is not already quantized, a pair
 * is added after the pattern's last op; the new dequantize's output is
 * named "<dequantize>__post__dequant" and takes over the readers.
 *
 * Then common::dequantize_quantize_pair_elimination, as coremltools runs it.
 *
 * Scale and zero point come from the range [rmin, rmax] of the var rounded
 * to fp16, computed in fp16 steps as coremltools' quantize_weight_by_dtype
 * computes them on that two-element array: linear_symmetric int8 gives
 * scale = 2 max(|rmin|, |rmax|) / 254 and no zero point (phase 2: zero
 * point 0); linear gives scale = (max(rmax, 0) - min(rmin, 0)) / 255 and a
 * rounded, clipped zero point. The scale's dtype is the quantized var's.
 *
 * Options: config (OptimizationConfig of OpLinearQuantizerConfig: mode
 * and dtype int8 / uint8 are used; per op name / type / global lookup) and
 * activation_stats (the JSON object mil_calibrator_stats_json writes:
 * {"var": {"rmin": .., "rmax": ..}}). The calibration itself (running
 * samples through the interpreter) is done before the pass, by the caller
 * (mil/calibrate.h): a pass only rewrites.
 *
 * The program is retargeted to iOS17 first when its opset is older (with a
 * warning), as coremltools applies the passes with spec_version iOS17.
 *
 * Where coremltools fails, this pass skips: a var calibrated to a zero
 * range ("quantize op: scale cannot be 0"), a var that is not fp16 / fp32
 * (an int32 token input), and a var without statistics (a KeyError in
 * coremltools: inside control flow, or never computed) stay unquantized,
 * and one warning names them all.
 *
 * Mirrors coremltools/optimize/coreml/_post_training_quantization.py
 * (linear_quantize_activations), _quantization_passes.py
 * (insert_prefix_quantize_dequantize_pair),
 * converters/mil/mil/passes/defs/optimize_activation_quantization.py
 * (insert_suffix_quantize_dequantize_pair) and optimize/_utils.py
 * (quantize_weight_by_dtype, get_quant_range, get_min_and_max_values). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"
#include "passes/pass_internal.h"

#define PASS "compression::linear_quantize_activations"

typedef struct act_pass {
  pass_bld bld;
  mil_compress_config *cfg;
  cJSON *stats;
  pass_ptrset visited;
  char *skipped; /* names left unquantized, for the one warning */
  size_t skipped_len, skipped_cap;
  int32_t n_skipped;
} act_pass;

static void note_skip(act_pass *a, const char *name, const char *why) {
  char buf[600];
  int k = snprintf(buf, sizeof buf, "%s%s (%s)", a->n_skipped ? ", " : "", name, why);
  if (k < 0) return;
  if (a->skipped) {
    char key[520];
    snprintf(key, sizeof key, "%s (", name);
    for (const char *f = strstr(a->skipped, key); f; f = strstr(f + 1, key))
      if (f == a->skipped || (f >= a->skipped + 2 && f[-2] == ',' && f[-1] == ' ')) return;
  }
  if (a->skipped_len + (size_t)k + 1 > a->skipped_cap) {
    size_t cap = (a->skipped_cap + (size_t)k + 1) * 2;
    char *s = realloc(a->skipped, cap);
    if (!s) return;
    a->skipped = s;
    a->skipped_cap = cap;
  }
  memcpy(a->skipped + a->skipped_len, buf, (size_t)k + 1);
  a->skipped_len += (size_t)k;
  a->n_skipped++;
}

/* The quantization parameters of var v, or false (noted) when it stays
 * unquantized. fp16 arithmetic step by step, as numpy on float16 arrays. */
typedef struct qparams {
  float scale;
  bool has_zp;
  int32_t zp;
} qparams;

static float h(double x) { return mil_fp16_to_fp32(mil_fp64_to_fp16(x)); }

static bool qparams_for(act_pass *a, const mil_var *v, const mil_op_compress_config *cfg, qparams *q) {
  mil_dtype dt = pass_bld_dtype(v);
  if (dt != MIL_DT_FP16 && dt != MIL_DT_FP32) {
    note_skip(a, v->name, dt == MIL_DT_UNUSED ? "not a tensor" : mil_dtype_name(dt));
    return false;
  }
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(a->stats, v->name);
  const cJSON *lo_j = e ? cJSON_GetObjectItemCaseSensitive(e, "rmin") : NULL;
  const cJSON *hi_j = e ? cJSON_GetObjectItemCaseSensitive(e, "rmax") : NULL;
  if (!cJSON_IsNumber(lo_j) || !cJSON_IsNumber(hi_j)) {
    note_skip(a, v->name, "no calibration statistics");
    return false;
  }
  bool sym = cfg->mode == MIL_CMODE_LINEAR_SYMMETRIC, sign = cfg->dtype != MIL_DT_UINT8;
  /* get_quant_range(8, signed, mode) */
  int32_t qmin = sign ? -128 : 0, qmax = sign ? 127 : 255;
  if (sym) {
    if (sign) qmin += 1;
    else qmax -= 1;
  }
  float lo = h(lo_j->valuedouble), hi = h(hi_j->valuedouble);
  float vmin, vmax;
  if (sym) {
    float m = fmaxf(fabsf(lo), fabsf(hi));
    vmin = -m;
    vmax = m;
  } else {
    vmin = fminf(0.0f, lo);
    vmax = fmaxf(0.0f, hi);
  }
  float span = h((double)vmax - (double)vmin);
  float scale = h((double)span / (double)(qmax - qmin));
  if (!(scale > 0) || isinf(scale)) {
    note_skip(a, v->name, scale == 0 ? "zero range" : "range out of fp16");
    return false;
  }
  q->scale = scale;
  q->has_zp = false;
  q->zp = 0;
  if (sym && !sign) {
    q->has_zp = true;
    q->zp = qmax / 2;
  } else if (!sym) {
    float num = h((double)h((double)qmin * vmax) - (double)h((double)qmax * vmin));
    float zp = h((double)num / (double)span);
    float r = nearbyintf(zp);
    r = r < (float)qmin ? (float)qmin : r > (float)qmax ? (float)qmax : r;
    q->has_zp = true;
    q->zp = (int32_t)r;
  }
  return true;
}

/* quantize + dequantize of v before anchor; the dequantize's output, or
 * NULL (error recorded). zp_always: phase 2 passes zero point 0 when there
 * is none. */
static mil_var *build_pair(act_pass *a, mil_block *b, mil_op *anchor, mil_var *v, const qparams *q,
                           mil_dtype qdt, bool zp_always, mil_op **qop_out) {
  mil_program *p = a->bld.p;
  mil_dtype fdt = pass_bld_dtype(v);
  mil_value *s1 = cw_float_value(p, fdt, 0, NULL, false, &q->scale);
  mil_value *s2 = cw_float_value(p, fdt, 0, NULL, false, &q->scale);
  bool with_zp = q->has_zp || zp_always;
  mil_value *z1 = with_zp ? cw_int_value(p, qdt, 0, NULL, zp_always, &q->zp) : NULL;
  mil_value *z2 = with_zp ? cw_int_value(p, qdt, 0, NULL, zp_always, &q->zp) : NULL;
  mil_value *odt = pass_bld_str(p, mil_dtype_name(qdt));
  if (!s1 || !s2 || (with_zp && (!z1 || !z2)) || !odt) {
    mil_diag_error(a->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
    return NULL;
  }
  mil_status st = MIL_OK;
  pass_barg qa[] = {PASS_BV("input", v), PASS_BK("scale", s1), PASS_BK("output_dtype", odt), PASS_BK("zero_point", z1)};
  mil_op *qop = pass_bld_op(&a->bld, b, anchor, "quantize", NULL, with_zp ? 4 : 3, qa, &st);
  if (!qop) return NULL;
  pass_barg da[] = {PASS_BV("input", qop->outputs[0]), PASS_BK("scale", s2), PASS_BK("zero_point", z2)};
  mil_op *dop = pass_bld_op(&a->bld, b, anchor, "dequantize", NULL, with_zp ? 3 : 2, da, &st);
  if (!dop) return NULL;
  if (qop_out) *qop_out = qop;
  return dop->outputs[0];
}

static bool is_const_var(const mil_var *v) { return !v || (v->op && mil_op_is_const(v->op)); }

/* ---------- phase 1: insert_prefix_quantize_dequantize_pair ---------- */

static bool prefix_type(const char *t) {
  return strcmp(t, "conv") == 0 || strcmp(t, "avg_pool") == 0 || strcmp(t, "max_pool") == 0 ||
         strcmp(t, "linear") == 0 || strcmp(t, "add") == 0;
}

static int prefix_op(act_pass *a, mil_op *op) {
  const mil_op_compress_config *cfg = mil_compress_config_for_op(a->cfg, op);
  if (!cfg) return 0;
  bool binary = strcmp(op->type, "add") == 0;
  mil_var *x = mil_op_input_var(op, "x"), *y = binary ? mil_op_input_var(op, "y") : NULL;
  if (is_const_var(x) || (binary && is_const_var(y))) return 0;
  qparams qx, qy;
  bool okx = qparams_for(a, x, cfg, &qx);
  bool oky = !binary || qparams_for(a, y, cfg, &qy);
  if (!okx || !oky) return 0;
  mil_var *dx = build_pair(a, op->block, op, x, &qx, cfg->dtype, false, NULL);
  if (!dx) return -(int)MIL_ERR_INVALID;
  mil_var *dy = NULL;
  if (binary && !(dy = build_pair(a, op->block, op, y, &qy, cfg->dtype, false, NULL))) return -(int)MIL_ERR_INVALID;
  /* only op's own bindings change (coremltools rebuilds the core op with
   * the same name and inputs x (and y) replaced) */
  mil_input *ix = mil_op_find_input(op, "x"), *iy = binary ? mil_op_find_input(op, "y") : NULL;
  mil_arg_set_var(op, &ix->args[0], dx);
  if (binary) mil_arg_set_var(op, &iy->args[0], dy);
  return 1;
}

static int prefix_block(act_pass *a, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return -(int)mil_diag_error(a->bld.d, MIL_ERR_UNSUPPORTED, PASS ": blocks nested too deep");
  int n = 0;
  /* collect first (nested blocks as they are reached), then transform */
  int32_t cap = b->n_ops > 0 ? b->n_ops : 1, k = 0;
  mil_op **ops = malloc((size_t)cap * sizeof *ops);
  if (!ops) return -(int)mil_diag_error(a->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  for (mil_op *op = b->first; op; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks; i++) {
      int r = prefix_block(a, op->blocks[i], depth + 1);
      if (r < 0) {
        free(ops);
        return r;
      }
      n += r;
    }
    if (prefix_type(op->type) && k < cap) ops[k++] = op;
  }
  for (int32_t i = 0; i < k; i++) {
    int r = prefix_op(a, ops[i]);
    if (r < 0) {
      free(ops);
      return r;
    }
    n += r;
  }
  free(ops);
  return n;
}

/* ---------- phase 2: insert_suffix_quantize_dequantize_pair ---------- */

/* The ops reading v (one entry per binding, as Var.child_ops), up to max;
 * returns the count. */
static int32_t children(const mil_var *v, mil_op **out, int32_t max) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) {
      if (n < max) out[n] = u->op;
      n++;
    }
  return n;
}

/* _check_child_op_type: op has one output, read by exactly one op, of type t. */
static bool single_child_is(const mil_op *op, const char *t) {
  if (op->n_outputs != 1) return false;
  mil_op *k[2];
  return children(op->outputs[0], k, 2) == 1 && strcmp(k[0]->type, t) == 0;
}

static bool allowed_activation(const char *t) {
  static const char *const acts[] = {"leaky_relu", "tanh", "scaled_tanh", "sigmoid", "hard_sigmoid", "relu", "relu6"};
  for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
    if (strcmp(t, acts[i]) == 0) return true;
  return false;
}

static int suffix_match(act_pass *a, mil_op *deq) {
  static const char *const core_types[] = {"conv", "add", "avg_pool", "max_pool", "linear"};
  bool ok = false;
  for (size_t i = 0; i < 5 && !ok; i++) ok = single_child_is(deq, core_types[i]);
  if (!ok) return 0;
  mil_op *k[1] = {NULL};
  if (children(deq->outputs[0], k, 1) != 1 || !k[0]) return 0;
  mil_op *core = k[0], *last = core;
  if (strcmp(core->type, "add") == 0) {
    mil_var *x = mil_op_input_var(core, "x"), *y = mil_op_input_var(core, "y");
    if (!x || !y || !x->op || !y->op || strcmp(x->op->type, "dequantize") != 0 || strcmp(y->op->type, "dequantize") != 0)
      return 0;
  }
  const mil_op_compress_config *cfg = mil_compress_config_for_op(a->cfg, core);
  if (!cfg) return 0;
  if (single_child_is(core, "quantize")) return 0;
  mil_op *child = NULL;
  if (children(core->outputs[0], k, 1) > 0) child = k[0];
  if (child && allowed_activation(child->type) && children(child->outputs[0], k, 1) > 0) {
    if (single_child_is(child, "quantize")) return 0;
    last = child;
    child = k[0];
  }
  if (!child) return 0;
  mil_var *out = last->outputs[0];
  qparams q;
  if (!qparams_for(a, out, cfg, &q)) return 0;
  mil_op *qop = NULL;
  mil_var *dv = build_pair(a, last->block, last->next, out, &q, cfg->dtype, true, &qop);
  if (!dv) return -(int)MIL_ERR_INVALID;
  int r = pass_bld_try_replace(&a->bld, dv->op, out, dv);
  if (r < 0) return r;
  if (r == 0) { /* not allowed: the pair goes again */
    mil_op *rm[2] = {dv->op, qop};
    mil_status st = pass_remove_ops(rm, 2, a->bld.d);
    return st == MIL_OK ? 0 : -(int)st;
  }
  if (!pass_ptrset_add(&a->visited, dv->op) || !pass_ptrset_add(&a->visited, qop))
    return -(int)mil_diag_error(a->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  char name[600];
  snprintf(name, sizeof name, "%s__post__dequant", dv->name);
  dv->name = mil_program_intern(a->bld.p, name, strlen(name));
  if (!dv->name) return -(int)mil_diag_error(a->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
  return 1;
}

static int suffix_block(act_pass *a, mil_block *b, int depth) {
  if (depth > PASS_MAX_DEPTH) return -(int)mil_diag_error(a->bld.d, MIL_ERR_UNSUPPORTED, PASS ": blocks nested too deep");
  int total = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    for (mil_op *op = b->first, *next; op; op = next) {
      next = op->next;
      int seen = pass_ptrset_insert(&a->visited, op);
      if (seen < 0) return -(int)mil_diag_error(a->bld.d, MIL_ERR_NOMEM, PASS ": out of memory");
      if (seen == 0) continue; /* visited before */
      for (int32_t i = 0; i < op->n_blocks; i++) {
        int r = suffix_block(a, op->blocks[i], depth + 1);
        if (r < 0) return r;
        total += r;
      }
      if (strcmp(op->type, "dequantize") != 0) continue;
      int r = suffix_match(a, op);
      if (r < 0) return r;
      if (r > 0) {
        changed = true;
        total += r;
        next = op->next;
      }
    }
  }
  return total;
}

/* ---------- the pass ---------- */

static const mil_pass_option_def k_options[] = {
    {"config", MIL_POPT_JSON, NULL, false, false, 0, 0,
     "OptimizationConfig dictionary of OpLinearQuantizerConfig (mode, dtype int8/uint8)"},
    {"activation_stats", MIL_POPT_JSON, NULL, false, false, 0, 0,
     "calibrated ranges {\"var\": {\"rmin\": x, \"rmax\": y}} (mil_calibrator_stats_json)"},
};

static mil_status get_stats(act_pass *a, mil_program *p, const mil_pass_options *o, mil_diag *d) {
  (void)p;
  const char *json = mil_pass_opt_json(o, "activation_stats");
  if (!json)
    return mil_diag_error(d, MIL_ERR_INVALID,
                          PASS ": the `activation_stats` option is required (the ranges a calibration gives: "
                          "mil_calibrator_stats_json, mil/calibrate.h)");
  a->stats = cJSON_Parse(json);
  if (!cJSON_IsObject(a->stats))
    return mil_diag_error(d, MIL_ERR_PARSE, PASS ": activation_stats: expected a JSON object of {\"rmin\", \"rmax\"}");
  return MIL_OK;
}

static mil_status run(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d) {
  act_pass a;
  memset(&a, 0, sizeof a);
  a.bld.p = p;
  a.bld.d = d;
  a.bld.pass = PASS;
  const char *json = mil_pass_opt_json(o, "config");
  if (!json)
    return mil_diag_error(d, MIL_ERR_INVALID, PASS ": the `config` option (an OptimizationConfig dictionary) is required");
  static const mil_cfg_type types[] = {MIL_CFG_LINEAR_QUANTIZER};
  mil_status st = mil_compress_config_from_json(json, (size_t)-1, PASS ": config", MIL_CFG_LINEAR_QUANTIZER, &a.cfg, d);
  if (st == MIL_OK) st = mil_compress_config_check_types(a.cfg, "linear_quantize_activations", 1, types, d);
  /* the calibration runs the program as given (coremltools calibrates the original model) */
  if (st == MIL_OK) st = get_stats(&a, p, o, d);
  if (st == MIL_OK) {
    int old = 1 << 30;
    for (int32_t i = 0; i < p->n_functions; i++) {
      int v = mil_opset_version(p->functions[i]->opset);
      if (v < old) old = v;
    }
    if (old < MIL_IOS17) {
      mil_diag_add(d, MIL_SEV_WARNING,
                   PASS ": quantize and dequantize need iOS17; the program's opset is raised to CoreML7 (iOS17)");
      st = mil_program_retarget(p, MIL_IOS17, d);
    }
  }
  int n = 0;
  for (int32_t i = 0; st == MIL_OK && i < p->n_functions; i++) {
    int r = prefix_block(&a, mil_function_body(p->functions[i]), 0);
    if (r < 0) st = (mil_status)-r;
    else n += r;
  }
  for (int32_t i = 0; st == MIL_OK && i < p->n_functions; i++) {
    int r = suffix_block(&a, mil_function_body(p->functions[i]), 0);
    if (r < 0) st = (mil_status)-r;
    else n += r;
  }
  if (st == MIL_OK) {
    const mil_pass_def *el = mil_pass_find("common::dequantize_quantize_pair_elimination");
    int64_t ch = 0;
    if (el) st = mil_pass_run(el, p, NULL, &ch, d);
    n += (int)ch;
  }
  if (st == MIL_OK && a.n_skipped)
    mil_diag_add(d, MIL_SEV_WARNING, PASS ": %d activation%s left unquantized: %s", (int)a.n_skipped,
                 a.n_skipped == 1 ? "" : "s", a.skipped);
  if (stats) stats->changes += n;
  cJSON_Delete(a.stats);
  free(a.skipped);
  pass_ptrset_free(&a.visited);
  mil_compress_config_free(a.cfg);
  pass_bld_free(&a.bld);
  return st;
}

const mil_pass_def pass_def_compression_linear_quantize_activations = {
    PASS, "quantize activations (int8) from calibrated ranges with quantize/dequantize pairs (iOS17)", k_options,
    sizeof k_options / sizeof *k_options, run, NULL};
