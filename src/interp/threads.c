/* Intra-op threads of a run (mil_interp_set_threads, MIL_NUM_THREADS,
 * `mil run --threads N`): the count each run uses, handed to the libraries
 * the kernels call (oneDNN through its OpenMP runtime, OpenBLAS) and read by
 * the interpreter's own kernels through interp_threads(). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <cblas.h>

#include "interp/interp_internal.h"

static int g_default = 1;
static void (*g_omp_set)(int);
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_threads;
static atomic_int g_blas; /* the count last given to OpenBLAS; 0: none */

/* "1".."1024" as a count; 0 for anything else */
static int parse_count(const char *s) {
  if (!s || !*s) return 0;
  char *end;
  long v = strtol(s, &end, 10);
  return *end || v < 1 || v > MIL_INTERP_MAX_THREADS ? 0 : (int)v;
}

static void init(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  g_default = cpus < 1 ? 1 : cpus > MIL_INTERP_MAX_THREADS ? MIL_INTERP_MAX_THREADS : (int)cpus;
  int env = parse_count(getenv("MIL_NUM_THREADS"));
  if (env) g_default = env;
  /* oneDNN (Debian's libdnnl) runs on libgomp: its thread count is the
   * calling thread's OpenMP setting. Looked up, not linked: absent when the
   * build has no oneDNN. */
  *(void **)&g_omp_set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
}

int interp_default_threads(void) {
  pthread_once(&g_once, init);
  return g_default;
}

int interp_threads(void) { return t_threads > 0 ? t_threads : interp_default_threads(); }

void interp_threads_begin(int n) {
  pthread_once(&g_once, init);
  t_threads = n > 0 ? n : g_default;
  if (g_omp_set) g_omp_set(t_threads); /* the calling thread's own setting */
  /* OpenBLAS's count is process-wide and setting it may start its thread
   * pool: only when it changes (concurrent runs of one count never touch it) */
  int prev = atomic_load(&g_blas);
  if (prev != t_threads && atomic_compare_exchange_strong(&g_blas, &prev, t_threads))
    openblas_set_num_threads(t_threads);
}

typedef struct part {
  interp_range_fn fn;
  void *ctx;
  int64_t lo, hi;
} part;

static void *part_main(void *arg) {
  part *p = arg;
  p->fn(p->ctx, p->lo, p->hi);
  return NULL;
}

void interp_parallel(int64_t n, int64_t min_per_thread, int64_t align, interp_range_fn fn, void *ctx) {
  int t = interp_threads();
  if (align < 1) align = 1;
  if (min_per_thread < 1) min_per_thread = 1;
  if (t > 64) t = 64;
  if (t > 1 && n / min_per_thread < t) t = (int)(n / min_per_thread);
  if (t <= 1) {
    if (n > 0) fn(ctx, 0, n);
    return;
  }
  part parts[64];
  pthread_t tid[64];
  bool started[64] = {false};
  int64_t chunk = (n + t - 1) / t;
  chunk = (chunk + align - 1) / align * align;
  int m = 0;
  for (int64_t lo = 0; lo < n; lo += chunk, m++) parts[m] = (part){fn, ctx, lo, lo + chunk < n ? lo + chunk : n};
  for (int i = 1; i < m; i++) started[i] = pthread_create(&tid[i], NULL, part_main, &parts[i]) == 0;
  part_main(&parts[0]);
  for (int i = 1; i < m; i++) {
    if (started[i]) pthread_join(tid[i], NULL);
    else part_main(&parts[i]); /* no thread: the caller does it */
  }
}
