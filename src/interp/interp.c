/* The public API of the reference interpreter (mil/interp.h): inputs,
 * runs, outputs and state objects. A run copies the program
 * (mil_program_clone: weight views stay views), binds the inputs and
 * states to the function's input vars, executes the body (exec.c), copies
 * the outputs out and frees the copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core_internal.h"
#include "interp/interp_internal.h"

typedef struct interp_slot {
  char *name;
  const mil_type *type; /* declared type (in the source program) */
  bool is_state;
  bool set;
  int64_t shape[MIL_INTERP_MAX_RANK];
  mil_tensor t;
  void *buf;
  /* a dict output (classify's probabilities): its keys (dict.str_keys or
   * dict.int_keys point into keybuf); t holds the values */
  bool is_dict;
  bool is_label; /* classify's first output */
  mil_interp_dict dict;
  void *keybuf;
} interp_slot;

/* What the interpreters of one family (mil_interp_new and every
 * mil_interp_fork of it) share, read-only during runs: the program copy and
 * the caches (which lock themselves). Freed with the last interpreter or
 * state object that holds a reference. */
typedef struct interp_shared {
  unsigned refs;       /* atomic */
  mil_program *base;   /* the interpreter's copy; its const bytes are stable views */
  interp_cache *cache;
} interp_shared;

struct mil_interp {
  interp_shared *sh;
  mil_program *base;   /* sh->base */
  interp_cache *cache; /* sh->cache */
  char *fn_name;
  int opset;
  int32_t n_in, n_out;
  interp_slot *in;
  interp_slot *out;
  bool have_outputs;
  uint64_t seed;
  int64_t max_iters;
  int64_t max_value_bytes;
  mil_interp_state *own_state;
  interp_profile *prof; /* mil_interp_set_profile */
  int32_t threads;      /* mil_interp_set_threads; 0: the default */
  mil_interp_observer observer;
  void *observer_ud;
  interp_bufpool *pool; /* this interpreter's own (bufpool.c) */
};

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  return r;
}

static void slot_clear(interp_slot *s) {
  free(s->buf);
  free(s->keybuf);
  s->buf = s->keybuf = NULL;
  s->is_dict = s->is_label = false;
  memset(&s->dict, 0, sizeof s->dict);
  s->set = false;
  memset(&s->t, 0, sizeof s->t);
}

/* Copies t into slot s (shape into s->shape, data into a new buffer). */
static mil_status slot_fill(interp_slot *s, mil_dtype dt, int32_t rank, const int64_t *shape, const void *data,
                            size_t nbytes) {
  void *buf = malloc(nbytes ? nbytes : 1);
  if (!buf) return MIL_ERR_NOMEM;
  if (nbytes) memcpy(buf, data, nbytes);
  slot_clear(s);
  s->buf = buf;
  for (int32_t i = 0; i < rank; i++) s->shape[i] = shape[i];
  s->t.dtype = dt;
  s->t.rank = rank;
  s->t.shape = s->shape;
  s->t.data = buf;
  s->t.nbytes = nbytes;
  s->t.numel = interp_numel(rank, shape);
  s->set = true;
  return MIL_OK;
}

static int stabilize_op(mil_op *op, void *ud);

static interp_shared *shared_retain(interp_shared *sh) {
  if (sh) __atomic_add_fetch(&sh->refs, 1, __ATOMIC_RELAXED);
  return sh;
}

