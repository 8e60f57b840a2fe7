/* Which consts the compression passes compress, with which config, along
 * which axes: coremltools' AbstractCompressionPass.apply /
 * need_compress_const (_quantization_passes.py),
 * OptimizationConfig._get_const_op_config (_config.py) and
 * select_input_output_channel_axis / infer_block_sizes (optimize/_utils.py),
 * in one place for all passes. */
#include <stdlib.h>
#include <string.h>

#include "compress/compress_internal.h"

const mil_pass_option_def cw_options[CW_N_OPTIONS] = {
    {"config", MIL_POPT_JSON, NULL, false, false, 0, 0,
     "OptimizationConfig dictionary: config_type, global_config, op_type_configs, op_name_configs"},
    {"joint_compression", MIL_POPT_BOOL, "false", false, false, 0, 0,
     "compress weights that are already compressed (iOS18)"},
    {"fake_compression", MIL_POPT_BOOL, "false", false, false, 0, 0,
     "store the decompressed values in a const instead of a constexpr op"},
};

mil_status cw_pass_init(cw_pass *c, mil_program *p, const mil_pass_options *o, mil_diag *d, const char *pass,
                        mil_cfg_type default_type, int n_types, const mil_cfg_type *types) {
  memset(c, 0, sizeof *c);
  c->bld.p = p;
  c->bld.d = d;
  c->bld.pass = pass;
  c->joint = mil_pass_opt_bool(o, "joint_compression");
  c->fake = mil_pass_opt_bool(o, "fake_compression");
  const char *json = mil_pass_opt_json(o, "config");
  if (!json)
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: the `config` option (an OptimizationConfig dictionary) is required",
                          pass);
  char src[160];
  snprintf(src, sizeof src, "%s: config", pass);
  mil_status st = mil_compress_config_from_json(json, (size_t)-1, src, default_type, &c->cfg, d);
  if (st == MIL_OK) st = mil_compress_config_check_types(c->cfg, strchr(pass, ':') + 2, n_types, types, d);
  return st;
}

void cw_pass_free(cw_pass *c) {
  mil_compress_config_free(c->cfg);
  pass_bld_free(&c->bld);
  c->cfg = NULL;
}

bool cw_is_weight_value(const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR || !v->type || v->numel < 10) return false;
  mil_dtype dt = v->type->dtype;
  return dt == MIL_DT_FP16 || dt == MIL_DT_FP32 || dt == MIL_DT_UINT8 || dt == MIL_DT_INT8;
}

bool cw_is_weight_const(const mil_op *op) {
  return mil_op_is_const(op) && op->n_outputs == 1 && cw_is_weight_value(op->outputs[0]->val);
}

int32_t cw_children(const mil_var *v, mil_op **out, int32_t max) {
  int32_t n = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (u->op) {
      if (n < max) out[n] = u->op;
      n++;
    }
  return n;
}

static bool is_constexpr(const mil_op *op) { return strncmp(op->type, "constexpr_", 10) == 0; }

/* Uses are kept most recent first; coremltools lists child ops in the
 * order they were added (program order). */
#define MAX_CHILDREN 4096
static int32_t children_in_order(const mil_var *v, mil_op **out) {
  int32_t n = cw_children(v, out, MAX_CHILDREN);
  if (n > MAX_CHILDREN) n = MAX_CHILDREN;
  for (int32_t i = 1; i < n; i++) {
    mil_op *x = out[i];
    int32_t j = i;
    while (j > 0 && x->block == out[j - 1]->block && mil_op_is_before(x, out[j - 1])) {
      out[j] = out[j - 1];
      j--;
    }
    out[j] = x;
  }
  return n;
}

const mil_op_compress_config *cw_const_config(cw_pass *c, const mil_op *op, mil_status *st) {
  *st = MIL_OK;
  const mil_compress_config *cfg = c->cfg;
  for (int depth = 0; depth < 64; depth++) {
    const mil_compress_entry *e = compress_config_find(cfg->op_name, cfg->n_op_name, op->name);
    if (e) return e->cfg.type == MIL_CFG_NONE ? NULL : &e->cfg;
    if (compress_config_find(cfg->op_type, cfg->n_op_type, op->type)) {
      *st = mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                           "%s: const ops cannot be set by op_type_configs (\"%s\"); use global_config", c->bld.pass,
                           op->type);
      return NULL;
    }
    mil_op *kids[MAX_CHILDREN];
    int32_t n = 0;
    for (int32_t i = 0; i < op->n_outputs && n < MAX_CHILDREN; i++) {
      mil_op *k[MAX_CHILDREN];
      int32_t m = children_in_order(op->outputs[i], k);
      for (int32_t j = 0; j < m && n < MAX_CHILDREN; j++) kids[n++] = k[j];
    }
    if (n == 0) return NULL; /* only a block output: constexpr ops cannot feed one */
    bool all_cx = true;
    for (int32_t i = 0; i < n; i++) all_cx &= is_constexpr(kids[i]);
    if (all_cx) {
      op = kids[0];
      continue;
    }
    const mil_op_compress_config *first = mil_compress_config_for_op(cfg, kids[0]);
    for (int32_t i = 1; i < n; i++) {
      const mil_op_compress_config *x = mil_compress_config_for_op(cfg, kids[i]);
      bool same = (!x && !first) || (x && first && mil_op_compress_config_equal(x, first));
      if (!same) {
        *st = mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                             "%s: compression config conflict detected between ops %s (%s) and %s (%s), which both "
                             "consume const %s: %s has config %s while %s has %s",
                             c->bld.pass, kids[0]->name, kids[0]->type, kids[i]->name, kids[i]->type, op->name,
                             kids[0]->name, first ? mil_cfg_type_name(first->type) : "None", kids[i]->name,
                             x ? mil_cfg_type_name(x->type) : "None");
        return NULL;
      }
    }
    return first;
  }
  return NULL;
}

