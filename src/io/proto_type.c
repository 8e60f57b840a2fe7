/* MIL.proto value types <-> libmil types, and the weight files that blob
 * references resolve to.
 *
 * Reading mirrors coremltools/converters/mil/frontend/milproto/helper.py
 * (proto_to_types, get_proto_dim: an unknown dim becomes a fresh symbol) and
 * load.py (_load_file_value: only the last component of a blob fileName
 * counts, looked up in the weights directory); writing mirrors
 * converters/mil/backend/mil/helper.py (create_valuetype_*, set_proto_dim).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io/fsafe.h"
#include "io/model_internal.h"

static bool dtype_ok(int dt) { return mil_dtype_is_valid(dt) && dt != MIL_DT_UNUSED && !mil_dtype_is_complex(dt); }

/* ------------------------------------------------------------------------ */
/* small helpers                                                              */
/* ------------------------------------------------------------------------ */

/* snprintf for the context strings formatted for every op and input (most
 * never shown): only %s and %zu, without the general machinery. */
void io_say(char *buf, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t o = 0;
  for (const char *f = fmt; *f && n; f++) {
    char num[24];
    const char *str = NULL;
    size_t len = 0;
    if (f[0] == '%' && f[1] == 's') {
      str = va_arg(ap, const char *);
      if (!str) str = "(null)";
      len = strlen(str);
      f++;
    } else if (f[0] == '%' && f[1] == 'z' && f[2] == 'u') {
      size_t x = va_arg(ap, size_t);
      char *e = num + sizeof num;
      do *--e = (char)('0' + x % 10);
      while ((x /= 10) != 0);
      str = e;
      len = (size_t)(num + sizeof num - e);
      f += 2;
    } else { /* the literal run up to the next conversion */
      const char *pc = strchr(f + 1, '%');
      str = f;
      len = pc ? (size_t)(pc - f) : strlen(f);
      f += len - 1;
    }
    if (len > n - 1 - o) len = n - 1 - o;
    memcpy(buf + o, str, len);
    o += len;
  }
  if (n) buf[o] = '\0';
  va_end(ap);
}

char *io_model_strdup(const char *s) {
  if (!s) s = "";
  size_t n = strlen(s) + 1;
  char *c = io_wr_alloc(n);
  if (c) memcpy(c, s, n);
  return c;
}

bool io_pb_push(void *arr_ptr, size_t *n, void *elem) {
  void ***arr = (void ***)arr_ptr;
  if (!elem) return false;
  /* realloc to a power-of-two size every time: cheap when the block does
   * not change, and correct for arrays protobuf-c allocated exactly */
  size_t cap = 1;
  while (cap < *n + 1) cap *= 2;
  void **na;
  if (io_wr_arena) { /* a new block when the size reaches the next power of two */
    if (*arr && (*n & (*n - 1)) != 0) {
      (*arr)[(*n)++] = elem;
      return true;
    }
    if (!(na = io_pb_arena_alloc(io_wr_arena, cap * sizeof *na))) return false;
    if (*n) memcpy(na, *arr, *n * sizeof *na);
  } else if (!(na = realloc(*arr, cap * sizeof *na))) {
    return false;
  }
  *arr = na;
  (*arr)[(*n)++] = elem;
  return true;
}

/* ------------------------------------------------------------------------ */
/* weight files                                                               */
/* ------------------------------------------------------------------------ */

void io_weights_init(io_weights *w, const char *dir, const char *root) {
  memset(w, 0, sizeof *w);
  if (dir) w->dir = io_model_strdup(dir);
  if (root) w->root = io_model_strdup(root);
}

void io_weights_free(io_weights *w) {
  for (int32_t i = 0; i < w->n; i++) {
    free(w->names[i]);
    mil_blob_file_close(w->files[i]);
  }
  free(w->names);
  free(w->files);
  free(w->dir);
  free(w->root);
  memset(w, 0, sizeof *w);
}

mil_status io_weights_give(io_weights *w, mil_model *m) {
  if (!w->n) return MIL_OK;
  mil_blob_file **nf = realloc(m->weights, (size_t)(m->n_weights + w->n) * sizeof *nf);
  if (!nf) return MIL_ERR_NOMEM;
  m->weights = nf;
  for (int32_t i = 0; i < w->n; i++) {
    m->weights[m->n_weights++] = w->files[i];
    free(w->names[i]);
  }
  w->n = 0;
  return MIL_OK;
}

static void io_blob_drop(void *f) { mil_blob_file_close(f); }

/* The blob file for a BlobFileValue.fileName: like coremltools, only the
 * last path component counts and it is looked up in the weights directory. */