static void shared_release(interp_shared *sh) {
  if (!sh || __atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  mil_program_free(sh->base);
  interp_cache_free(sh->cache);
  free(sh);
}

/* Fills ip's per-interpreter part (names, slots) for function f of ip->base. */
static bool init_slots(mil_interp *ip, const mil_function *f, const mil_block *body) {
  ip->opset = mil_opset_version(f->opset);
  if (ip->opset < 0) ip->opset = MIL_IOS18;
  ip->fn_name = dupstr(f->name);
  ip->n_in = f->n_inputs;
  ip->n_out = body->n_outputs;
  ip->in = calloc((size_t)(ip->n_in ? ip->n_in : 1), sizeof *ip->in);
  ip->out = calloc((size_t)(ip->n_out ? ip->n_out : 1), sizeof *ip->out);
  if (!ip->fn_name || !ip->in || !ip->out) return false;
  for (int32_t i = 0; i < ip->n_in; i++) {
    const mil_var *v = f->inputs[i];
    ip->in[i].name = dupstr(v->name);
    ip->in[i].type = v->type;
    ip->in[i].is_state = v->type && v->type->kind == MIL_TYPE_STATE;
    if (!ip->in[i].name) return false;
  }
  for (int32_t i = 0; i < ip->n_out; i++) {
    const mil_var *v = body->outputs[i].var;
    ip->out[i].name = dupstr(v ? v->name : "");
    if (!ip->out[i].name) return false;
  }
  return true;
}

static const mil_function *find_function(const mil_program *p, const char *name) {
  if (name) return mil_program_find_function(p, name);
  const mil_function *f = mil_program_find_function(p, "main");
  if (!f && p->n_functions >= 1) f = p->functions[0];
  return f;
}

static void list_functions(const mil_program *p, char *buf, size_t n) {
  size_t l = 0;
  buf[0] = 0;
  for (int32_t i = 0; i < p->n_functions && l + 1 < n; i++) {
    int k = snprintf(buf + l, n - l, "%s'%s'", i ? ", " : "", p->functions[i]->name);
    if (k < 0) break;
    l += (size_t)k;
  }
}

mil_status mil_interp_new(const mil_program *p, const char *function, mil_interp **out, mil_diag *d) {
  if (!out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_new: NULL out");
  *out = NULL;
  if (!p) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_new: NULL program");
  const mil_function *f = find_function(p, function);
  if (!f) {
    char names[512];
    list_functions(p, names, sizeof names);
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "the program has no function '%s' (functions: %s)",
                          function ? function : "main", names[0] ? names : "none");
  }
  mil_diag vd;
  mil_diag_init(&vd);
  mil_status st = mil_program_validate(p, &vd);
  if (st != MIL_OK || vd.n_errors) {
    for (size_t i = 0; i < vd.count; i++)
      if (vd.msgs[i].severity == MIL_SEV_ERROR) mil_diag_add(d, MIL_SEV_ERROR, "%s", vd.msgs[i].text);
    mil_diag_error(d, st != MIL_OK ? st : MIL_ERR_INVALID, "cannot run function '%s': the program is not valid",
                   f->name);
    mil_diag_clear(&vd);
    return st != MIL_OK ? st : MIL_ERR_INVALID;
  }
  mil_diag_clear(&vd);
  const mil_block *body = mil_function_body(f);
  if (!body) return mil_diag_error(d, MIL_ERR_INVALID, "function '%s' has no body for opset %s", f->name, f->opset);
  mil_interp *ip = calloc(1, sizeof *ip);
  if (!ip) return MIL_ERR_NOMEM;
  ip->sh = calloc(1, sizeof *ip->sh);
  if (!ip->sh) goto nomem;
  ip->sh->refs = 1;
  ip->cache = ip->sh->cache = interp_cache_new();
  ip->base = ip->sh->base = ip->cache ? mil_program_clone(p) : NULL;
  if (!ip->base) goto nomem;
  mil_program_walk(ip->base, stabilize_op, ip);
  f = mil_program_find_function(ip->base, f->name); /* names and types from the interpreter's copy */
  body = f ? mil_function_body(f) : NULL;
  if (!body) goto nomem;
  ip->seed = 0;
  ip->max_iters = 10000000;
  ip->max_value_bytes = mil_interp_default_max_value_bytes();
  if (!init_slots(ip, f, body)) goto nomem;
  *out = ip;
  return MIL_OK;
nomem:
  mil_interp_free(ip);
  return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory creating the interpreter");
}

void mil_interp_free(mil_interp *ip) {
  if (!ip) return;
  for (int32_t i = 0; ip->in && i < ip->n_in; i++) {
    slot_clear(&ip->in[i]);
    free(ip->in[i].name);
  }
  for (int32_t i = 0; ip->out && i < ip->n_out; i++) {
    slot_clear(&ip->out[i]);
    free(ip->out[i].name);
  }
  free(ip->in);
  free(ip->out);
  free(ip->fn_name);
  mil_interp_state_free(ip->own_state);
  shared_release(ip->sh);
  interp_profile_free(ip->prof);
  interp_bufpool_free(ip->pool);
  free(ip);
}

mil_status mil_interp_fork(const mil_interp *ip, mil_interp **out, mil_diag *d) {
  if (!out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_fork: NULL out");
  *out = NULL;
  if (!ip) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_fork: NULL interpreter");
  const mil_function *f = mil_program_find_function(ip->base, ip->fn_name);
  const mil_block *body = f ? mil_function_body(f) : NULL;
  if (!body) return mil_diag_error(d, MIL_ERR_INVALID, "function '%s' disappeared from the program", ip->fn_name);
  mil_interp *n = calloc(1, sizeof *n);
  if (!n) return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory creating the interpreter");
  n->sh = shared_retain(ip->sh);
  n->base = ip->base;
  n->cache = ip->cache;
  n->seed = ip->seed;
  n->threads = ip->threads;
  n->max_iters = ip->max_iters;
  n->max_value_bytes = ip->max_value_bytes;
  if (!init_slots(n, f, body)) {
    mil_interp_free(n);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory creating the interpreter");
  }
  *out = n;
  return MIL_OK;
}

void mil_interp_clear_inputs(mil_interp *ip) {
  for (int32_t i = 0; ip && i < ip->n_in; i++) slot_clear(&ip->in[i]);
}

int32_t mil_interp_n_inputs(const mil_interp *ip) { return ip ? ip->n_in : 0; }
const char *mil_interp_input_name(const mil_interp *ip, int32_t i) {
  return ip && i >= 0 && i < ip->n_in ? ip->in[i].name : NULL;
}
const mil_type *mil_interp_input_type(const mil_interp *ip, int32_t i) {
  return ip && i >= 0 && i < ip->n_in ? ip->in[i].type : NULL;
}
int32_t mil_interp_n_outputs(const mil_interp *ip) { return ip ? ip->n_out : 0; }
const char *mil_interp_output_name(const mil_interp *ip, int32_t i) {
  return ip && i >= 0 && i < ip->n_out ? ip->out[i].name : NULL;
}
void mil_interp_set_seed(mil_interp *ip, uint64_t seed) {
  if (ip) ip->seed = seed;
}
void mil_interp_set_max_iterations(mil_interp *ip, int64_t n) {
  if (ip) ip->max_iters = n < 0 ? 0 : n;
}

int64_t mil_interp_default_max_value_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
  int64_t half = MIL_TENSOR_MAX_BYTES;
  if (pages > 0 && size > 0 && (int64_t)pages <= INT64_MAX / 2 / (int64_t)size) half = (int64_t)pages * size / 2;
  return half < MIL_TENSOR_MAX_BYTES ? half : MIL_TENSOR_MAX_BYTES;
}

void mil_interp_set_max_value_bytes(mil_interp *ip, int64_t n) {
  if (ip) ip->max_value_bytes = n <= 0 ? mil_interp_default_max_value_bytes() : n < MIL_TENSOR_MAX_BYTES ? n : MIL_TENSOR_MAX_BYTES;
}

int64_t mil_interp_max_value_bytes(const mil_interp *ip) { return ip ? ip->max_value_bytes : 0; }

static void shape_str(int32_t rank, const int64_t *shape, mil_dtype dt, char *buf, size_t n) {
  size_t l = (size_t)snprintf(buf, n, "(");
  for (int32_t i = 0; i < rank && l < n; i++) l += (size_t)snprintf(buf + l, n - l, "%lld, ", (long long)shape[i]);
  if (l < n) snprintf(buf + l, n - l, "%s)", mil_dtype_name(dt));
}

/* Checks a tensor (dtype, rank, shape, data size) against a declared type. */
static mil_status check_tensor(const char *what, const char *name, const mil_type *want, const mil_tensor *t,
                               mil_diag *d) {
  char wb[256], gb[512];
  mil_type_to_string(want, wb, sizeof wb);
  if (t->rank < 0 || t->rank > MIL_INTERP_MAX_RANK || (t->rank > 0 && !t->shape))
    return mil_diag_error(d, MIL_ERR_INVALID, "%s '%s': rank %d is not supported (0..%d)", what, name, t->rank,
                          MIL_INTERP_MAX_RANK);
  for (int32_t i = 0; i < t->rank; i++)
    if (t->shape[i] < 0) return mil_diag_error(d, MIL_ERR_INVALID, "%s '%s': negative dimension %d", what, name, i);
  shape_str(t->rank, t->shape, t->dtype, gb, sizeof gb);
  if (!mil_dtype_is_valid(t->dtype) || mil_dtype_size(t->dtype) == 0 || mil_dtype_is_complex(t->dtype))
    return mil_diag_error(d, MIL_ERR_TYPE, "%s '%s': dtype %s cannot be fed to the interpreter", what, name,
                          mil_dtype_name(t->dtype));
  int64_t numel = interp_numel(t->rank, t->shape);
  if (numel < 0 || t->numel != numel || t->nbytes != (size_t)numel * mil_dtype_size(t->dtype) ||
      (numel > 0 && !t->data))
    return mil_diag_error(d, MIL_ERR_INVALID,
                          "%s '%s': shape %s needs %lld elements (%lld bytes), got numel %lld, nbytes %zu%s", what,
                          name, gb, (long long)numel, (long long)(numel * (int64_t)mil_dtype_size(t->dtype)),
                          (long long)t->numel, t->nbytes, numel > 0 && !t->data ? " and no data" : "");
  if (!want || want->kind != MIL_TYPE_TENSOR) return MIL_OK;
  if (want->dtype != t->dtype)
    return mil_diag_error(d, MIL_ERR_TYPE, "%s '%s': expected dtype %s (declared %s), got %s", what, name,
                          mil_dtype_name(want->dtype), wb, gb);
  if (want->rank >= 0 && want->rank != t->rank)
    return mil_diag_error(d, MIL_ERR_TYPE, "%s '%s': expected rank %d (declared %s), got rank %d %s", what, name,
                          want->rank, wb, t->rank, gb);
  for (int32_t i = 0; want->rank >= 0 && i < want->rank; i++)
    if (want->dims[i].size >= 0 && want->dims[i].size != t->shape[i])
      return mil_diag_error(d, MIL_ERR_TYPE, "%s '%s': dimension %d must be %lld (declared %s), got %lld in %s", what,
                            name, i, (long long)want->dims[i].size, wb, (long long)t->shape[i], gb);
  return MIL_OK;
}

static int32_t find_slot(const interp_slot *s, int32_t n, const char *name) {
  for (int32_t i = 0; i < n; i++)
    if (strcmp(s[i].name, name) == 0) return i;
  return -1;
}

mil_status mil_interp_set_input(mil_interp *ip, const char *name, const mil_tensor *t, mil_diag *d) {
  if (!ip || !name || !t) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_set_input: NULL argument");
  int32_t i = find_slot(ip->in, ip->n_in, name);
  if (i < 0) {
    char names[512];
    size_t l = 0;
    names[0] = 0;
    for (int32_t k = 0; k < ip->n_in && l + 1 < sizeof names; k++) {
      int w = snprintf(names + l, sizeof names - l, "%s'%s'", k ? ", " : "", ip->in[k].name);
      if (w < 0) break;
      l += (size_t)w;
    }
    return mil_diag_error(d, MIL_ERR_NOT_FOUND, "function '%s' has no input '%s' (inputs: %s)", ip->fn_name, name,
                          names[0] ? names : "none");
  }
  interp_slot *s = &ip->in[i];
  if (s->is_state)
    return mil_diag_error(d, MIL_ERR_TYPE, "input '%s' is a state; set it through a mil_interp_state", name);
  mil_status st = check_tensor("input", name, s->type, t, d);
  if (st != MIL_OK) return st;
  if (slot_fill(s, t->dtype, t->rank, t->shape, t->data, t->nbytes) != MIL_OK)
    return mil_diag_error(d, MIL_ERR_NOMEM, "input '%s': out of memory copying %zu bytes", name, t->nbytes);
  return MIL_OK;
}

const mil_tensor *mil_interp_output(const mil_interp *ip, const char *name) {
  if (!ip || !name || !ip->have_outputs) return NULL;
  int32_t i = find_slot(ip->out, ip->n_out, name);
  return i < 0 ? NULL : &ip->out[i].t;
}

const mil_tensor *mil_interp_output_at(const mil_interp *ip, int32_t i) {
  if (!ip || !ip->have_outputs || i < 0 || i >= ip->n_out) return NULL;
  return &ip->out[i].t;
}

bool mil_interp_output_is_label(const mil_interp *ip, int32_t i) {
  return ip && ip->have_outputs && i >= 0 && i < ip->n_out && ip->out[i].is_label;
}

const mil_interp_dict *mil_interp_output_dict(const mil_interp *ip, int32_t i) {
  if (!ip || !ip->have_outputs || i < 0 || i >= ip->n_out || !ip->out[i].is_dict) return NULL;
  return &ip->out[i].dict;
}

/* Turns a const value of the base program into a view of its own bytes,
 * so that the per-run copies (mil_program_clone) share the bytes instead of
 * copying them, and records the bytes as stable. */
static const mil_value *stable_view(mil_interp *ip, const mil_value *v) {
  if (!v || v->kind != MIL_VAL_TENSOR) return v;
  interp_cache_mark_stable(ip->cache, mil_value_data(v));
  if (v->storage == MIL_STORE_VIEW) return v;
  mil_value *w = mil_program_alloc(ip->base, sizeof *w);
  if (!w) return v;
  *w = *v;
  w->storage = MIL_STORE_VIEW;
  return w;
}

static int stabilize_op(mil_op *op, void *ud) {
  mil_interp *ip = ud;
  for (int32_t i = 0; i < op->n_outputs; i++)
    if (op->outputs[i]->val && mil_op_is_const(op)) op->outputs[i]->val = stable_view(ip, op->outputs[i]->val);
  for (int32_t i = 0; i < op->n_inputs; i++)
    for (int32_t j = 0; j < op->inputs[i].n_args; j++)
      if (op->inputs[i].args[j].value) op->inputs[i].args[j].value = stable_view(ip, op->inputs[i].args[j].value);
  return 0;
}

/* ---------------- states ---------------- */

mil_status mil_interp_state_new(const mil_interp *ip, mil_interp_state **out, mil_diag *d) {
  if (!ip || !out) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_state_new: NULL argument");
  *out = NULL;
  mil_interp_state *s = calloc(1, sizeof *s);
  int32_t n = 0;
  for (int32_t i = 0; i < ip->n_in; i++) n += ip->in[i].is_state;
  if (s) s->slots = calloc((size_t)(n ? n : 1), sizeof *s->slots);
  if (!s || !s->slots) {
    free(s);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory creating a state");
  }
  s->family = shared_retain(ip->sh);
  const mil_function *fn = mil_program_find_function(ip->base, ip->fn_name);
  for (int32_t i = 0; i < ip->n_in; i++) {
    if (!ip->in[i].is_state) continue;
    interp_state_slot *sl = &s->slots[s->n++];
    const mil_type *w = ip->in[i].type->elem;
    sl->name = fn && i < fn->n_inputs ? fn->inputs[i]->name : NULL;
    sl->elem = w;
    int32_t rank;
    if (!w || !interp_shape(w, sl->shape, &rank) || mil_dtype_size(w->dtype) == 0) {
      char tb[256];
      mil_type_to_string(ip->in[i].type, tb, sizeof tb);
      mil_interp_state_free(s);
      return mil_diag_error(d, MIL_ERR_TYPE, "state input '%s' must wrap a tensor of constant shape, got %s",
                            ip->in[i].name, tb);
    }
    int64_t numel = interp_numel(rank, sl->shape);
    size_t nbytes = (size_t)numel * mil_dtype_size(w->dtype);
    sl->buf = calloc(nbytes ? nbytes : 1, 1);
    if (numel < 0 || !sl->buf) {
      mil_interp_state_free(s);
      return mil_diag_error(d, MIL_ERR_NOMEM, "state input '%s': out of memory", ip->in[i].name);
    }
    sl->dtype = w->dtype;
    sl->rank = rank;
    sl->t = (mil_tensor){w->dtype, rank, sl->shape, sl->buf, nbytes, numel};
  }
  *out = s;
  return MIL_OK;
}

void mil_interp_state_free(mil_interp_state *s) {
  if (!s) return;
  for (int32_t i = 0; i < s->n; i++) free(s->slots[i].buf);
  free(s->slots);
  shared_release((interp_shared *)s->family);
  free(s);
}

static interp_state_slot *state_slot(const mil_interp_state *s, const char *name) {
  for (int32_t i = 0; s && i < s->n; i++)
    if (s->slots[i].name && strcmp(s->slots[i].name, name) == 0) return &s->slots[i];
  return NULL;
}

const mil_tensor *mil_interp_state_get(const mil_interp_state *s, const char *name) {
  interp_state_slot *sl = name ? state_slot(s, name) : NULL;
  return sl ? &sl->t : NULL;
}

mil_status mil_interp_state_set(mil_interp_state *s, const char *name, const mil_tensor *t, mil_diag *d) {
  if (!s || !name || !t) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_state_set: NULL argument");
  interp_state_slot *sl = state_slot(s, name);
  if (!sl) return mil_diag_error(d, MIL_ERR_NOT_FOUND, "the function has no state input '%s'", name);
  mil_status st = check_tensor("state", name, sl->elem, t, d);
  if (st != MIL_OK) return st;
  if (t->nbytes) memcpy(sl->buf, t->data, t->nbytes);
  return MIL_OK;
}

/* ---------------- run ---------------- */

/* Symbolic dims shared by several inputs must get one size. */
static mil_status check_symbols(const mil_interp *ip, mil_diag *d) {
  for (int32_t a = 0; a < ip->n_in; a++) {
    const mil_type *ta = ip->in[a].type;
    if (ip->in[a].is_state || !ta || ta->kind != MIL_TYPE_TENSOR || ta->rank < 0) continue;
    for (int32_t i = 0; i < ta->rank; i++) {
      if (!ta->dims[i].sym) continue;
      for (int32_t b = 0; b <= a; b++) {
        const mil_type *tb = ip->in[b].type;
        if (ip->in[b].is_state || !tb || tb->kind != MIL_TYPE_TENSOR || tb->rank < 0) continue;
        for (int32_t j = 0; j < tb->rank; j++)
          if (tb->dims[j].sym && strcmp(tb->dims[j].sym, ta->dims[i].sym) == 0 &&
              ip->in[a].shape[i] != ip->in[b].shape[j])
            return mil_diag_error(d, MIL_ERR_TYPE,
                                  "input '%s' dimension %d and input '%s' dimension %d are both '%s' but have sizes "
                                  "%lld and %lld",
                                  ip->in[b].name, j, ip->in[a].name, i, ta->dims[i].sym,
                                  (long long)ip->in[b].shape[j], (long long)ip->in[a].shape[i]);
      }
    }
  }
  return MIL_OK;
}

static mil_value *input_value(mil_program *p, const mil_type *declared, const mil_tensor *t) {
  if (t->rank == 0 && declared && declared->is_scalar) return mil_value_new_tensor(p, t->dtype, 0, NULL, true, t->data);
  return mil_value_new_view(p, t->dtype, t->rank, t->shape, t->data, t->nbytes);
}

static mil_status bind_inputs(mil_interp *ip, interp_run *r) {
  for (int32_t i = 0; i < ip->n_in && i < r->fn->n_inputs; i++) {
    mil_var *v = r->fn->inputs[i];
    if (ip->in[i].is_state) {
      interp_state_slot *sl = state_slot(r->state, ip->in[i].name);
      if (!sl)
        return mil_diag_error(r->d, MIL_ERR_INVALID, "state input '%s' is missing from the state object",
                              ip->in[i].name);
      mil_value *sv = mil_value_new_view(r->prog, sl->dtype, sl->rank, sl->shape, sl->buf, sl->t.nbytes);
      if (!sv) return mil_diag_error(r->d, MIL_ERR_NOMEM, "out of memory binding state '%s'", ip->in[i].name);
      v->val = sv; /* the var keeps its state type */
      continue;
    }
    mil_value *iv = input_value(r->prog, ip->in[i].type, &ip->in[i].t);
    if (!iv) return mil_diag_error(r->d, MIL_ERR_NOMEM, "out of memory binding input '%s'", ip->in[i].name);
    interp_bind(v, iv);
  }
  return MIL_OK;
}

/* n strings (get(src, k)) copied into one allocation: n pointers, then
 * the characters. NULL when out of memory. */
static const char **copy_strings(int64_t n, const char *(*get)(const void *, int64_t), const void *src) {
  size_t chars = 0;
  for (int64_t k = 0; k < n; k++) chars += strlen(get(src, k)) + 1;
  const char **p = malloc((size_t)n * sizeof *p + chars + 1);
  if (!p) return NULL;
  char *at = (char *)(p + n);
  for (int64_t k = 0; k < n; k++) {
    size_t l = strlen(get(src, k)) + 1;
    memcpy(at, get(src, k), l);
    p[k] = at;
    at += l;
  }
  return p;
}

static const char *tensor_str(const void *v, int64_t k) { return mil_value_get_str(v, k); }
static const char *dict_key_str(const void *v, int64_t k) {
  return mil_value_get_str(((const mil_value *)v)->keys[k], 0);
}

/* A string tensor output: the pointers and characters in the slot's buffer. */
static mil_status slot_fill_strings(interp_slot *s, const mil_value *val) {
  int64_t shape[MIL_INTERP_MAX_RANK];
  int32_t rank = interp_vshape(val, shape);
  const char **p = copy_strings(val->numel, tensor_str, val);
  if (!p) return MIL_ERR_NOMEM;
  slot_clear(s);
  s->buf = p;
  for (int32_t i = 0; i < rank; i++) s->shape[i] = shape[i];
  s->t = (mil_tensor){MIL_DT_STRING, rank, s->shape, p, (size_t)val->numel * sizeof *p, val->numel};
  s->set = true;
  return MIL_OK;
}

/* A dict output with str or int64 keys and numeric values: the values as
 * an fp64 tensor (n,), the keys in the slot's dict. */
static mil_status slot_fill_dict(interp_slot *s, const mil_value *val) {
  int64_t n = val->n;
  const mil_value *k0 = n ? val->keys[0] : NULL;
  mil_dtype kt = k0 && k0->kind == MIL_VAL_TENSOR && k0->type ? k0->type->dtype : MIL_DT_STRING;
  double *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
  void *keys = kt == MIL_DT_STRING ? (void *)copy_strings(n, dict_key_str, val)
                                   : malloc((size_t)(n ? n : 1) * sizeof(int64_t));
  if (!vals || !keys) {
    free(vals), free(keys);
    return MIL_ERR_NOMEM;
  }
  for (int64_t k = 0; k < n; k++) {
    vals[k] = mil_value_get_f64(val->items[k], 0);
    if (kt != MIL_DT_STRING) ((int64_t *)keys)[k] = mil_value_get_i64(val->keys[k], 0);
  }
  slot_clear(s);
  s->buf = vals;
  s->keybuf = keys;
  s->shape[0] = n;
  s->t = (mil_tensor){MIL_DT_FP64, 1, s->shape, vals, (size_t)n * sizeof *vals, n};
  s->is_dict = true;
  s->dict = (mil_interp_dict){kt == MIL_DT_STRING ? MIL_DT_STRING : MIL_DT_INT64, n,
                              kt == MIL_DT_STRING ? (const char *const *)keys : NULL,
                              kt == MIL_DT_STRING ? NULL : (const int64_t *)keys, vals};
  s->set = true;
  return MIL_OK;
}

static mil_status collect_outputs(mil_interp *ip, interp_run *r, mil_block *body) {
  for (int32_t i = 0; i < ip->n_out; i++) {
    const mil_var *v = body->outputs[i].var;
    const mil_value *val = v->val;
    bool str = val->kind == MIL_VAL_TENSOR && val->type && val->type->dtype == MIL_DT_STRING;
    bool label = v->op && v->out_index == 0 && strcmp(v->op->type, "classify") == 0;
    if (val->kind == MIL_VAL_DICT || str) {
      mil_status st = str ? slot_fill_strings(&ip->out[i], val) : slot_fill_dict(&ip->out[i], val);
      if (st != MIL_OK) return mil_diag_error(r->d, MIL_ERR_NOMEM, "out of memory copying output '%s'", v->name);
      ip->out[i].is_label = label;
      continue;
    }
    if (val->kind != MIL_VAL_TENSOR || !val->type)
      return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "function '%s': output '%s' is not a tensor", ip->fn_name,
                            v->name);
    int64_t shape[MIL_INTERP_MAX_RANK];
    int32_t rank = interp_vshape(val, shape);
    if (slot_fill(&ip->out[i], val->type->dtype, rank, shape, mil_value_data(val), val->nbytes) != MIL_OK)
      return mil_diag_error(r->d, MIL_ERR_NOMEM, "out of memory copying output '%s'", v->name);
    ip->out[i].is_label = label;
  }
  return MIL_OK;
}