bool cw_need_compress(cw_pass *c, const mil_op *op, const mil_op_compress_config *cfg, const mil_value *v,
                      bool (*child_ok)(cw_pass *, const mil_op *)) {
  mil_op *kids[MAX_CHILDREN];
  int32_t n = children_in_order(op->outputs[0], kids);
  if (!(child_ok && child_ok(c, op)))
    for (int32_t i = 0; i < n; i++)
      if (is_constexpr(kids[i])) return false;
  if (!cfg->has_weight_threshold) return false;
  const mil_type *t = op->outputs[0]->type;
  if (!(n > 0 && is_constexpr(kids[0])) && (!t || t->rank <= 1)) return false;
  return cw_is_weight_value(v) && cw_weight_size(c, op) > cfg->weight_threshold;
}

static bool input_flag(const mil_op *op, const char *name) {
  const mil_value *v = pass_input_value(op, name);
  return v && v->numel == 1 && mil_value_get_i64(v, 0) != 0;
}

/* output / input channel axis of v as one consumer reads it */
static void axes_of(const mil_var *v, int32_t *in_axis, int32_t *out_axis, int depth);

static void child_axes(const mil_var *v, const mil_op *k, int32_t *in_axis, int32_t *out_axis, int depth) {
  int32_t o = 0, i = 1;
  if (strcmp(k->type, "conv_transpose") == 0) {
    o = 1, i = 0;
  } else if (strcmp(k->type, "matmul") == 0) {
    if (mil_op_input_var(k, "y") == v) {
      if (input_flag(k, "transpose_y")) o = -2, i = -1;
      else o = -1, i = -2;
    } else {
      if (input_flag(k, "transpose_x")) o = -1, i = -2;
      else o = -2, i = -1;
    }
  } else if (is_constexpr(k) && k->n_outputs > 0 && depth < 16) {
    axes_of(k->outputs[0], &i, &o, depth + 1);
  }
  int32_t rank = v->type && v->type->rank > 0 ? v->type->rank : 0;
  if (o < 0) o += rank;
  if (i < 0) i += rank;
  *in_axis = i;
  *out_axis = o;
}

static void axes_of(const mil_var *v, int32_t *in_axis, int32_t *out_axis, int depth) {
  bool have = false, out_bad = false, in_bad = false;
  int32_t in0 = 1, out0 = 0;
  for (const mil_use *u = v->uses; u; u = u->next_use) {
    if (!u->op) continue;
    int32_t i, o;
    child_axes(v, u->op, &i, &o, depth);
    if (!have) in0 = i, out0 = o, have = true;
    else {
      out_bad |= o != out0;
      in_bad |= i != in0;
    }
  }
  *in_axis = in_bad ? -1 : in0;
  *out_axis = out_bad ? -1 : out0;
}

void cw_channel_axes(const mil_op *op, int32_t *in_axis, int32_t *out_axis) {
  axes_of(op->outputs[0], in_axis, out_axis, 0);
}