mil_status io_weights_lookup(io_read *r, const char *file_name, const char *where, mil_blob_file **out) {
  io_weights *w = r->w;
  const char *base = strrchr(file_name, '/');
  base = base ? base + 1 : file_name;
  if (!*base)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: blob fileName '%s' names no file", where, file_name);
  for (int32_t i = 0; w && i < w->n; i++)
    if (strcmp(w->names[i], base) == 0) {
      *out = w->files[i];
      return MIL_OK;
    }
  if (!w || !w->dir)
    return mil_diag_error(r->d, MIL_ERR_FORMAT,
                          "%s: value refers to weight file '%s' but the model has no weights directory "
                          "(expected a 'weights' directory next to %s)",
                          where, file_name, r->file);
  if (strchr(base, '\\') || strcmp(base, "..") == 0 || strcmp(base, ".") == 0)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: blob fileName '%s' is not a plain file name", where, file_name);
  char *path = io_model_path_join(w->dir, base);
  if (!path) return MIL_ERR_NOMEM;
  mil_blob_file *f = NULL;
  mil_status st = io_blob_file_open_in(path, w->root, &f, r->d);
  free(path);
  if (st != MIL_OK) {
    mil_diag_error(r->d, st, "%s: cannot open weight file '%s'", where, file_name);
    return st;
  }
  if (w->n == w->cap) {
    int32_t nc = w->cap ? w->cap * 2 : 2;
    char **nn = realloc(w->names, (size_t)nc * sizeof *nn);
    if (nn) w->names = nn;
    mil_blob_file **nf = nn ? realloc(w->files, (size_t)nc * sizeof *nf) : NULL;
    if (nf) w->files = nf;
    if (!nn || !nf) {
      mil_blob_file_close(f);
      return MIL_ERR_NOMEM;
    }
    w->cap = nc;
  }
  w->names[w->n] = io_model_strdup(base);
  if (!w->names[w->n]) {
    mil_blob_file_close(f);
    return MIL_ERR_NOMEM;
  }
  w->files[w->n++] = f;
  *out = f;
  /* the program keeps its own reference: its values view this mapping */
  return mil_program_add_mapping(r->p, mil_blob_file_base(f), (size_t)mil_blob_file_size(f), io_blob_drop,
                                 mil_blob_file_retain(f));
}

/* ------------------------------------------------------------------------ */
/* types: proto -> IR                                                         */
/* ------------------------------------------------------------------------ */


static mil_status read_dim(io_read *r, const Milproto__Dimension *pd, const char *where, int32_t i, mil_dim *out) {
  if (!pd || pd->dimension_case == MILPROTO__DIMENSION__DIMENSION__NOT_SET)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: dimension %d is neither constant nor unknown", where, i);
  if (pd->dimension_case == MILPROTO__DIMENSION__DIMENSION_CONSTANT) {
    uint64_t s = pd->constant ? pd->constant->size : 0;
    if (s > (uint64_t)INT64_MAX)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: dimension %d has size %llu, larger than 2^63-1", where, i,
                            (unsigned long long)s);
    *out = (mil_dim){(int64_t)s, NULL, false};
    return MIL_OK;
  }
  *out = mil_dim_new_symbol(r->p);
  if (!out->sym) return MIL_ERR_NOMEM;
  out->variadic = pd->unknown && pd->unknown->variadic;
  if (out->variadic) {
    /* variadic symbols print with a leading '*' (coremltools' naming) */
    char buf[48];
    snprintf(buf, sizeof buf, "*%s", out->sym);
    out->sym = mil_program_intern(r->p, buf, (size_t)-1);
    if (!out->sym) return MIL_ERR_NOMEM;
  }
  return MIL_OK;
}