static void write_back_states(mil_interp *ip, interp_run *r) {
  for (int32_t i = 0; i < ip->n_in && i < r->fn->n_inputs; i++) {
    if (!ip->in[i].is_state) continue;
    interp_state_slot *sl = state_slot(r->state, ip->in[i].name);
    const mil_value *v = r->fn->inputs[i]->val;
    if (sl && v && v->kind == MIL_VAL_TENSOR && mil_value_data(v) != sl->buf && v->nbytes == sl->t.nbytes && v->nbytes)
      memcpy(sl->buf, mil_value_data(v), v->nbytes);
  }
}

mil_status mil_interp_run(mil_interp *ip, mil_interp_state *state, mil_diag *d) {
  if (!ip) return mil_diag_error(d, MIL_ERR_INVALID, "mil_interp_run: NULL interpreter");
  ip->have_outputs = false;
  bool has_state = false;
  for (int32_t i = 0; i < ip->n_in; i++) {
    has_state |= ip->in[i].is_state;
    if (!ip->in[i].is_state && !ip->in[i].set) {
      char tb[256];
      mil_type_to_string(ip->in[i].type, tb, sizeof tb);
      return mil_diag_error(d, MIL_ERR_INVALID, "function '%s': input '%s' %s was not set", ip->fn_name,
                            ip->in[i].name, tb);
    }
  }
  mil_status st = check_symbols(ip, d);
  if (st != MIL_OK) return st;
  if (state && state->family != ip->sh)
    return mil_diag_error(d, MIL_ERR_INVALID, "the state object was created for an interpreter of another program copy (mil_interp_new); use one made by this interpreter or a fork of it");
  if (!state && has_state) {
    if (!ip->own_state && (st = mil_interp_state_new(ip, &ip->own_state, d)) != MIL_OK) return st;
    state = ip->own_state;
  }
  interp_run r;
  memset(&r, 0, sizeof r);
  r.ip = ip;
  r.d = d;
  r.state = state;
  r.seed = ip->seed;
  r.iters_left = ip->max_iters;
  r.ip_max_iters = ip->max_iters;
  r.max_value_bytes = ip->max_value_bytes;
  r.opset = ip->opset;
  r.cache = ip->cache;
  r.prof = ip->prof;
  interp_threads_begin(ip->threads);
  int64_t t0 = r.prof ? interp_profile_now() : 0;
  r.observer = ip->observer;
  r.observer_ud = ip->observer_ud;
  if (!ip->pool) ip->pool = interp_bufpool_new(); /* NULL: the default allocator */
  r.pool = ip->pool;
  interp_bufpool_run_begin(ip->pool);
  /* the copy borrows the base's strings and types: the base outlives every run */
  r.prog = ir_program_clone_borrowing(ip->base, ip->pool ? interp_bufpool_allocator(ip->pool) : ip->base->alloc);
  if (!r.prog) {
    interp_bufpool_run_end(ip->pool);
    return mil_diag_error(d, MIL_ERR_NOMEM, "out of memory copying the program for a run");
  }
  r.fn = mil_program_find_function(r.prog, ip->fn_name);
  mil_block *body = r.fn ? mil_function_body(r.fn) : NULL;
  if (!body) st = mil_diag_error(d, MIL_ERR_INVALID, "function '%s' disappeared from the program", ip->fn_name);
  if (st == MIL_OK) st = bind_inputs(ip, &r);
  if (st == MIL_OK) st = interp_exec_block(&r, body);
  if (st == MIL_OK) st = collect_outputs(ip, &r, body);
  if (st == MIL_OK) {
    write_back_states(ip, &r);
    ip->have_outputs = true;
  }
  interp_scratch_release(&r, NULL);
  mil_program_free(r.prog);
  interp_bufpool_run_end(ip->pool);
  if (r.prof && st == MIL_OK) interp_profile_run(r.prof, interp_profile_now() - t0);
  return st;
}

