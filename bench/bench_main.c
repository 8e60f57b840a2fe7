/* Benchmark of the main job: load a model, run a pass pipeline (DEFAULT),
 * save it. One model per process, so that the peak RSS (getrusage
 * ru_maxrss) is this model's alone; bench/run.sh runs it once per model and
 * writes bench/RESULTS.md.
 *
 *   bench_main IN.mlpackage OUT.mlpackage [--pipeline NAME] [--label NAME]
 *              [--passes N]
 *
 * Passes of the pipeline that are not implemented are left out (and listed).
 * Prints, on stdout, lines run.sh parses:
 *   result <label> <ops_before> <ops_after> <in_bytes> <out_bytes>
 *          <out_weight_bytes> <load_s> <pipeline_s> <save_s>
 *          <rss_load_kb> <rss_pipeline_kb> <rss_peak_kb> <n_pass_runs>
 *          <n_skipped> <pipeline_cpu_s> <passes_s> <read_floor_s>
 *          <weight_elements> <load_cpu_s> <save_cpu_s> <write_floor_cpu_s>
 *   (pipeline_cpu_s: user + system CPU time of the pipeline, less disturbed
 *    by other processes than the wall time; passes_s: the summed time of the
 *    pass run functions, the rest of pipeline_s is the pipeline driver;
 *    read_floor_s: reading the input weight file once on two threads;
 *    weight_elements: elements of the input's fp32 / fp16 const tensors;
 *    write_floor_cpu_s: the CPU time of copying the written weight.bin to a
 *    new file with read/write, what the kernel charges for writing that many
 *    bytes through the page cache: a floor under any save)
 *   skipped <pass> ...                 (passes left out)
 *   pass <name> <runs> <seconds> <changes> <cpu_seconds>
 *                                      (the N slowest passes, default 8,
 *                                       times summed over their runs;
 *                                       cpu_seconds: the process's CPU time
 *                                       during them, every thread)
 * and a human-readable report on stderr. Exit status 1 on any failure. */
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "mil/passes.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
         (double)ru.ru_stime.tv_usec * 1e-6;
}

static long maxrss_kb(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return ru.ru_maxrss;
}

/* Total size of the regular files under a path (file or directory). */
static uint64_t g_tree_bytes;
static int tree_add(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)p, (void)ftw;
  if (flag == FTW_F) g_tree_bytes += (uint64_t)sb->st_size;
  return 0;
}
static uint64_t tree_bytes(const char *path) {
  g_tree_bytes = 0;
  nftw(path, tree_add, 16, FTW_PHYS);
  return g_tree_bytes;
}

static uint64_t file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* CPU seconds to copy file `path` to a new sibling file (removed after). */
static double copy_cpu(const char *path) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.copy", path);
  int in = open(path, O_RDONLY);
  if (in < 0) return 0;
  static char buf[1 << 20];
  double c0 = cpu_s();
  int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ssize_t r;
  while (out >= 0 && (r = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)r) != r) break;
  if (out >= 0) close(out);
  double c = cpu_s() - c0;
  close(in);
  unlink(tmp);
  return c;
}

static int fail(const char *what, mil_diag *d, mil_status st) {
  const char *m = mil_diag_first_error(d);
  fprintf(stderr, "bench_main: %s: %s\n", what, m ? m : mil_status_str(st));
  return 1;
}

/* The floor under any DEFAULT pipeline on this input: reading every byte
 * of its weight file once, as add_fp16_cast's overflow check must (it
 * looks at every fp32 weight element), through a fresh read-only mapping
 * on two threads, as the pipeline does. Seconds, or 0 without a weight
 * file. */
typedef struct scan_part {
  const uint32_t *u;
  size_t n;
  uint32_t m;
} scan_part;

/* Every byte read, as cheaply as a CPU can (four OR chains over 64-bit
 * words): what is measured is getting the bytes, not looking at them. */
static void *scan_part_run(void *arg) {
  scan_part *s = arg;
  const uint64_t *w = (const uint64_t *)(const void *)s->u;
  size_t n = s->n / 2, i = 0;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (; i + 4 <= n; i += 4) a |= w[i], b |= w[i + 1], c |= w[i + 2], d |= w[i + 3];
  for (; i < n; i++) a |= w[i];
  uint64_t m = a | b | c | d;
  s->m = (uint32_t)(m | (m >> 32)) & 0x7fffffffu;
  return NULL;
}

