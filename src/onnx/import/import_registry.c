/* The converter table: every family's entries (ops_families.def), sorted
 * by op_type and since, looked up by (op_type, domain, opset). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/import/import_internal.h"

typedef struct reg_entry {
  const onnx_op_entry *e;
  mil_onnx_op_info info;
} reg_entry;

static reg_entry *g_tab;
static size_t g_n;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_entry(const void *x, const void *y) {
  const reg_entry *a = x, *b = y;
  int r = strcmp(a->info.domain, b->info.domain);
  if (!r) r = strcmp(a->info.op_type, b->info.op_type);
  return r ? r : a->info.since - b->info.since;
}

static void build(void) {
  static const struct {
    const char *name;
    const onnx_op_entry *ops;
  } fams[] = {
#define ONNX_FAMILY(nm) {#nm, onnx_ops_##nm},
#include "onnx/import/ops_families.def"
#undef ONNX_FAMILY
  };
  size_t n = 0;
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
    for (const onnx_op_entry *e = fams[f].ops; e->op_type; e++) n++;
  g_tab = calloc(n ? n : 1, sizeof *g_tab);
  if (!g_tab) return;
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++)
    for (const onnx_op_entry *e = fams[f].ops; e->op_type; e++) {
      reg_entry *r = &g_tab[g_n++];
      r->e = e;
      r->info.op_type = e->op_type;
      r->info.domain = e->domain ? e->domain : "";
      r->info.since = e->since;
      r->info.until = e->until ? e->until : MIL_ONNX_OPSET_KNOWN;
      r->info.family = fams[f].name;
      r->info.mil_ops = e->mil_ops ? e->mil_ops : "";
    }
  qsort(g_tab, g_n, sizeof *g_tab, cmp_entry);
}

size_t mil_onnx_op_count(void) {
  pthread_once(&g_once, build);
  return g_n;
}

const mil_onnx_op_info *mil_onnx_op_at(size_t i) {
  pthread_once(&g_once, build);
  return i < g_n ? &g_tab[i].info : NULL;
}

/* The entry for op_type/domain at opset: the one with the largest since
 * <= opset, accepted when opset <= its until or when the model's opset is
 * beyond everything libmil knows and the entry is the newest (its
 * semantics are taken to hold). *any gets some entry of the op when none
 * applies (for the message). */
const onnx_op_entry *onnx_registry_find(const char *op_type, const char *domain, int opset, const onnx_op_entry **any) {
  pthread_once(&g_once, build);
  const reg_entry *best = NULL;
  if (any) *any = NULL;
  if (domain && strcmp(domain, "ai.onnx") == 0) domain = "";
  for (size_t i = 0; i < g_n; i++) {
    const reg_entry *r = &g_tab[i];
    if (strcmp(r->info.op_type, op_type) != 0 || strcmp(r->info.domain, domain ? domain : "") != 0) continue;
    if (any && !*any) *any = r->e;
    if (r->info.since <= opset && (!best || r->info.since > best->info.since)) best = r;
  }
  if (!best) return NULL;
  if (opset <= best->info.until || (best->info.until == MIL_ONNX_OPSET_KNOWN && opset > MIL_ONNX_OPSET_KNOWN))
    return best->e;
  return NULL;
}

const mil_onnx_op_info *mil_onnx_op_find(const char *op_type, const char *domain, int opset) {
  const onnx_op_entry *e = onnx_registry_find(op_type, domain, opset, NULL);
  if (!e) return NULL;
  for (size_t i = 0; i < g_n; i++)
    if (g_tab[i].e == e) return &g_tab[i].info;
  return NULL;
}
