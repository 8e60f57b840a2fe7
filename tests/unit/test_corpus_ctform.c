/* The printer against coremltools' own output, over the golden pass corpus.
 *
 * Every corpus case (MIL_SHARED_DIR/corpus/passes/<pass>/<case>.mil) holds
 * the program coremltools produced in complete form ("# --- expected") and
 * what coremltools' print(program) showed for it ("# --- expected
 * (coremltools form)"). This test parses the first, prints it in the
 * coremltools form and compares the result with the second, and prints it in
 * the complete form and compares that with the first (and does the same
 * for the "# --- input" program).
 *
 * The comparison follows mil-text.md section 3: the texts are split into
 * tokens; a Python tuple equals the list with the same items ("(2,)" ==
 * "[2]"), numbers compare by value (within 1e-6 relative, or equal after
 * rounding both to fp16, since coremltools may print values it computed in
 * float64 that the program stores in a narrower dtype), and function-body
 * block numbers ("block3837") are ignored. Everything else must be equal.
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "shared_skip.h"

#include "mil/model.h"
#include "mil/text.h"

#ifndef MIL_SHARED_DIR
#define MIL_SHARED_DIR "../shared"
#endif

/* ---------- tokens ---------- */

typedef enum { T_END, T_NUM, T_NAME, T_WORD, T_STR, T_PUNCT } tkind;

typedef struct tok {
  tkind k;
  const char *s; /* text of the token */
  size_t n;
  double num;
  int line;
} tok;

typedef struct lexer {
  const char *p, *end;
  int line;
  bool have_peek;
  tok peek;
} lexer;

static bool is_name_char(char c) {
  return c && !strchr(" \t\r\n,():=[]{}\"", c);
}

static bool is_word_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
static bool is_word_char(char c) { return is_word_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static tok lex_raw(lexer *L) {
  tok t = {T_END, NULL, 0, 0, 0};
  while (L->p < L->end && strchr(" \t\r\n", *L->p)) {
    if (*L->p == '\n') L->line++;
    L->p++;
  }
  t.line = L->line;
  if (L->p >= L->end) return t;
  const char *s = L->p;
  t.s = s;
  char c = *s;
  bool sign = (c == '-' || c == '+') && s + 1 < L->end;
  const char *b = sign ? s + 1 : s;
  if (is_digit(*b) || (b + 3 <= L->end && (!strncmp(b, "inf", 3) || !strncmp(b, "nan", 3)) &&
                       (b + 3 == L->end || !is_word_char(b[3])))) {
    const char *q = b;
    if (is_digit(*q)) {
      while (q < L->end && is_digit(*q)) q++;
      if (q < L->end && *q == '.') {
        q++;
        while (q < L->end && is_digit(*q)) q++;
      }
      if (q < L->end && (*q == 'e' || *q == 'E')) {
        const char *r = q + 1;
        if (r < L->end && (*r == '-' || *r == '+')) r++;
        if (r < L->end && is_digit(*r)) {
          while (r < L->end && is_digit(*r)) r++;
          q = r;
        }
      }
    } else {
      q += 3;
    }
    char buf[64];
    size_t n = (size_t)(q - s) < sizeof buf - 1 ? (size_t)(q - s) : sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    t.k = T_NUM;
    t.num = strtod(buf, NULL);
    t.n = (size_t)(q - s);
    L->p = q;
    return t;
  }
  if (c == '%') {
    const char *q = s + 1;
    while (q < L->end && is_name_char(*q)) q++;
    t.k = T_NAME;
    t.n = (size_t)(q - s);
    L->p = q;
    return t;
  }
  if (is_word_start(c)) {
    const char *q = s;
    while (q < L->end && is_word_char(*q)) q++;
    t.k = T_WORD;
    t.n = (size_t)(q - s);
    L->p = q;
    return t;
  }
  if (c == '"') {
    const char *q = s + 1;
    while (q < L->end && *q != '"') {
      if (*q == '\n') L->line++;
      q++;
    }
    if (q < L->end) q++;
    t.k = T_STR;
    t.n = (size_t)(q - s);
    L->p = q;
    return t;
  }
  t.k = T_PUNCT;
  t.n = 1;
  L->p = s + 1;
  return t;
}

/* Next token with a tuple's trailing comma ("(2,)") dropped. */
static tok lex_next(lexer *L) {
  tok t = L->have_peek ? L->peek : lex_raw(L);
  L->have_peek = false;
  if (t.k == T_PUNCT && *t.s == ',') {
    L->peek = lex_raw(L);
    L->have_peek = true;
    if (L->peek.k == T_PUNCT && (*L->peek.s == ')' || *L->peek.s == ']')) {
      L->have_peek = false;
      return L->peek;
    }
  }
  return t;
}

static bool is_block_number(const tok *t) {
  if (t->k != T_WORD || t->n <= 5 || strncmp(t->s, "block", 5) != 0) return false;
  for (size_t i = 5; i < t->n; i++)
    if (!is_digit(t->s[i])) return false;
  return true;
}

static uint16_t to_fp16(double d) { return mil_fp64_to_fp16(d); }

static bool num_equal(double a, double b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (a == b) return true;
  if (fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b))) return true;
  return to_fp16(a) == to_fp16(b);
}

