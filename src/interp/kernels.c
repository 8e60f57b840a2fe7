/* The interpreter's kernel table: every family's kernels, sorted by op
 * type once, looked up by binary search. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp_internal.h"

#define INTERP_FAMILY_X(fam) INTERP_FAMILY_DECL(fam)
#include "interp/families.def"
#undef INTERP_FAMILY_X

typedef struct fam_table {
  const interp_kernel *k;
  const size_t *count;
} fam_table;

static const fam_table k_fams[] = {
#define INTERP_FAMILY_X(fam) {interp_kernels_##fam, &interp_kernels_##fam##_count},
#include "interp/families.def"
#undef INTERP_FAMILY_X
};

static const interp_kernel **g_k;
static size_t g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_k(const void *a, const void *b) {
  const interp_kernel *x = *(const interp_kernel *const *)a, *y = *(const interp_kernel *const *)b;
  return strcmp(x->type, y->type);
}

static void build(void) {
  size_t n = 0;
  for (size_t f = 0; f < sizeof k_fams / sizeof k_fams[0]; f++) n += *k_fams[f].count;
  g_k = malloc((n ? n : 1) * sizeof *g_k);
  if (!g_k) return;
  for (size_t f = 0; f < sizeof k_fams / sizeof k_fams[0]; f++)
    for (size_t i = 0; i < *k_fams[f].count; i++) g_k[g_n++] = &k_fams[f].k[i];
  qsort(g_k, g_n, sizeof *g_k, cmp_k);
}

const interp_kernel *interp_kernel_find(const char *type) {
  pthread_once(&g_once, build);
  size_t lo = 0, hi = g_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strcmp(g_k[mid]->type, type);
    if (c == 0) return g_k[mid];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}
