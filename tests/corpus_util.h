/* Test helper: reading the golden pass corpus (mil-text.md section 4).
 *
 * A case file is
 *   # pass: common::fuse_conv_batchnorm      (or  # pipeline: a, b, ...)
 *   # options: {...}
 *   # origin: ...
 *   # --- input
 *   <complete-form program>
 *   # --- expected
 *   <complete-form program>
 *   # --- expected (coremltools form)
 *   <coremltools print>
 *
 * corpus_case_load splits it into its sections (pointers into the loaded
 * text, not NUL-terminated) and header fields (NUL-terminated copies).
 * Everything is static so any test can include this header.
 */
#ifndef MIL_TESTS_CORPUS_UTIL_H
#define MIL_TESTS_CORPUS_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct corpus_section {
  const char *text; /* NULL when the file has no such section */
  size_t len;
  int first_line;   /* 1-based line of the section's first line in the file */
} corpus_section;

typedef struct corpus_case {
  char *path;
  char *data; /* whole file, NUL-terminated */
  size_t size;
  char *pass;     /* "# pass:" value, or NULL */
  char *pipeline; /* "# pipeline:" value, or NULL */
  char *options;  /* "# options:" value (JSON), or NULL */
  char *origin;   /* "# origin:" value, or NULL */
  corpus_section input, expected, expected_ct;
} corpus_case;

/* Directory of the pass corpus, or NULL when it is not present. */
static inline const char *corpus_passes_dir(void) {
#ifdef MIL_SHARED_DIR
  static char dir[4096];
  struct stat st;
  snprintf(dir, sizeof dir, "%s/corpus/passes", MIL_SHARED_DIR);
  if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return dir;
#endif
  return NULL;
}

static inline char *corpus_strndup_trim(const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
  char *r = (char *)malloc(n + 1);
  if (r) {
    memcpy(r, s, n);
    r[n] = 0;
  }
  return r;
}

static inline void corpus_case_free(corpus_case *c) {
  free(c->path);
  free(c->data);
  free(c->pass);
  free(c->pipeline);
  free(c->options);
  free(c->origin);
  memset(c, 0, sizeof *c);
}

/* Loads and splits a case file. Returns 0 on success, -1 when the file
 * cannot be read. */
static inline int corpus_case_load(const char *path, corpus_case *c) {
  memset(c, 0, sizeof *c);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  if (sz < 0) {
    fclose(f);
    return -1;
  }
  c->data = (char *)malloc((size_t)sz + 1);
  if (!c->data || fread(c->data, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f);
    free(c->data);
    c->data = NULL;
    return -1;
  }
  fclose(f);
  c->data[sz] = 0;
  c->size = (size_t)sz;
  c->path = strdup(path);
  corpus_section *cur = NULL;
  const char *p = c->data, *end = c->data + c->size;
  int line = 1;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    size_t n = (size_t)(eol - p);
    corpus_section *next = NULL;
    if (n >= 5 && memcmp(p, "# ---", 5) == 0) {
      const char *what = p + 5;
      size_t wn = n - 5;
      while (wn && *what == ' ') what++, wn--;
      while (wn && (what[wn - 1] == ' ' || what[wn - 1] == '\r')) wn--;
      if (wn == 5 && memcmp(what, "input", 5) == 0) next = &c->input;
      else if (wn == 8 && memcmp(what, "expected", 8) == 0) next = &c->expected;
      else if (wn > 8 && memcmp(what, "expected", 8) == 0) next = &c->expected_ct;
    }
    if (next) {
      cur = next;
      cur->text = nl ? nl + 1 : end;
      cur->len = 0;
      cur->first_line = line + 1;
    } else if (cur) {
      cur->len = (size_t)((nl ? nl + 1 : end) - cur->text);
    } else if (n > 2 && p[0] == '#') {
      const char *q = p + 1;
      size_t qn = n - 1;
      while (qn && *q == ' ') q++, qn--;
      static const char *const keys[] = {"pass:", "pipeline:", "options:", "origin:"};
      char **dst[] = {&c->pass, &c->pipeline, &c->options, &c->origin};
      for (int k = 0; k < 4; k++) {
        size_t kl = strlen(keys[k]);
        if (qn >= kl && memcmp(q, keys[k], kl) == 0 && !*dst[k]) *dst[k] = corpus_strndup_trim(q + kl, qn - kl);
      }
    }
    p = nl ? nl + 1 : end;
    line++;
  }
  return 0;
}

typedef struct corpus_list {
  char **paths; /* sorted */
  size_t n, cap;
} corpus_list;

static inline int corpus_cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void corpus_list_push(corpus_list *l, const char *path) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 256;
    l->paths = (char **)realloc(l->paths, l->cap * sizeof *l->paths);
  }
  l->paths[l->n++] = strdup(path);
}

static inline void corpus_list_rec(const char *root, corpus_list *l) {
  DIR *d = opendir(root);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t rl = strlen(root), nl = strlen(e->d_name);
    if (rl + nl + 2 > sizeof path) continue;
    memcpy(path, root, rl);
    path[rl] = '/';
    memcpy(path + rl + 1, e->d_name, nl + 1);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    size_t n = strlen(e->d_name);
    if (S_ISDIR(st.st_mode)) corpus_list_rec(path, l);
    else if (n > 4 && strcmp(e->d_name + n - 4, ".mil") == 0) corpus_list_push(l, path);
  }
  closedir(d);
}

/* Every *.mil file under root (recursively), sorted by path. */
static inline void corpus_list_cases(const char *root, corpus_list *l) {
  corpus_list_rec(root, l);
  if (l->n) qsort(l->paths, l->n, sizeof *l->paths, corpus_cmp_str);
}

static inline void corpus_list_free(corpus_list *l) {
  for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
  free(l->paths);
  memset(l, 0, sizeof *l);
}

#endif