static char punct_class(char c) { return c == '[' ? '(' : c == ']' ? ')' : c; }

static bool tok_equal(const tok *a, const tok *b) {
  if (a->k != b->k) return false;
  switch (a->k) {
  case T_END: return true;
  case T_NUM: return num_equal(a->num, b->num);
  case T_PUNCT: return punct_class(*a->s) == punct_class(*b->s);
  case T_WORD:
    if (is_block_number(a) && is_block_number(b)) return true;
    /* fall through */
  default: return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  }
}

/* Compares two texts; on a difference writes the reason into why. */
static bool texts_equal(const char *got, size_t got_n, const char *want, size_t want_n, char *why, size_t why_n) {
  lexer A = {got, got + got_n, 1, false, {0}}, B = {want, want + want_n, 1, false, {0}};
  for (;;) {
    tok a = lex_next(&A), b = lex_next(&B);
    if (!tok_equal(&a, &b)) {
      /* show the line of the expected text around the difference */
      const char *ls = b.s ? b.s : want + want_n;
      while (ls > want && ls[-1] != '\n') ls--;
      const char *le = b.s ? b.s : want + want_n;
      while (le < want + want_n && *le != '\n') le++;
      int an = a.k == T_END ? 5 : (int)(a.n > 40 ? 40 : a.n), bn = b.k == T_END ? 5 : (int)(b.n > 40 ? 40 : b.n);
      snprintf(why, why_n, "line %d: printed '%.*s' where coremltools has '%.*s' in: %.*s", b.line, an,
               a.k == T_END ? "<end>" : a.s, bn, b.k == T_END ? "<end>" : b.s, (int)(le - ls > 200 ? 200 : le - ls),
               ls);
      return false;
    }
    if (a.k == T_END) return true;
  }
}

/* ---------- corpus walk ---------- */

typedef struct strvec {
  char **v;
  size_t n, cap;
} strvec;

static void sv_push(strvec *s, char *x) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 256;
    s->v = realloc(s->v, s->cap * sizeof *s->v);
    assert_non_null(s->v);
  }
  s->v[s->n++] = x;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void collect(const char *dir, strvec *out) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    size_t need = strlen(dir) + strlen(e->d_name) + 2;
    char *path = malloc(need);
    snprintf(path, need, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      collect(path, out);
      free(path);
    } else if (strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".mil")) {
      sv_push(out, path);
    } else {
      free(path);
    }
  }
  closedir(d);
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  *n = fread(buf, 1, (size_t)len, f);
  buf[*n] = 0;
  fclose(f);
  return buf;
}