mil_status mil_interp_set_threads(mil_interp *ip, int32_t n) {
  if (!ip || n < 0 || n > MIL_INTERP_MAX_THREADS) return MIL_ERR_INVALID;
  ip->threads = n;
  return MIL_OK;
}

int32_t mil_interp_threads(const mil_interp *ip) {
  if (!ip) return 0;
  return ip->threads > 0 ? ip->threads : interp_default_threads();
}

mil_status mil_interp_set_profile(mil_interp *ip, bool on) {
  if (!ip) return MIL_ERR_INVALID;
  interp_profile_free(ip->prof);
  ip->prof = on ? interp_profile_new() : NULL;
  return on && !ip->prof ? MIL_ERR_NOMEM : MIL_OK;
}

void mil_interp_profile_report(const mil_interp *ip, FILE *f, int top) {
  if (ip && ip->prof) interp_profile_report(ip->prof, f, top);
}

void mil_interp_set_observer(mil_interp *ip, mil_interp_observer fn, void *ud) {
  if (!ip) return;
  ip->observer = fn;
  ip->observer_ud = fn ? ud : NULL;
}

bool mil_interp_supports_op(const char *type, int opset) {
  if (!type) return false;
  if (strcmp(type, "const") == 0 || interp_kernel_find(type)) return mil_op_def_find(type, opset) != NULL;
  const mil_op_def *def = mil_op_def_find(type, opset);
  return def && def->fold;
}
