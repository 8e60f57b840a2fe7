/* Helpers shared by the model I/O tests: structural comparison of programs
 * and descriptions, comparison of coremltools-form text up to the
 * equalities of mil-text.md section 3, and temporary directories.
 * Header-only (static functions); include from one test program each. */
#ifndef MIL_TEST_MODEL_TESTUTIL_H
#define MIL_TEST_MODEL_TESTUTIL_H

#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mil/mil.h"
#include "mil/model.h"

#define MT_FN static __attribute__((unused))

/* ------------------------------------------------------------------------ */
/* files                                                                      */
/* ------------------------------------------------------------------------ */

MT_FN int mt_rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

MT_FN void mt_rm_rf(const char *path) { nftw(path, mt_rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* A fresh directory under $TMPDIR (or /tmp); caller frees the string. */
MT_FN char *mt_tempdir(void) {
  const char *base = getenv("TMPDIR");
  char *t = malloc(512);
  snprintf(t, 512, "%s/milmodelXXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(t)) {
    free(t);
    return NULL;
  }
  return t;
}

MT_FN char *mt_path(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  snprintf(s, n, "%s/%s", a, b);
  return s;
}

MT_FN bool mt_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

MT_FN unsigned char *mt_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n + 1 : 1);
  size_t got = fread(b, 1, (size_t)(n > 0 ? n : 0), f);
  fclose(f);
  b[got] = 0;
  *len = got;
  return b;
}

/* main(x) = x + c: input "x", a const named cname holding w (fp32 of the
 * given shape; at least 10 values go to the weight file), op "y". */
MT_FN mil_program *mt_add_const_program(const char *cname, int32_t rank, const int64_t *shape, const float *w) {
  mil_program *p = mil_program_new(NULL);
  mil_function *f = mil_function_new(p, "main", "CoreML7");
  mil_var *x = mil_function_add_input(f, "x", mil_type_tensor_shape(p, MIL_DT_FP32, rank, shape));
  mil_block *b = mil_function_body(f);
  mil_op *c = mil_const_new(p, cname, mil_value_new_tensor(p, MIL_DT_FP32, rank, shape, false, w));
  mil_block_append(b, c);
  mil_op *add = mil_op_new(p, "add", "y");
  mil_op_add_input(add, "x", x);
  mil_op_add_input(add, "y", c->outputs[0]);
  mil_var *y = mil_op_add_output(add, "y", x->type);
  mil_block_append(b, add);
  mil_block_set_outputs(b, 1, &y);
  return p;
}