mil_status io_type_from_proto(io_read *r, const Milproto__ValueType *t, const char *where, const mil_type **out) {
  mil_program *p = r->p;
  *out = NULL;
  if (!t || t->type_case == MILPROTO__VALUE_TYPE__TYPE__NOT_SET)
    return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: value type missing (ValueType has no tensorType, listType, "
                          "tupleType, dictionaryType or stateType)", where);
  mil_status st;
  switch (t->type_case) {
  case MILPROTO__VALUE_TYPE__TYPE_TENSOR_TYPE: {
    const Milproto__TensorType *tt = t->tensortype;
    if (!dtype_ok((int)tt->datatype))
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: unknown DataType %d", where, (int)tt->datatype);
    if (tt->n_attributes)
      return mil_diag_error(r->d, MIL_ERR_UNSUPPORTED, "%s: attributes on a TensorType are not supported (found %zu, "
                            "first '%s')", where, tt->n_attributes, tt->attributes[0]->key ? tt->attributes[0]->key : "");
    if (tt->rank < -1)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor rank %lld, expected -1 (unknown) or >= 0", where,
                            (long long)tt->rank);
    if (tt->rank == -1) {
      if (tt->n_dimensions)
        return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor of unknown rank lists %zu dimensions", where,
                              tt->n_dimensions);
      *out = mil_type_tensor(p, (mil_dtype)tt->datatype, -1, NULL);
      return *out ? MIL_OK : MIL_ERR_NOMEM;
    }
    if ((uint64_t)tt->rank != tt->n_dimensions)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor rank is %lld but %zu dimensions are listed", where,
                            (long long)tt->rank, tt->n_dimensions);
    if (tt->rank == 0) {
      *out = mil_type_scalar(p, (mil_dtype)tt->datatype);
      return *out ? MIL_OK : MIL_ERR_NOMEM;
    }
    if (tt->rank > INT32_MAX / 2) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor rank too large", where);
    mil_dim *dims = mil_program_alloc(p, (size_t)tt->rank * sizeof *dims);
    if (!dims) return MIL_ERR_NOMEM;
    for (int32_t i = 0; i < (int32_t)tt->rank; i++)
      if ((st = read_dim(r, tt->dimensions[i], where, i, &dims[i])) != MIL_OK) return st;
    char why[300];
    if (!mil_tensor_size_ok((mil_dtype)tt->datatype, (int32_t)tt->rank, dims, why, sizeof why))
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tensor type too large: %s", where, why);
    *out = mil_type_tensor(p, (mil_dtype)tt->datatype, (int32_t)tt->rank, dims);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  case MILPROTO__VALUE_TYPE__TYPE_LIST_TYPE: {
    const mil_type *elem;
    if ((st = io_type_from_proto(r, t->listtype->type, where, &elem)) != MIL_OK) return st;
    mil_dim len = {-1, NULL, false};
    const Milproto__Dimension *ld = t->listtype->length;
    if (ld && ld->dimension_case == MILPROTO__DIMENSION__DIMENSION_CONSTANT) {
      if ((st = read_dim(r, ld, where, 0, &len)) != MIL_OK) return st;
    }
    *out = mil_type_list(p, elem, len);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  case MILPROTO__VALUE_TYPE__TYPE_TUPLE_TYPE: {
    const Milproto__TupleType *tu = t->tupletype;
    if (tu->n_types > INT32_MAX / 16) return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: tuple too long", where);
    const mil_type **el = mil_program_alloc(p, (tu->n_types ? tu->n_types : 1) * sizeof *el);
    if (!el) return MIL_ERR_NOMEM;
    for (size_t i = 0; i < tu->n_types; i++)
      if ((st = io_type_from_proto(r, tu->types[i], where, &el[i])) != MIL_OK) return st;
    *out = mil_type_tuple(p, (int32_t)tu->n_types, el);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  case MILPROTO__VALUE_TYPE__TYPE_DICTIONARY_TYPE: {
    const mil_type *k, *v;
    if ((st = io_type_from_proto(r, t->dictionarytype->keytype, where, &k)) != MIL_OK) return st;
    if ((st = io_type_from_proto(r, t->dictionarytype->valuetype, where, &v)) != MIL_OK) return st;
    *out = mil_type_dict(p, k, v);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  case MILPROTO__VALUE_TYPE__TYPE_STATE_TYPE: {
    const mil_type *wt;
    if ((st = io_type_from_proto(r, t->statetype->wrappedtype, where, &wt)) != MIL_OK) return st;
    if (wt->kind != MIL_TYPE_TENSOR)
      return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: a state must wrap a tensor type", where);
    *out = mil_type_state(p, wt);
    return *out ? MIL_OK : MIL_ERR_NOMEM;
  }
  default: break;
  }
  return mil_diag_error(r->d, MIL_ERR_FORMAT, "%s: unknown ValueType case %d", where, (int)t->type_case);
}

/* ------------------------------------------------------------------------ */
/* types: IR -> proto                                                         */
/* ------------------------------------------------------------------------ */

void *io_wfail(io_write *w, mil_status st, const char *fmt, ...) {
  if (w->st == MIL_OK) w->st = st;
  if (st == MIL_ERR_NOMEM) {
    mil_diag_error(w->d, st, "%s: out of memory", w->file);
    return NULL;
  }
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  mil_diag_error(w->d, st, "%s", buf);
  return NULL;
}


static Milproto__Dimension *dim_to_proto(io_write *w, const mil_dim *dm) {
  Milproto__Dimension *pd = io_pb_new(&milproto__dimension__descriptor);
  if (!pd) return OOM(w);
  if (dm->size >= 0) {
    pd->dimension_case = MILPROTO__DIMENSION__DIMENSION_CONSTANT;
    pd->constant = io_pb_new(&milproto__dimension__constant_dimension__descriptor);
    if (!pd->constant) goto oom;
    pd->constant->size = (uint64_t)dm->size;
  } else {
    pd->dimension_case = MILPROTO__DIMENSION__DIMENSION_UNKNOWN;
    pd->unknown = io_pb_new(&milproto__dimension__unknown_dimension__descriptor);
    if (!pd->unknown) goto oom;
    pd->unknown->variadic = dm->variadic || (dm->sym && dm->sym[0] == '*');
  }
  return pd;
oom:
  io_pb_free(pd);
  return OOM(w);
}

Milproto__ValueType *io_type_to_proto(io_write *w, const mil_type *t, const char *where) {
  if (!t) return io_wfail(w, MIL_ERR_INVALID, "%s: %s: var has no type", w->file, where);
  Milproto__ValueType *vt = io_pb_new(&milproto__value_type__descriptor);
  if (!vt) return OOM(w);
  switch (t->kind) {
  case MIL_TYPE_TENSOR: {
    if (!dtype_ok(t->dtype)) {
      io_pb_free(vt);
      return io_wfail(w, MIL_ERR_UNSUPPORTED, "%s: %s: dtype %s has no MIL.proto DataType", w->file, where,
                   mil_dtype_name(t->dtype));
    }
    Milproto__TensorType *tt = io_pb_new(&milproto__tensor_type__descriptor);
    if (!tt) break;
    vt->type_case = MILPROTO__VALUE_TYPE__TYPE_TENSOR_TYPE;
    vt->tensortype = tt;
    tt->datatype = (Milproto__DataType)t->dtype;
    tt->rank = t->rank;
    for (int32_t i = 0; i < t->rank; i++)
      if (!io_pb_push(&tt->dimensions, &tt->n_dimensions, dim_to_proto(w, &t->dims[i]))) goto fail;
    return vt;
  }
  case MIL_TYPE_LIST: {
    Milproto__ListType *lt = io_pb_new(&milproto__list_type__descriptor);
    if (!lt) break;
    vt->type_case = MILPROTO__VALUE_TYPE__TYPE_LIST_TYPE;
    vt->listtype = lt;
    if (!(lt->type = io_type_to_proto(w, t->elem, where))) goto fail;
    if (!(lt->length = dim_to_proto(w, &t->length))) goto fail;
    if (t->length.size < 0) lt->length->unknown->variadic = false;
    return vt;
  }
  case MIL_TYPE_TUPLE: {
    Milproto__TupleType *tu = io_pb_new(&milproto__tuple_type__descriptor);
    if (!tu) break;
    vt->type_case = MILPROTO__VALUE_TYPE__TYPE_TUPLE_TYPE;
    vt->tupletype = tu;
    for (int32_t i = 0; i < t->n_elems; i++)
      if (!io_pb_push(&tu->types, &tu->n_types, io_type_to_proto(w, t->elems[i], where))) goto fail;
    return vt;
  }
  case MIL_TYPE_DICT: {
    Milproto__DictionaryType *dt = io_pb_new(&milproto__dictionary_type__descriptor);
    if (!dt) break;
    vt->type_case = MILPROTO__VALUE_TYPE__TYPE_DICTIONARY_TYPE;
    vt->dictionarytype = dt;
    if (!(dt->keytype = io_type_to_proto(w, t->elem, where))) goto fail;
    if (!(dt->valuetype = io_type_to_proto(w, t->value, where))) goto fail;
    return vt;
  }
  case MIL_TYPE_STATE: {
    Milproto__StateType *stt = io_pb_new(&milproto__state_type__descriptor);
    if (!stt) break;
    vt->type_case = MILPROTO__VALUE_TYPE__TYPE_STATE_TYPE;
    vt->statetype = stt;
    if (!(stt->wrappedtype = io_type_to_proto(w, t->elem, where))) goto fail;
    return vt;
  }
  default:
    io_pb_free(vt);
    return io_wfail(w, MIL_ERR_UNSUPPORTED, "%s: %s: a type of unknown kind cannot be written", w->file, where);
  }
  io_pb_free(vt);
  return OOM(w);
fail:
  io_pb_free(vt);
  if (w->st == MIL_OK) return OOM(w);
  return NULL;
}