bool cw_block_sizes(cw_pass *c, const mil_op *op, const mil_op_compress_config *cfg, int32_t rank,
                    const int64_t *shape, int64_t *sizes, int32_t *channel_axis, mil_status *st) {
  *st = MIL_OK;
  int32_t in_axis, out_axis;
  cw_channel_axes(op, &in_axis, &out_axis);
  for (int32_t i = 0; i < rank; i++) sizes[i] = 0;
  if (cfg->granularity == MIL_GRAN_PER_BLOCK && cfg->n_block_sizes > 0) {
    if (cfg->n_block_sizes != rank) {
      *st = mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                           "%s: the block_size in config must have one element for each axis; for op %s there are %d "
                           "elements in block_size but %d axes in the weight",
                           c->bld.pass, op->name, cfg->n_block_sizes, rank);
      return false;
    }
    int32_t cand = -1, n_cand = 0;
    for (int32_t i = 0; i < rank; i++) {
      sizes[i] = cfg->block_sizes[i];
      if (sizes[i] != 0 && sizes[i] != shape[i]) cand = i, n_cand++;
    }
    if (n_cand == 1) out_axis = cand;
    *channel_axis = out_axis;
    return true;
  }
  *channel_axis = out_axis;
  if (in_axis < 0 || out_axis < 0) return false;
  if (cfg->granularity == MIL_GRAN_PER_GROUPED_CHANNEL && cfg->has_channel_axis) {
    int64_t a = cfg->channel_axis < 0 ? cfg->channel_axis + rank : cfg->channel_axis;
    out_axis = (int32_t)a;
    *channel_axis = out_axis;
  }
  int64_t in_bs = 0, out_bs = 0;
  switch (cfg->granularity) {
  case MIL_GRAN_PER_TENSOR: break;
  case MIL_GRAN_PER_CHANNEL: out_bs = 1; break;
  case MIL_GRAN_PER_GROUPED_CHANNEL: out_bs = cfg->group_size; break;
  case MIL_GRAN_PER_BLOCK: in_bs = cfg->block_size, out_bs = 1; break;
  }
  if (in_axis < rank) sizes[in_axis] = in_bs;
  if (out_axis >= 0 && out_axis < rank) sizes[out_axis] = out_bs;
  return true;
}

/* ---------- the walk ---------- */

typedef struct opvec {
  mil_op **v;
  size_t n, cap;
} opvec;

static bool opvec_push(opvec *a, mil_op *op) {
  if (a->n == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 64;
    mil_op **nv = realloc(a->v, nc * sizeof *nv);
    if (!nv) return false;
    a->v = nv, a->cap = nc;
  }
  a->v[a->n++] = op;
  return true;
}

static mil_status run_block(cw_pass *c, mil_block *b, int opset, bool (*valid)(cw_pass *, const mil_op *),
                            cw_transform_fn fn, int depth) {
  if (depth > PASS_MAX_DEPTH) return mil_diag_error(c->bld.d, MIL_ERR_UNSUPPORTED, "%s: blocks nested too deep", c->bld.pass);
  if (opset >= 0 && opset < MIL_IOS16) {
    mil_diag_add(c->bld.d, MIL_SEV_WARNING, "%s: the program's opset is older than iOS16; compression skipped",
                 c->bld.pass);
    return MIL_OK;
  }
  if (c->joint && opset >= 0 && opset < MIL_IOS18)
    return mil_diag_error(c->bld.d, MIL_ERR_INVALID,
                          "%s: joint compression is only supported since iOS18; re-convert the model with "
                          "minimum_deployment_target set to at least iOS18",
                          c->bld.pass);
  opvec todo = {0};
  mil_status st = MIL_OK;
  for (mil_op *op = b->first; op && st == MIL_OK; op = op->next) {
    for (int32_t i = 0; i < op->n_blocks && st == MIL_OK; i++) st = run_block(c, op->blocks[i], opset, valid, fn, depth + 1);
    if (st == MIL_OK && (valid ? valid(c, op) : cw_is_weight_const(op)) && !opvec_push(&todo, op))
      st = mil_diag_error(c->bld.d, MIL_ERR_NOMEM, "%s: out of memory", c->bld.pass);
  }
  for (size_t i = 0; i < todo.n && st == MIL_OK; i++) {
    int r = fn(c, todo.v[i]);
    if (r < 0) st = (mil_status)-r;
    else c->n_done += r;
  }
  free(todo.v);
  return st;
}

mil_status cw_pass_run(cw_pass *c, bool (*valid)(cw_pass *, const mil_op *), cw_transform_fn fn,
                       mil_pass_stats *stats) {
  mil_program *p = c->bld.p;
  mil_status st = MIL_OK;
  for (int32_t f = 0; f < p->n_functions && st == MIL_OK; f++) {
    mil_function *fun = p->functions[f];
    for (int32_t s = 0; s < fun->n_specs && st == MIL_OK; s++)
      st = run_block(c, fun->specs[s].block, mil_opset_version(fun->specs[s].opset), valid, fn, 0);
  }
  if (stats) stats->changes += c->n_done;
  return st;
}

mil_status cw_pass_main(mil_program *p, const mil_pass_options *o, mil_pass_stats *stats, mil_diag *d,
                        const char *pass, mil_cfg_type default_type, int n_types, const mil_cfg_type *types,
                        bool (*valid)(cw_pass *, const mil_op *), cw_transform_fn fn) {
  cw_pass c;
  mil_status st = cw_pass_init(&c, p, o, d, pass, default_type, n_types, types);
  if (st == MIL_OK) st = cw_pass_run(&c, valid, fn, stats);
  cw_pass_free(&c);
  return st;
}