/* The section after the line `header` up to the next "# ---" line. */
static const char *section(const char *text, const char *header, size_t *n) {
  const char *s = strstr(text, header);
  while (s && s != text && s[-1] != '\n') s = strstr(s + 1, header);
  if (!s) return NULL;
  s = strchr(s, '\n');
  if (!s) return NULL;
  s++;
  const char *e = strstr(s, "\n# ---");
  *n = e ? (size_t)(e - s + 1) : strlen(s);
  return s;
}

static void test_corpus(void **state) {
  (void)state;
  char root[4096];
  snprintf(root, sizeof root, "%s/corpus/passes", MIL_SHARED_DIR);
  struct stat st;
  if (stat(root, &st) != 0) {
    shared_skip("the corpus");
    return;
  }
  strvec files = {0};
  collect(root, &files);
  qsort(files.v, files.n, sizeof *files.v, cmp_str);
  size_t ct_pass = 0, ct_fail = 0, full_pass = 0, full_fail = 0, parse_fail = 0;
  char why[512];
  for (size_t i = 0; i < files.n; i++) {
    size_t len, en, cn;
    char *text = read_file(files.v[i], &len);
    assert_non_null(text);
    const char *rel = files.v[i] + strlen(root) + 1;
    const char *exp = section(text, "# --- expected\n", &en);
    const char *ct = section(text, "# --- expected (coremltools form)\n", &cn);
    if (!exp || !ct) {
      printf("  %s: no expected sections\n", rel);
      ct_fail++;
      free(text);
      continue;
    }
    mil_program *p = NULL;
    mil_diag d = {0};
    mil_parse_options po = {files.v[i], NULL};
    if (mil_parse_program(exp, en, &po, &p, &d) != MIL_OK) {
      printf("  %s: parse failed: %s\n", rel, mil_diag_first_error(&d));
      parse_fail++;
      ct_fail++;
      full_fail++;
      mil_diag_clear(&d);
      free(text);
      continue;
    }
    mil_buf b = {0};
    mil_print_options o = {MIL_PRINT_COREMLTOOLS, false};
    mil_print_program(p, &o, &b);
    assert_false(b.oom);
    if (texts_equal(b.data, b.len, ct, cn, why, sizeof why)) {
      ct_pass++;
    } else {
      ct_fail++;
      printf("  ctform %s: %s\n", rel, why);
    }
    b.len = 0;
    o.form = MIL_PRINT_COMPLETE;
    mil_print_program(p, &o, &b);
    if (texts_equal(b.data, b.len, exp, en, why, sizeof why)) {
      full_pass++;
    } else {
      full_fail++;
      printf("  complete %s: %s\n", rel, why);
    }
    mil_buf_free(&b);
    mil_program_free(p);
    mil_diag_clear(&d);
    /* the input program too: more complete-form text to reproduce */
    const char *in = section(text, "# --- input\n", &en);
    if (in && mil_parse_program(in, en, &po, &p, &d) == MIL_OK) {
      mil_print_program(p, &o, &b);
      if (texts_equal(b.data, b.len, in, en, why, sizeof why)) {
        full_pass++;
      } else {
        full_fail++;
        printf("  complete (input) %s: %s\n", rel, why);
      }
      mil_buf_free(&b);
      mil_program_free(p);
    } else if (in) {
      printf("  %s: input parse failed: %s\n", rel, mil_diag_first_error(&d));
      parse_fail++;
      full_fail++;
    }
    mil_diag_clear(&d);
    free(text);
  }
  printf("ctform: %zu passed, %zu failed\n", ct_pass, ct_fail);
  printf("complete: %zu passed, %zu failed (%zu did not parse)\n", full_pass, full_fail, parse_fail);
  for (size_t i = 0; i < files.n; i++) free(files.v[i]);
  free(files.v);
  assert_true(ct_pass + ct_fail > 0);
  assert_true((double)ct_pass >= 0.99 * (double)(ct_pass + ct_fail));
  assert_true((double)full_pass >= 0.99 * (double)(full_pass + full_fail));
}