static double weight_read_floor(const char *pkg, uint32_t *sink) {
  char path[4096];
  snprintf(path, sizeof path, "%s/Data/com.apple.CoreML/weights/weight.bin", pkg);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < 8) {
    close(fd);
    return 0;
  }
  double t0 = now();
  void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return 0;
  size_t n = (size_t)st.st_size / 4;
  n &= ~(size_t)3; /* whole 64-bit words in each half */
  scan_part hi = {(const uint32_t *)base + n / 2, n - n / 2, 0}, lo = {base, n / 2, 0};
  pthread_t th;
  bool threaded = pthread_create(&th, NULL, scan_part_run, &hi) == 0;
  scan_part_run(&lo);
  if (threaded) pthread_join(th, NULL);
  else scan_part_run(&hi);
  double s = now() - t0;
  munmap(base, (size_t)st.st_size);
  *sink = lo.m > hi.m ? lo.m : hi.m;
  return s;
}

typedef struct pass_total {
  const char *name;
  int runs;
  double seconds;
  int64_t changes;
  double cpu;
} pass_total;

/* CPU time of each pass run, in pipeline order, through the run hooks. */
typedef struct cpu_log {
  double *cpu;
  int32_t n, cap;
  double start;
} cpu_log;

static double process_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void before_pass(void *ud, const mil_pipeline *pl, int32_t index, int32_t n, const char *pass, mil_program *p,
                        int64_t ops) {
  (void)pl, (void)index, (void)n, (void)pass, (void)p, (void)ops;
  ((cpu_log *)ud)->start = process_cpu_s();
}

static mil_status after_pass(void *ud, const mil_pipeline *pl, const mil_pass_record *r, mil_program *p,
                             mil_diag *d) {
  (void)pl, (void)r, (void)p, (void)d;
  cpu_log *l = ud;
  double t = process_cpu_s() - l->start;
  if (l->n == l->cap) {
    int32_t cap = l->cap ? l->cap * 2 : 128;
    double *c = realloc(l->cpu, (size_t)cap * sizeof *c);
    if (!c) return MIL_OK;
    l->cpu = c;
    l->cap = cap;
  }
  l->cpu[l->n++] = t;
  return MIL_OK;
}

/* Elements of the fp32 / fp16 const tensors (the weights). */
static int count_weights(mil_op *op, void *ud) {
  if (op->n_outputs != 1 || strcmp(op->type, "const") != 0) return 0;
  const mil_value *v = op->outputs[0]->val;
  if (v && v->kind == MIL_VAL_TENSOR && v->type && v->type->rank > 0 &&
      (v->type->dtype == MIL_DT_FP32 || v->type->dtype == MIL_DT_FP16))
    *(int64_t *)ud += v->numel;
  return 0;
}

static int cmp_total(const void *x, const void *y) {
  const pass_total *a = x, *b = y;
  return a->seconds < b->seconds ? 1 : a->seconds > b->seconds ? -1 : 0;
}

