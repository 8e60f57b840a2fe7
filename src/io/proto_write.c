/* mil_program -> MIL Program protobuf; mil_model -> serialized Model.
 *
 * Mirrors coremltools/converters/mil/backend/mil/load.py (MILProtoExporter:
 * translate_const, translate_constexpr, translate_generic_op,
 * translate_coreml_update_state_op, create_block, convert_function) and
 * helper.py, with the encodings of formats.md sections 2.3 and 3:
 *
 *  - every op gets attribute "name" (a rank-0 string); op attributes other
 *    than "name" (custom layers) are written too;
 *  - const ops carry "val": a blob reference when mil_blob_should_store
 *    says so (>= 10 elements of a blob dtype), otherwise immediate;
 *  - a const whose every consumer is a constexpr_* op is not written: its
 *    value is inlined into those ops;
 *  - constexpr_* ops use the iOS16 form (parameters as attributes) for
 *    constexpr_affine_dequantize and whenever the model is below
 *    specification 9, the iOS18 form (parameters as inputs: a name binding
 *    when produced by another constexpr op, else a value binding)
 *    otherwise; no op registry is needed to tell the two apart;
 *  - classify.classes and reshape_like.begins/ends/end_masks are written
 *    as immediate value bindings, and the const feeding classify.classes
 *    (classify being the block's last op) is not written;
 *  - coreml_update_state becomes write_state ("<op>_write_state") followed
 *    by read_state ("<op>", only when the result is used);
 *  - inputs whose name starts with '_' are internal and skipped.
 * Values are written as libmil holds them: no dtype narrowing happens here
 * (coremltools narrows when a const is created; libmil does so on load).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/model_internal.h"

/* snprintf for message prefixes: truncation of a long name is acceptable. */
static void *fail(io_write *w, mil_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void *fail(io_write *w, mil_status st, const char *fmt, ...) {
  if (w->st == MIL_OK) w->st = st;
  va_list ap;
  va_start(ap, fmt);
  mil_diag_vadd(w->d, MIL_SEV_ERROR, fmt, ap);
  va_end(ap);
  return NULL;
}

static void *oom(io_write *w) {
  if (w->st == MIL_OK) {
    w->st = MIL_ERR_NOMEM;
    mil_diag_error(w->d, MIL_ERR_NOMEM, "%s: out of memory", w->file);
  }
  return NULL;
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static Milproto__NamedValueType *named_type(io_write *w, const char *name, const mil_type *t, const char *where) {
  Milproto__NamedValueType *nt = io_pb_new(&milproto__named_value_type__descriptor);
  if (!nt) return oom(w);
  if (!(nt->name = io_model_strdup(name)) || !(nt->type = io_type_to_proto(w, t, where))) {
    io_pb_free(nt);
    return w->st == MIL_OK ? oom(w) : NULL;
  }
  return nt;
}

static bool add_attr(io_write *w, Milproto__Operation *po, const char *key, Milproto__Value *v) {
  if (!v) return w->st == MIL_OK ? (oom(w), false) : false;
  Milproto__Operation__AttributesEntry *e = io_pb_new(&milproto__operation__attributes_entry__descriptor);
  if (!e || !(e->key = io_model_strdup(key)) || !io_pb_push(&po->attributes, &po->n_attributes, e)) {
    io_pb_free(e);
    io_pb_free(v);
    oom(w);
    return false;
  }
  e->value = v;
  return true;
}

/* A new Operation with type and (name != NULL) the "name" attribute. */
static Milproto__Operation *new_op(io_write *w, const char *type, const char *name) {
  Milproto__Operation *po = io_pb_new(&milproto__operation__descriptor);
  if (!po || !(po->type = io_model_strdup(type))) {
    io_pb_free(po);
    return oom(w);
  }
  if (name && !add_attr(w, po, "name", io_string_value(name))) {
    io_pb_free(po);
    return NULL;
  }
  return po;
}

/* The Argument for input `name`, appended to po's inputs. */
static Milproto__Argument *new_input(io_write *w, Milproto__Operation *po, const char *name) {
  Milproto__Operation__InputsEntry *e = io_pb_new(&milproto__operation__inputs_entry__descriptor);
  Milproto__Argument *a = io_pb_new(&milproto__argument__descriptor);
  if (!e || !a || !(e->key = io_model_strdup(name)) || !io_pb_push(&po->inputs, &po->n_inputs, e)) {
    io_pb_free(e);
    io_pb_free(a);
    return oom(w);
  }
  e->value = a;
  return a;
}

static bool bind_name(io_write *w, Milproto__Argument *a, const char *var_name) {
  Milproto__Argument__Binding *b = io_pb_new(&milproto__argument__binding__descriptor);
  if (!b || !(b->name = io_model_strdup(var_name)) || !io_pb_push(&a->arguments, &a->n_arguments, b)) {
    io_pb_free(b);
    oom(w);
    return false;
  }
  b->binding_case = MILPROTO__ARGUMENT__BINDING__BINDING_NAME;
  return true;
}

static bool bind_value(io_write *w, Milproto__Argument *a, Milproto__Value *v) {
  if (!v) return false;
  Milproto__Argument__Binding *b = io_pb_new(&milproto__argument__binding__descriptor);
  if (!b || !io_pb_push(&a->arguments, &a->n_arguments, b)) {
    io_pb_free(b);
    io_pb_free(v);
    oom(w);
    return false;
  }
  b->binding_case = MILPROTO__ARGUMENT__BINDING__BINDING_VALUE;
  b->value = v;
  return true;
}

static bool add_outputs(io_write *w, Milproto__Operation *po, const mil_op *op, const char *where) {
  for (int32_t i = 0; i < op->n_outputs; i++) {
    const mil_var *v = op->outputs[i];
    Milproto__NamedValueType *nt = named_type(w, v->name, v->type, where);
    if (!nt) return false;
    if (!io_pb_push(&po->outputs, &po->n_outputs, nt)) {
      io_pb_free(nt);
      oom(w);
      return false;
    }
  }
  return true;
}

static bool add_extra_attrs(io_write *w, Milproto__Operation *po, const mil_op *op, const char *where) {
  for (int32_t i = 0; i < op->n_attrs; i++) {
    if (!strcmp(op->attrs[i].name, "name")) continue;
    if (!add_attr(w, po, op->attrs[i].name, io_value_to_proto(w, op->attrs[i].value, false, where))) return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* ops                                                                        */
/* ------------------------------------------------------------------------ */

static Milproto__Operation *translate_const(io_write *w, const mil_op *op, const char *where) {
  if (op->n_outputs != 1) return fail(w, MIL_ERR_INVALID, "%s: a const op must have one output, found %d", where, op->n_outputs);
  const mil_var *v = op->outputs[0];
  if (!v->val) return fail(w, MIL_ERR_INVALID, "%s: const op has no value", where);
  Milproto__Operation *po = new_op(w, "const", op->name);
  if (!po) return NULL;
  if (!add_attr(w, po, "val", io_value_to_proto(w, v->val, true, where)) || !add_extra_attrs(w, po, op, where) ||
      !add_outputs(w, po, op, where)) {
    io_pb_free(po);
    return NULL;
  }
  return po;
}

/* The value of a constexpr parameter, or NULL (with an error) when the
 * bound var is not a compile-time constant. */
static Milproto__Value *param_value(io_write *w, const mil_arg *a, const char *param, const char *where) {
  if (a->value) return io_value_to_proto(w, a->value, true, where);
  const mil_var *v = a->use.var;
  if (!v || !v->val)
    return fail(w, MIL_ERR_INVALID, "%s: parameter '%s' is bound to %s%s, which is not a constant", where, param,
                v ? "%" : "nothing", v ? v->name : "");
  return io_value_to_proto(w, v->val, true, where);
}

static Milproto__Operation *translate_constexpr(io_write *w, const mil_op *op, const char *where) {
  bool attr_form = w->spec_version < 9 || !strcmp(op->type, "constexpr_affine_dequantize");
  Milproto__Operation *po = new_op(w, op->type, op->name);
  if (!po) return NULL;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->name[0] == '_') continue;
    if (attr_form) {
      if (in->n_args != 1) {
        io_pb_free(po);
        return fail(w, MIL_ERR_UNSUPPORTED, "%s: parameter '%s' has %d bindings; the attribute form of constexpr ops "
                    "takes exactly one", where, in->name, in->n_args);
      }
      if (!add_attr(w, po, in->name, param_value(w, &in->args[0], in->name, where))) goto fail;
      continue;
    }
    Milproto__Argument *a = new_input(w, po, in->name);
    if (!a) goto fail;
    for (int32_t k = 0; k < in->n_args; k++) {
      const mil_arg *arg = &in->args[k];
      const mil_var *v = arg->use.var;
      bool ok = (!arg->value && v && v->op && starts_with(v->op->type, "constexpr_"))
                    ? bind_name(w, a, v->name)
                    : bind_value(w, a, param_value(w, arg, in->name, where));
      if (!ok) goto fail;
    }
  }
  if (add_extra_attrs(w, po, op, where) && add_outputs(w, po, op, where)) return po;
fail:
  io_pb_free(po);
  if (w->st == MIL_OK) oom(w);
  return NULL;
}

static bool is_literal_param(const mil_op *op, const char *param) {
  if (!strcmp(op->type, "classify")) return !strcmp(param, "classes");
  if (!strcmp(op->type, "reshape_like"))
    return !strcmp(param, "begins") || !strcmp(param, "ends") || !strcmp(param, "end_masks");
  return false;
}

static Milproto__Block *block_to_proto(io_write *w, const mil_block *b, bool is_body, const char *func);

static Milproto__Operation *translate_generic(io_write *w, const mil_op *op, const char *func, const char *where) {
  Milproto__Operation *po = new_op(w, op->type, op->name);
  if (!po) return NULL;
  for (int32_t i = 0; i < op->n_inputs; i++) {
    const mil_input *in = &op->inputs[i];
    if (in->name[0] == '_') continue;
    bool literal = is_literal_param(op, in->name);
    Milproto__Argument *a = new_input(w, po, in->name);
    if (!a) goto fail;
    for (int32_t k = 0; k < in->n_args; k++) {
      const mil_arg *arg = &in->args[k];
      bool ok;
      if (arg->value) {
        ok = bind_value(w, a, io_value_to_proto(w, arg->value, false, where));
      } else if (!arg->use.var) {
        fail(w, MIL_ERR_INVALID, "%s: input '%s' binding %d is empty", where, in->name, k);
        ok = false;
      } else if (literal) {
        const mil_var *v = arg->use.var;
        if (!v->val) {
          fail(w, MIL_ERR_INVALID, "%s: input '%s' must be a constant (it is written as a literal), but %%%s is not",
               where, in->name, v->name);
          ok = false;
        } else {
          ok = bind_value(w, a, io_value_to_proto(w, v->val, false, where));
        }
      } else {
        ok = bind_name(w, a, arg->use.var->name);
      }
      if (!ok) goto fail;
    }
  }
  if (!add_extra_attrs(w, po, op, where) || !add_outputs(w, po, op, where)) goto fail;
  for (int32_t i = 0; i < op->n_blocks; i++) {
    Milproto__Block *nb = block_to_proto(w, op->blocks[i], false, func);
    if (!nb) goto fail;
    if (!io_pb_push(&po->blocks, &po->n_blocks, nb)) {
      io_pb_free(nb);
      goto fail;
    }
  }
  return po;
fail:
  io_pb_free(po);
  if (w->st == MIL_OK) oom(w);
  return NULL;
}

/* coreml_update_state -> write_state [+ read_state]; appended to pb. */
static bool translate_update_state(io_write *w, Milproto__Block *pb, const mil_op *op, const char *where) {
  const mil_var *state = mil_op_input_var(op, "state"), *value = mil_op_input_var(op, "value");
  if (!state || !value) {
    fail(w, MIL_ERR_INVALID, "%s: coreml_update_state needs inputs 'state' and 'value'", where);
    return false;
  }
  size_t n = strlen(op->name) + 16;
  char *wname = malloc(n);
  if (!wname) return oom(w), false;
  snprintf(wname, n, "%s_write_state", op->name);
  Milproto__Operation *ws = new_op(w, "write_state", wname);
  free(wname);
  if (!ws) return false;
  Milproto__Argument *a;
  if (!(a = new_input(w, ws, "input")) || !bind_name(w, a, state->name) || !(a = new_input(w, ws, "data")) ||
      !bind_name(w, a, value->name) || !io_pb_push(&pb->operations, &pb->n_operations, ws)) {
    io_pb_free(ws);
    if (w->st == MIL_OK) oom(w);
    return false;
  }
  if (op->n_outputs < 1 || op->outputs[0]->n_uses == 0) return true;
  Milproto__Operation *rs = new_op(w, "read_state", op->name);
  if (!rs) return false;
  if (!(a = new_input(w, rs, "input")) || !bind_name(w, a, state->name) || !add_outputs(w, rs, op, where) ||
      !io_pb_push(&pb->operations, &pb->n_operations, rs)) {
    io_pb_free(rs);
    if (w->st == MIL_OK) oom(w);
    return false;
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* blocks, functions, program                                                 */
/* ------------------------------------------------------------------------ */

/* True when every consumer of the const's output is a constexpr_* op
 * (then the const is inlined there and not written). */
static bool feeds_only_constexprs(const mil_op *op) {
  if (op->n_outputs != 1) return false;
  const mil_var *v = op->outputs[0];
  if (v->n_uses == 0) return false;
  for (const mil_use *u = v->uses; u; u = u->next_use)
    if (!u->op || !starts_with(u->op->type, "constexpr_")) return false;
  return true;
}

static bool add_value_attrs(io_write *w, const mil_attr *attrs, int32_t n, void *entries_ptr, size_t *n_entries,
                            const ProtobufCMessageDescriptor *entry_desc, const char *where) {
  /* map<string, Value> entries of Program / Function / Block share one layout */
  for (int32_t i = 0; i < n; i++) {
    Milproto__Block__AttributesEntry *e = io_pb_new(entry_desc);
    if (!e || !(e->key = io_model_strdup(attrs[i].name)) || !io_pb_push(entries_ptr, n_entries, e)) {
      io_pb_free(e);
      oom(w);
      return false;
    }
    if (!(e->value = io_value_to_proto(w, attrs[i].value, false, where))) return false;
  }
  return true;
}

static Milproto__Block *block_to_proto_at(io_write *w, const mil_block *b, bool is_body, const char *func);

/* A block; nested ones count against MIL_MAX_BLOCK_DEPTH, like the readers. */
static Milproto__Block *block_to_proto(io_write *w, const mil_block *b, bool is_body, const char *func) {
  if (!is_body && w->depth >= MIL_MAX_BLOCK_DEPTH)
    return fail(w, MIL_ERR_UNSUPPORTED, "%s: function '%s': blocks nested deeper than %d levels (libmil could not "
                "read the model back)", w->file, func, MIL_MAX_BLOCK_DEPTH);
  int saved = w->depth;
  if (!is_body) w->depth++;
  Milproto__Block *pb = block_to_proto_at(w, b, is_body, func);
  w->depth = saved;
  return pb;
}

static Milproto__Block *block_to_proto_at(io_write *w, const mil_block *b, bool is_body, const char *func) {
  char where[600];
  Milproto__Block *pb = io_pb_new(&milproto__block__descriptor);
  if (!pb) return oom(w);
  /* the const feeding classify.classes is bound as a literal instead */
  const mil_op *classes_const = NULL;
  if (b->last && !strcmp(b->last->type, "classify")) {
    const mil_var *cv = mil_op_input_var(b->last, "classes");
    if (cv && cv->op && mil_op_is_const(cv->op)) {
      if (cv->n_uses != 1) {
        io_say(where, sizeof where, "%s: function '%s': op '%s' (classify)", w->file, func, b->last->name);
        fail(w, MIL_ERR_INVALID, "%s: the classes const %%%s must feed only classify", where, cv->name);
        goto fail;
      }
      classes_const = cv->op;
    }
  }
  for (const mil_op *op = b->first; op; op = op->next) {
    io_say(where, sizeof where, "%s: function '%s': op '%s' (%s)", w->file, func, op->name, op->type);
    Milproto__Operation *po = NULL;
    if (mil_op_is_const(op)) {
      if (feeds_only_constexprs(op) || op == classes_const) continue;
      po = translate_const(w, op, where);
    } else if (starts_with(op->type, "constexpr_")) {
      po = translate_constexpr(w, op, where);
    } else if (!strcmp(op->type, "coreml_update_state")) {
      if (!translate_update_state(w, pb, op, where)) goto fail;
      continue;
    } else {
      po = translate_generic(w, op, func, where);
    }
    if (!po) goto fail;
    if (!io_pb_push(&pb->operations, &pb->n_operations, po)) {
      io_pb_free(po);
      oom(w);
      goto fail;
    }
  }
  io_say(where, sizeof where, "%s: function '%s': block '%s'", w->file, func, b->name ? b->name : "");
  if (!is_body) {
    for (int32_t i = 0; i < b->n_inputs; i++) {
      Milproto__NamedValueType *nt = named_type(w, b->inputs[i]->name, b->inputs[i]->type, where);
      if (!nt || !io_pb_push(&pb->inputs, &pb->n_inputs, nt)) {
        io_pb_free(nt);
        if (w->st == MIL_OK) oom(w);
        goto fail;
      }
    }
  }
  for (int32_t i = 0; i < b->n_outputs; i++) {
    const mil_var *v = b->outputs[i].var;
    char *name = v ? io_model_strdup(v->name) : NULL;
    if (!v) {
      fail(w, MIL_ERR_INVALID, "%s: output %d is not set", where, i);
      goto fail;
    }
    if (!io_pb_push(&pb->outputs, &pb->n_outputs, name)) {
      io_wr_free(name);
      oom(w);
      goto fail;
    }
  }
  if (!add_value_attrs(w, b->attrs, b->n_attrs, &pb->attributes, &pb->n_attributes,
                       &milproto__block__attributes_entry__descriptor, where))
    goto fail;
  return pb;
fail:
  io_pb_free(pb);
  if (w->st == MIL_OK) oom(w);
  return NULL;
}

static Milproto__Function *function_to_proto(io_write *w, const mil_function *f) {
  char where[400];
  io_say(where, sizeof where, "%s: function '%s'", w->file, f->name);
  Milproto__Function *pf = io_pb_new(&milproto__function__descriptor);
  if (!pf || !(pf->opset = io_model_strdup(f->opset))) goto oom;
  for (int32_t i = 0; i < f->n_inputs; i++) {
    Milproto__NamedValueType *nt = named_type(w, f->inputs[i]->name, f->inputs[i]->type, where);
    if (!nt) goto fail;
    if (!io_pb_push(&pf->inputs, &pf->n_inputs, nt)) {
      io_pb_free(nt);
      goto oom;
    }
  }
  for (int32_t i = 0; i < f->n_specs; i++) {
    Milproto__Function__BlockSpecializationsEntry *e =
        io_pb_new(&milproto__function__block_specializations_entry__descriptor);
    if (!e || !(e->key = io_model_strdup(f->specs[i].opset)) ||
        !io_pb_push(&pf->block_specializations, &pf->n_block_specializations, e)) {
      io_pb_free(e);
      goto oom;
    }
    if (!(e->value = block_to_proto(w, f->specs[i].block, true, f->name))) goto fail;
  }
  if (!add_value_attrs(w, f->attrs, f->n_attrs, &pf->attributes, &pf->n_attributes,
                       &milproto__function__attributes_entry__descriptor, where))
    goto fail;
  return pf;
oom:
  oom(w);
fail:
  io_pb_free(pf);
  if (w->st == MIL_OK) oom(w);
  return NULL;
}

Milproto__Program *io_program_to_proto(io_write *w) {
  const mil_program *p = w->p;
  Milproto__Program *pp = io_pb_new(&milproto__program__descriptor);
  if (!pp) return oom(w);
  pp->version = p->version ? p->version : 1;
  if (p->doc_string && p->doc_string[0] && !(pp->docstring = io_model_strdup(p->doc_string))) goto oom;
  for (int32_t i = 0; i < p->n_functions; i++) {
    Milproto__Program__FunctionsEntry *e = io_pb_new(&milproto__program__functions_entry__descriptor);
    if (!e || !(e->key = io_model_strdup(p->functions[i]->name)) || !io_pb_push(&pp->functions, &pp->n_functions, e)) {
      io_pb_free(e);
      goto oom;
    }
    if (!(e->value = function_to_proto(w, p->functions[i]))) goto fail;
  }
  char where[300];
  io_say(where, sizeof where, "%s: program attributes", w->file);
  if (!add_value_attrs(w, p->attrs, p->n_attrs, &pp->attributes, &pp->n_attributes,
                       &milproto__program__attributes_entry__descriptor, where))
    goto fail;
  return pp;
oom:
  oom(w);
fail:
  io_pb_free(pp);
  if (w->st == MIL_OK) oom(w);
  return NULL;
}

mil_status io_model_encode(mil_model *m, mil_blob_writer *bw, const char *blob_name, const char *file, void **data,
                           size_t *len, mil_diag *d) {
  *data = NULL;
  *len = 0;
  int spec = m->spec_version;
  for (int32_t i = 0; i < m->prog->n_functions; i++) {
    int need = mil_spec_version_for_opset(m->prog->functions[i]->opset);
    if (!need)
      return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: function '%s': opset '%s' is not an ML Program opset "
                            "(CoreML5..CoreML9)", file, m->prog->functions[i]->name, m->prog->functions[i]->opset);
    if (need > spec) spec = need;
  }
  if (m->prog->n_functions > 1 && spec < IO_SPEC_MULTI_FUNCTION) spec = IO_SPEC_MULTI_FUNCTION;
  /* array types the description uses (an int8 input, synced from the
   * program) may need a later specification version than the model had */
  int need_desc = io_desc_min_spec(m->desc);
  if (need_desc > spec) spec = need_desc;
  io_write w;
  memset(&w, 0, sizeof w);
  w.p = m->prog;
  w.spec_version = spec;
  w.bw = bw;
  w.file = file;
  w.blob_name = blob_name;
  w.d = d;
  io_pb_arena *ar = io_pb_arena_new();
  if (!ar) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory", file);
  io_wr_arena = ar;
  Milproto__Program *pp = io_program_to_proto(&w);
  io_write_free(&w);
  if (!pp) {
    io_wr_arena = NULL;
    io_pb_arena_free(ar);
    return w.st != MIL_OK ? w.st : MIL_ERR_NOMEM;
  }
  Coreml__Model model = COREML__MODEL__INIT;
  model.specificationversion = spec;
  model.description = m->desc;
  model.isupdatable = m->is_updatable;
  model.type_case = COREML__MODEL__TYPE_ML_PROGRAM;
  model.mlprogram = pp;
  int depth = 0;
  if (!io_proto_depth_ok(&model.base, IO_PROTO_MAX_DEPTH, &depth)) {
    io_wr_arena = NULL;
    io_pb_arena_free(ar);
    return mil_diag_error(d, MIL_ERR_UNSUPPORTED, "%s: the model would nest protobuf messages %d levels deep, more "
                          "than the %d libmil reads back", file, depth, IO_PROTO_MAX_DEPTH);
  }
  size_t n = protobuf_c_message_get_packed_size(&model.base);
  uint8_t *buf = malloc(n ? n : 1);
  size_t packed = buf ? protobuf_c_message_pack(&model.base, buf) : 0;
  io_wr_arena = NULL;
  io_pb_arena_free(ar); /* the whole program tree */
  if (!buf) return mil_diag_error(d, MIL_ERR_NOMEM, "%s: out of memory (%zu bytes of protobuf)", file, n);
  if (packed != n) {
    free(buf);
    return mil_diag_error(d, MIL_ERR_INVALID, "%s: protobuf packing produced %zu bytes, expected %zu", file, packed, n);
  }
  *data = buf;
  *len = n;
  return MIL_OK;
}