/* The whole-model corpus: coremltools' print of each .mlpackage next to it
 * (input.ct.mil, expected.ct.mil). Reported, not asserted: whether they
 * match also depends on the model loader restoring coremltools' input order
 * and inferred values, which the loader's own tests cover. */
static void test_models_report(void **state) {
  (void)state;
  static const char *const names[] = {"mobilenet_v2", "squeezenet1_1", "tinygpt4", "tinyllama4"};
  static const char *const which[] = {"input", "expected"};
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/corpus/models", MIL_SHARED_DIR);
  struct stat st;
  if (stat(dir, &st) != 0) {
    shared_skip("the corpus");
    return;
  }
  size_t same = 0, total = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    for (size_t w = 0; w < 2; w++) {
      char pkg[4200], ct[4200];
      snprintf(pkg, sizeof pkg, "%s/%s/%s.mlpackage", dir, names[i], which[w]);
      snprintf(ct, sizeof ct, "%s/%s/%s.ct.mil", dir, names[i], which[w]);
      size_t n;
      char *want = read_file(ct, &n);
      if (!want || stat(pkg, &st) != 0) {
        free(want);
        continue;
      }
      total++;
      mil_model *m = NULL;
      mil_diag d = {0};
      if (mil_model_load(pkg, &m, &d) != MIL_OK) {
        printf("  model %s/%s: load failed: %s\n", names[i], which[w], mil_diag_first_error(&d));
      } else {
        mil_buf b = {0};
        mil_print_options o = {MIL_PRINT_COREMLTOOLS, false};
        mil_print_program(mil_model_program(m), &o, &b);
        assert_false(b.oom);
        char why[512];
        if (texts_equal(b.data, b.len, want, n, why, sizeof why)) same++;
        else printf("  model %s/%s: %s\n", names[i], which[w], why);
        mil_buf_free(&b);
      }
      mil_model_free(m);
      mil_diag_clear(&d);
      free(want);
    }
  }
  printf("models ctform: %zu of %zu prints equal coremltools'\n", same, total);
}

/* The comparison itself: what it accepts and what it rejects. */
static void test_compare_rules(void **state) {
  (void)state;
  char why[512];
#define EQ(a, b) assert_true(texts_equal(a, strlen(a), b, strlen(b), why, sizeof why))
#define NE(a, b) assert_false(texts_equal(a, strlen(a), b, strlen(b), why, sizeof why))
  EQ("perm=[0, 2, 1]", "perm=(0, 2, 1)");
  EQ("axes=[-2], x=1", "axes=(-2,), x=1");
  EQ("y=1.2999999523162842", "y=1.3");
  EQ("y=[0.1, inf, -inf, nan]", "y=[0.10000000149011612, inf, -inf, nan]");
  EQ("\n  block0() {\n", "  block3837() {");
  EQ("v=0.0999755859375", "v=0.1"); /* fp16 nearest 0.1 */
  NE("y=1.5", "y=1.25");
  NE("y=1", "y=2");
  NE("%a", "%b");
  NE("(3,fp32)", "(3,fp16)");
  NE("x=%a, name=\"n\")", "x=%a, name=\"m\")");
  NE("perm=[0, 2, 1]", "perm=(0, 2)");
  NE("f(x=%a)", "f(x=%a)\n g");
  NE("  cond_block() {", "  body_block() {");
  NE("y=True", "y=False");
  NE("(2, 3, fp32)*(Tensor)", "(2, 3, fp32)(Tensor)");
#undef EQ
#undef NE
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare_rules),
      cmocka_unit_test(test_corpus),
      cmocka_unit_test(test_models_report),
  };
  return shared_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