int main(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *pipeline = "default", *label = NULL;
  int n_show = 8;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pipeline") == 0 && i + 1 < argc) pipeline = argv[++i];
    else if (strcmp(argv[i], "--label") == 0 && i + 1 < argc) label = argv[++i];
    else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc) n_show = atoi(argv[++i]);
    else if (!in) in = argv[i];
    else if (!out) out = argv[i];
    else in = NULL, i = argc;
  }
  if (!in || !out) {
    fprintf(stderr, "usage: bench_main IN.mlpackage OUT.mlpackage [--pipeline NAME] [--label NAME] [--passes N]\n");
    return 2;
  }
  if (!label) label = in;
  mil_diag d;
  mil_diag_init(&d);

  mil_pipeline *pl = NULL;
  mil_status st = mil_pipeline_new(pipeline, &pl, &d);
  if (st != MIL_OK) return fail("pipeline", &d, st);
  char *skipped = calloc(1, 1);
  size_t sk_len = 0;
  int n_skipped = 0;
  for (int32_t i = 0; i < mil_pipeline_n_passes(pl); i++) {
    const char *p = mil_pipeline_pass_at(pl, i);
    if (mil_pass_is_implemented(p)) continue;
    size_t add = strlen(p) + 1;
    char *ns = realloc(skipped, sk_len + add + 1);
    if (ns) {
      skipped = ns;
      sk_len += (size_t)snprintf(skipped + sk_len, add + 1, " %s", p);
    }
    n_skipped++;
    mil_pipeline_remove_pass(pl, p);
    i--;
  }

  double t0 = now(), lc0 = cpu_s();
  mil_model *m = NULL;
  st = mil_model_load(in, &m, &d);
  double load_s = now() - t0, load_cpu = cpu_s() - lc0;
  if (st != MIL_OK) return fail("load", &d, st);
  long rss_load = maxrss_kb();

  mil_program *p = mil_model_program(m);
  int64_t weight_elems = 0;
  mil_program_walk(p, count_weights, &weight_elems);
  mil_pipeline_report rep = {0};
  cpu_log clog = {0};
  mil_pass_observer obs = {before_pass, after_pass, &clog};
  mil_pipeline_run_options ro = {&obs, 1};
  double c0 = cpu_s();
  t0 = now();
  st = mil_pipeline_run(pl, p, &ro, &rep, &d);
  double pipe_s = now() - t0;
  double pipe_cpu = cpu_s() - c0;
  if (st != MIL_OK) return fail("pipeline", &d, st);
  long rss_pipe = maxrss_kb();

  t0 = now();
  double sc0 = cpu_s();
  st = mil_model_save(m, out, &d);
  double save_s = now() - t0, save_cpu = cpu_s() - sc0;
  if (st != MIL_OK) return fail("save", &d, st);
  long rss_peak = maxrss_kb();

  uint64_t in_bytes = tree_bytes(in), out_bytes = tree_bytes(out);
  char wpath[4096];
  snprintf(wpath, sizeof wpath, "%s/Data/com.apple.CoreML/weights/weight.bin", out);
  uint64_t out_w = file_bytes(wpath);

  mil_model_free(m);
  m = NULL;
  uint32_t sink = 0;
  double floor_s = weight_read_floor(in, &sink);
  printf("result %s %lld %lld %llu %llu %llu %.6f %.6f %.6f %ld %ld %ld %d %d %.6f %.6f %.6f %lld %.6f %.6f %.6f\n", label,
         (long long)rep.ops_before, (long long)rep.ops_after, (unsigned long long)in_bytes,
         (unsigned long long)out_bytes, (unsigned long long)out_w, load_s, pipe_s, save_s, rss_load, rss_pipe,
         rss_peak, (int)rep.n_records, n_skipped, pipe_cpu, rep.seconds, floor_s, (long long)weight_elems, load_cpu, save_cpu, copy_cpu(wpath));
  if (n_skipped) printf("skipped%s\n", skipped);

  /* per pass name: summed time of its runs */
  pass_total *tot = calloc((size_t)rep.n_records + 1, sizeof *tot);
  int n_tot = 0;
  for (int32_t i = 0; tot && i < rep.n_records; i++) {
    int j = 0;
    while (j < n_tot && strcmp(tot[j].name, rep.records[i].pass) != 0) j++;
    if (j == n_tot) tot[n_tot++].name = rep.records[i].pass;
    tot[j].runs++;
    tot[j].seconds += rep.records[i].seconds;
    tot[j].changes += rep.records[i].changes;
    if (clog.n == rep.n_records) tot[j].cpu += clog.cpu[i];
  }
  if (tot) qsort(tot, (size_t)n_tot, sizeof *tot, cmp_total);
  for (int i = 0; tot && i < n_tot && i < n_show; i++)
    printf("pass %s %d %.6f %lld %.6f\n", tot[i].name, tot[i].runs, tot[i].seconds, (long long)tot[i].changes,
           tot[i].cpu);

  fprintf(stderr,
          "%s: %lld -> %lld ops; load %.3f s, pipeline %.3f s (%.0f ops/s, %d pass runs, %d passes skipped), "
          "save %.3f s; peak RSS %.1f MB (load %.1f, pipeline %.1f); out %.1f MB (weight.bin %.1f MB); "
          "reading the input weights once: %.3f s (bits seen %08x)\n",
          label, (long long)rep.ops_before, (long long)rep.ops_after, load_s, pipe_s,
          pipe_s > 0 ? (double)rep.ops_before / pipe_s : 0.0, (int)rep.n_records, n_skipped, save_s,
          (double)rss_peak / 1024.0, (double)rss_load / 1024.0, (double)rss_pipe / 1024.0, (double)out_bytes / 1e6,
          (double)out_w / 1e6, floor_s, sink);
  free(tot);
  free(clog.cpu);
  free(skipped);
  mil_pipeline_report_free(&rep);
  mil_pipeline_free(pl);
  mil_model_free(m);
  mil_diag_clear(&d);
  return 0;
}