/* Saves m to path and frees m; the first error, or NULL on success. */
MT_FN char *mt_save_free(mil_model *m, const char *path) {
  mil_diag d = {0};
  char *err = NULL;
  if (mil_model_save(m, path, &d) != MIL_OK) err = strdup(mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
  mil_diag_clear(&d);
  mil_model_free(m);
  return err;
}

/* The weight file a .mlmodel named <stem>.mlmodel in dir owns:
 * dir/weights/<stem>.<16 hex>.bin (malloc'ed path), or NULL when there is
 * not exactly one. */
MT_FN char *mt_mlmodel_weights(const char *dir, const char *stem) {
  char *wdir = mt_path(dir, "weights");
  DIR *dh = opendir(wdir);
  char *found = NULL;
  int n = 0;
  size_t ns = strlen(stem);
  for (struct dirent *e; dh && (e = readdir(dh));) {
    size_t k = strlen(e->d_name);
    if (k != ns + 21 || strncmp(e->d_name, stem, ns) || e->d_name[ns] != '.' || strcmp(e->d_name + k - 4, ".bin"))
      continue;
    n++;
    free(found);
    found = malloc(strlen(wdir) + k + 2);
    sprintf(found, "%s/%s", wdir, e->d_name);
  }
  if (dh) closedir(dh);
  free(wdir);
  if (n != 1) {
    free(found);
    return NULL;
  }
  return found;
}

MT_FN bool mt_write(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok;
}

/* Number of entries in a directory (excluding . and ..). */
MT_FN int mt_count_entries(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  if (p) {
    if (fscanf(p, "%d", &n) != 1) n = -1;
    pclose(p);
  }
  return n;
}

/* ------------------------------------------------------------------------ */
/* programs                                                                   */
/* ------------------------------------------------------------------------ */

/* p written to a Model protobuf (mil_model_from_program takes p) and read
 * back: the program a model file gives. NULL on any failure. */
MT_FN mil_model *mt_through_proto(mil_program *p) {
  mil_diag d;
  mil_diag_init(&d);
  mil_model *m = NULL, *back = NULL;
  void *data = NULL;
  size_t len = 0;
  if (mil_model_from_program(p, 0, &m, &d) == MIL_OK && mil_model_serialize(m, NULL, &data, &len, &d) == MIL_OK)
    mil_model_load_proto(data, len, "<test>", NULL, &back, &d);
  mil_model_free(m);
  free(data);
  mil_diag_clear(&d);
  return back;
}

typedef struct mt_err {
  char msg[1024];
} mt_err;

MT_FN bool mt_fail(mt_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
MT_FN bool mt_fail(mt_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return false;
}

/* Types are equal up to the names of symbols (each load makes fresh ones). */
MT_FN bool mt_type_eq(const mil_type *a, const mil_type *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case MIL_TYPE_TENSOR:
    if (a->dtype != b->dtype || a->rank != b->rank || a->is_scalar != b->is_scalar) return false;
    for (int32_t i = 0; i < a->rank; i++)
      if (a->dims[i].size != b->dims[i].size || a->dims[i].variadic != b->dims[i].variadic) return false;
    return true;
  case MIL_TYPE_LIST: return a->length.size == b->length.size && mt_type_eq(a->elem, b->elem);
  case MIL_TYPE_TUPLE:
    if (a->n_elems != b->n_elems) return false;
    for (int32_t i = 0; i < a->n_elems; i++)
      if (!mt_type_eq(a->elems[i], b->elems[i])) return false;
    return true;
  case MIL_TYPE_DICT: return mt_type_eq(a->elem, b->elem) && mt_type_eq(a->value, b->value);
  case MIL_TYPE_STATE: return mt_type_eq(a->elem, b->elem);
  default: return true;
  }
}

MT_FN bool mt_value_eq(const mil_value *a, const mil_value *b) {
  if (!a || !b) return a == b;
  if (a->kind != b->kind) return false;
  if (a->kind == MIL_VAL_TENSOR) {
    if (!mt_type_eq(a->type, b->type) || a->numel != b->numel || a->nbytes != b->nbytes) return false;
    if (a->type->dtype == MIL_DT_STRING) {
      for (int64_t i = 0; i < a->numel; i++)
        if (strcmp(mil_value_get_str(a, i), mil_value_get_str(b, i))) return false;
      return true;
    }
    return a->nbytes == 0 || memcmp(mil_value_data(a), mil_value_data(b), a->nbytes) == 0;
  }
  if (a->n != b->n) return false;
  for (int32_t i = 0; i < a->n; i++) {
    if (!mt_value_eq(a->items[i], b->items[i])) return false;
    if (a->kind == MIL_VAL_DICT && !mt_value_eq(a->keys[i], b->keys[i])) return false;
  }
  return true;
}

MT_FN bool mt_attrs_eq(const mil_attr *a, int32_t na, const mil_attr *b, int32_t nb, const char *where, mt_err *e) {
  if (na != nb) return mt_fail(e, "%s: %d attributes vs %d", where, na, nb);
  for (int32_t i = 0; i < na; i++) {
    int32_t k = 0;
    while (k < nb && strcmp(a[i].name, b[k].name)) k++;
    if (k == nb) return mt_fail(e, "%s: attribute '%s' missing", where, a[i].name);
    if (!mt_value_eq(a[i].value, b[k].value)) return mt_fail(e, "%s: attribute '%s' differs", where, a[i].name);
  }
  return true;
}

MT_FN bool mt_block_eq(const mil_block *a, const mil_block *b, const char *fn, mt_err *e);

MT_FN bool mt_op_eq(const mil_op *a, const mil_op *b, const char *fn, mt_err *e) {
  char where[600];
  snprintf(where, sizeof where, "function '%s': op '%s' (%s)", fn, a->name, a->type);
  if (strcmp(a->type, b->type) || strcmp(a->name, b->name))
    return mt_fail(e, "%s: the other program has op '%s' (%s) here", where, b->name, b->type);
  if (a->n_inputs != b->n_inputs) return mt_fail(e, "%s: %d inputs vs %d", where, a->n_inputs, b->n_inputs);
  for (int32_t i = 0; i < a->n_inputs; i++) {
    const mil_input *x = &a->inputs[i], *y = &b->inputs[i];
    if (strcmp(x->name, y->name) || x->n_args != y->n_args || x->is_tuple != y->is_tuple)
      return mt_fail(e, "%s: input %d is '%s'/%d args vs '%s'/%d args", where, i, x->name, x->n_args, y->name, y->n_args);
    for (int32_t k = 0; k < x->n_args; k++) {
      const mil_arg *p = &x->args[k], *q = &y->args[k];
      if ((p->value != NULL) != (q->value != NULL)) return mt_fail(e, "%s: input '%s' binding kinds differ", where, x->name);
      if (p->value && !mt_value_eq(p->value, q->value)) return mt_fail(e, "%s: input '%s' literal differs", where, x->name);
      if (!p->value && (!p->use.var || !q->use.var || strcmp(p->use.var->name, q->use.var->name)))
        return mt_fail(e, "%s: input '%s' is bound to %s vs %s", where, x->name, p->use.var ? p->use.var->name : "?",
                       q->use.var ? q->use.var->name : "?");
    }
  }
  if (a->n_outputs != b->n_outputs) return mt_fail(e, "%s: %d outputs vs %d", where, a->n_outputs, b->n_outputs);
  for (int32_t i = 0; i < a->n_outputs; i++) {
    const mil_var *x = a->outputs[i], *y = b->outputs[i];
    if (strcmp(x->name, y->name)) return mt_fail(e, "%s: output %d named %s vs %s", where, i, x->name, y->name);
    if (!mt_type_eq(x->type, y->type)) return mt_fail(e, "%s: output %s types differ", where, x->name);
    if (!mt_value_eq(x->val, y->val)) return mt_fail(e, "%s: output %s values differ", where, x->name);
    if (x->mark != y->mark) return mt_fail(e, "%s: output %s marks differ (%d vs %d)", where, x->name, x->mark, y->mark);
  }
  if (!mt_attrs_eq(a->attrs, a->n_attrs, b->attrs, b->n_attrs, where, e)) return false;
  if (a->n_blocks != b->n_blocks) return mt_fail(e, "%s: %d blocks vs %d", where, a->n_blocks, b->n_blocks);
  for (int32_t i = 0; i < a->n_blocks; i++)
    if (!mt_block_eq(a->blocks[i], b->blocks[i], fn, e)) return false;
  return true;
}

MT_FN bool mt_block_eq(const mil_block *a, const mil_block *b, const char *fn, mt_err *e) {
  if (a->n_inputs != b->n_inputs) return mt_fail(e, "function '%s': block inputs %d vs %d", fn, a->n_inputs, b->n_inputs);
  for (int32_t i = 0; i < a->n_inputs; i++)
    if (strcmp(a->inputs[i]->name, b->inputs[i]->name) || !mt_type_eq(a->inputs[i]->type, b->inputs[i]->type))
      return mt_fail(e, "function '%s': block input %s differs", fn, a->inputs[i]->name);
  const mil_op *x = a->first, *y = b->first;
  for (; x && y; x = x->next, y = y->next)
    if (!mt_op_eq(x, y, fn, e)) return false;
  if (x || y)
    return mt_fail(e, "function '%s': block has %d ops vs %d (first extra: %s)", fn, a->n_ops, b->n_ops,
                   x ? x->name : y->name);
  if (a->n_outputs != b->n_outputs) return mt_fail(e, "function '%s': block outputs %d vs %d", fn, a->n_outputs, b->n_outputs);
  for (int32_t i = 0; i < a->n_outputs; i++)
    if (strcmp(a->outputs[i].var->name, b->outputs[i].var->name))
      return mt_fail(e, "function '%s': block output %d is %s vs %s", fn, i, a->outputs[i].var->name,
                     b->outputs[i].var->name);
  return mt_attrs_eq(a->attrs, a->n_attrs, b->attrs, b->n_attrs, fn, e);
}

/* Same functions, inputs, ops in order with names, types, values (bitwise),
 * attributes, nested blocks; program attributes. Block names are ignored. */
MT_FN bool mt_program_eq(const mil_program *a, const mil_program *b, mt_err *e) {
  if (a->n_functions != b->n_functions) return mt_fail(e, "%d functions vs %d", a->n_functions, b->n_functions);
  if (!mt_attrs_eq(a->attrs, a->n_attrs, b->attrs, b->n_attrs, "program", e)) return false;
  for (int32_t i = 0; i < a->n_functions; i++) {
    const mil_function *f = a->functions[i], *g = b->functions[i];
    if (strcmp(f->name, g->name) || strcmp(f->opset, g->opset))
      return mt_fail(e, "function %s[%s] vs %s[%s]", f->name, f->opset, g->name, g->opset);
    if (f->n_inputs != g->n_inputs) return mt_fail(e, "function '%s': %d inputs vs %d", f->name, f->n_inputs, g->n_inputs);
    for (int32_t k = 0; k < f->n_inputs; k++)
      if (strcmp(f->inputs[k]->name, g->inputs[k]->name) || !mt_type_eq(f->inputs[k]->type, g->inputs[k]->type))
        return mt_fail(e, "function '%s': input %s differs", f->name, f->inputs[k]->name);
    if (f->n_specs != g->n_specs) return mt_fail(e, "function '%s': specializations differ", f->name);
    for (int32_t k = 0; k < f->n_specs; k++) {
      if (strcmp(f->specs[k].opset, g->specs[k].opset)) return mt_fail(e, "function '%s': specialization names differ", f->name);
      if (!mt_block_eq(f->specs[k].block, g->specs[k].block, f->name, e)) return false;
    }
    if (!mt_attrs_eq(f->attrs, f->n_attrs, g->attrs, g->n_attrs, f->name, e)) return false;
  }
  return true;
}

MT_FN bool mt_feature_eq(const mil_feature *a, const mil_feature *b, mt_err *e) {
  if (strcmp(a->name, b->name) || a->kind != b->kind || a->is_optional != b->is_optional ||
      a->array_dtype != b->array_dtype || a->shape.rank != b->shape.rank || a->n_ranges != b->n_ranges ||
      a->n_enumerated != b->n_enumerated || a->width != b->width || a->height != b->height ||
      a->color_space != b->color_space || a->dict_key != b->dict_key || strcmp(a->short_description, b->short_description))
    return mt_fail(e, "feature %s differs from %s", a->name, b->name);
  for (int32_t i = 0; i < a->shape.rank; i++)
    if (a->shape.dims[i] != b->shape.dims[i]) return mt_fail(e, "feature %s: shape differs", a->name);
  for (int32_t i = 0; i < a->n_ranges; i++)
    if (a->ranges[i].lower != b->ranges[i].lower || a->ranges[i].upper != b->ranges[i].upper)
      return mt_fail(e, "feature %s: ranges differ", a->name);
  return true;
}

MT_FN bool mt_features_eq(const mil_feature *a, int32_t na, const mil_feature *b, int32_t nb, mt_err *e) {
  if (na != nb) return mt_fail(e, "%d features vs %d", na, nb);
  for (int32_t i = 0; i < na; i++)
    if (!mt_feature_eq(&a[i], &b[i], e)) return false;
  return true;
}

MT_FN bool mt_desc_eq(const mil_model_desc *a, const mil_model_desc *b, mt_err *e) {
  if (a->multi_function != b->multi_function || strcmp(a->default_function_name, b->default_function_name) ||
      a->n_functions != b->n_functions)
    return mt_fail(e, "description forms differ");
  for (int32_t i = 0; i < a->n_functions; i++) {
    const mil_function_desc *f = &a->functions[i], *g = &b->functions[i];
    if (strcmp(f->name, g->name) || strcmp(f->predicted_feature_name, g->predicted_feature_name) ||
        strcmp(f->predicted_probabilities_name, g->predicted_probabilities_name))
      return mt_fail(e, "function descriptions differ");
    if (!mt_features_eq(f->inputs, f->n_inputs, g->inputs, g->n_inputs, e) ||
        !mt_features_eq(f->outputs, f->n_outputs, g->outputs, g->n_outputs, e) ||
        !mt_features_eq(f->states, f->n_states, g->states, g->n_states, e))
      return false;
  }
  if (strcmp(a->author, b->author) || strcmp(a->license, b->license) || strcmp(a->short_description, b->short_description) ||
      strcmp(a->version_string, b->version_string) || a->n_user_defined != b->n_user_defined)
    return mt_fail(e, "metadata differs");
  for (int32_t i = 0; i < a->n_user_defined; i++)
    if (strcmp(a->user_keys[i], b->user_keys[i]) || strcmp(a->user_values[i], b->user_values[i]))
      return mt_fail(e, "metadata entry %s differs", a->user_keys[i]);
  return true;
}

/* ------------------------------------------------------------------------ */
/* coremltools-form text, compared up to mil-text.md section 3               */
/* ------------------------------------------------------------------------ */

/* Canonical tokens of one line: "block<N>" -> "block#", numbers as float32
 * values, literal tuples "(0, 1)" / "(2,)" as lists "[0, 1]" / "[2]". */
typedef struct mt_tok {
  char s[96];
  bool num;
  double v;
} mt_tok;

MT_FN int mt_tokenize(const char *line, mt_tok *out, int cap) {
  int n = 0;
  const char *p = line;
  int paren_literal[64];
  int depth = 0;
  while (*p && n < cap) {
    if (isspace((unsigned char)*p)) {
      p++;
      continue;
    }
    mt_tok *t = &out[n];
    memset(t, 0, sizeof *t);
    if (*p == '"') {
      const char *q = strchr(p + 1, '"');
      size_t len = q ? (size_t)(q - p + 1) : strlen(p);
      snprintf(t->s, sizeof t->s, "%.*s", (int)(len < 95 ? len : 95), p);
      p += len;
      n++;
      continue;
    }
    char *end;
    bool numstart = isdigit((unsigned char)*p) || ((*p == '-' || *p == '+') && (isdigit((unsigned char)p[1]) || p[1] == 'i'));
    bool prev_ident = n > 0 && (isalnum((unsigned char)out[n - 1].s[0]) || out[n - 1].s[0] == '_' || out[n - 1].s[0] == '%') &&
                      !out[n - 1].num && p > line && !isspace((unsigned char)p[-1]) && p[-1] != '(' && p[-1] != '[' &&
                      p[-1] != '=' && p[-1] != ',';
    if (numstart && !prev_ident) {
      double v = strtod(p, &end);
      if (end > p && !isalnum((unsigned char)*end) && *end != '_' && *end != '.') {
        t->num = true;
        t->v = v;
        snprintf(t->s, sizeof t->s, "%.9g", (double)(float)v);
        p = end;
        n++;
        continue;
      }
    }
    if (*p == '%' || isalnum((unsigned char)*p) || *p == '_' || *p == '.' || (*p == '*' && isalpha((unsigned char)p[1]))) {
      const char *q = p + 1;
      while (*q && (isalnum((unsigned char)*q) || *q == '_' || *q == '.' || *q == '@' || *q == '/' || *q == ':'))
        q++;
      snprintf(t->s, sizeof t->s, "%.*s", (int)(q - p < 95 ? q - p : 95), p);
      if (!strncmp(t->s, "block", 5) && t->s[5] && isdigit((unsigned char)t->s[5])) strcpy(t->s, "block#");
      if (!strcmp(t->s, "inf") || !strcmp(t->s, "nan")) t->num = true, t->v = !strcmp(t->s, "inf") ? INFINITY : NAN;
      p = q;
      n++;
      continue;
    }
    /* punctuation; literal tuples become lists */
    if (*p == '(') {
      bool lit = n > 0 && !strcmp(out[n - 1].s, "=") && p[1] != '%';
      if (depth < 64) paren_literal[depth] = lit;
      depth++;
      t->s[0] = lit ? '[' : '(';
    } else if (*p == ')') {
      bool lit = depth > 0 && depth <= 64 && paren_literal[depth - 1];
      if (depth > 0) depth--;
      if (lit && n > 0 && !strcmp(out[n - 1].s, ",")) n--; /* "(2,)" */
      t = &out[n];
      memset(t, 0, sizeof *t);
      t->s[0] = lit ? ']' : ')';
    } else if (*p == '[') {
      if (depth < 64) paren_literal[depth] = 0;
      depth++;
      t->s[0] = '[';
    } else if (*p == ']') {
      if (depth > 0) depth--;
      t->s[0] = ']';
    } else {
      t->s[0] = *p;
    }
    p++;
    n++;
  }
  return n;
}

MT_FN bool mt_tok_eq(const mt_tok *a, const mt_tok *b) {
  if (a->num && b->num) {
    if (isnan(a->v) && isnan(b->v)) return true;
    if ((float)a->v == (float)b->v) return true;
    double m = fabs(a->v) > fabs(b->v) ? fabs(a->v) : fabs(b->v);
    return fabs(a->v - b->v) <= 1e-6 * m;
  }
  return !strcmp(a->s, b->s);
}

/* Splits an op line's argument list (between the call's parentheses) into
 * top-level arguments, each as a canonical string; returns the count. */
MT_FN int mt_args(const mt_tok *t, int n, int *start, char args[][512], int cap) {
  int i = 0;
  while (i < n && strcmp(t[i].s, "=")) i++;           /* outputs '=' */
  while (i < n && strcmp(t[i].s, "(")) i++;           /* op type '(' */
  if (i >= n) return -1;
  *start = i;
  int k = 0, depth = 0;
  args[0][0] = 0;
  for (i = i + 1; i < n && k < cap; i++) {
    const char *s = t[i].s;
    if ((!strcmp(s, "(") || !strcmp(s, "[")) && depth++ >= 0) {
    } else if (!strcmp(s, ")") || !strcmp(s, "]")) {
      if (depth-- == 0) {
        k++;
        break;
      }
    } else if (!strcmp(s, ",") && depth == 0) {
      args[++k][0] = 0;
      continue;
    }
    strncat(args[k], s, 511 - strlen(args[k]));
    strncat(args[k], " ", 511 - strlen(args[k]));
  }
  return k;
}

MT_FN int mt_cmp_str(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }
MT_FN int mt_cmp_str_ptr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Result of comparing two texts line by line. */
typedef struct mt_text_cmp {
  int lines;        /* lines compared */
  int mismatches;   /* lines that differ beyond the allowed equalities */
  int order_only;   /* op lines whose arguments differ only in order */
  char first[2048]; /* first mismatching pair */
} mt_text_cmp;

MT_FN void mt_compare_text(const char *got, const char *want, mt_text_cmp *r) {
  memset(r, 0, sizeof *r);
  const char *g = got, *w = want;
  static mt_tok tg[4096], tw[4096];
  static char ag[256][512], aw[256][512];
  int lineno = 0;
  while (*g || *w) {
    const char *ge = strchr(g, '\n'), *we = strchr(w, '\n');
    size_t gl = ge ? (size_t)(ge - g) : strlen(g), wl = we ? (size_t)(we - w) : strlen(w);
    char *gs = strndup(g, gl), *ws = strndup(w, wl);
    lineno++;
    int ng = mt_tokenize(gs, tg, 4096), nw = mt_tokenize(ws, tw, 4096);
    bool same = ng == nw;
    for (int i = 0; same && i < ng; i++) same = mt_tok_eq(&tg[i], &tw[i]);
    if (!same) {
      int sg, sw;
      int kg = mt_args(tg, ng, &sg, ag, 256), kw = mt_args(tw, nw, &sw, aw, 256);
      bool head = kg >= 0 && kg == kw && sg == sw;
      for (int i = 0; head && i < sg; i++) head = mt_tok_eq(&tg[i], &tw[i]);
      if (head) {
        qsort(ag, (size_t)kg, sizeof ag[0], mt_cmp_str);
        qsort(aw, (size_t)kw, sizeof aw[0], mt_cmp_str);
        bool args = true;
        for (int i = 0; args && i < kg; i++) args = !strcmp(ag[i], aw[i]);
        if (args) {
          r->order_only++;
          same = true;
        }
      }
    }
    if (ng || nw) r->lines++;
    if (!same) {
      if (!r->mismatches)
        snprintf(r->first, sizeof r->first, "line %d:\n  got:  %.900s\n  want: %.900s", lineno, gs, ws);
      r->mismatches++;
    }
    free(gs);
    free(ws);
    g = ge ? ge + 1 : g + gl;
    w = we ? we + 1 : w + wl;
  }
}

#endif
