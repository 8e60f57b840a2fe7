/* Benchmark: weight.bin writing and memory-mapped reading.
 *
 *   bench_weights [--size-mb N] [--chunk-mb M] [--dir DIR] [--no-dedup] [--keep]
 *
 * Writes N MiB (default 2048) of fp16 weights as blobs of M MiB (default
 * 64) with mil_blob_writer into a temporary directory, copies the result
 * with /bin/cp for comparison, then, in a fresh process, opens the file and
 * takes a zero-copy view of every blob. Reports writer and cp throughput,
 * the open+views time (which should not grow with the file: nothing is
 * read), and the peak RSS (getrusage ru_maxrss) before any weight byte is
 * touched and after touching all of them. --no-dedup skips the content
 * hashing that deduplication costs. Both writes go to the page cache;
 * neither syncs. Not run by the test suite.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mil/blob.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long maxrss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static void die_diag(const char *what, mil_diag *d) {
  fprintf(stderr, "bench_weights: %s: %s\n", what, mil_diag_first_error(d) ? mil_diag_first_error(d) : "failed");
  exit(1);
}

/* Child mode: open the file, view every blob, touch the bytes; print one
 * line "open_ms views_ms touch_ms blobs rss0 rss_views rss_touch checksum". */
static int child_read(const char *path) {
  long rss0 = maxrss_kb();
  mil_diag d = {0};
  double t0 = now_s();
  mil_blob_file *f = NULL;
  if (mil_blob_file_open(path, &f, &d) != MIL_OK) die_diag("open", &d);
  double t1 = now_s();
  size_t cap = 1024, n = 0;
  const void **views = malloc(cap * sizeof *views);
  size_t *sizes = malloc(cap * sizeof *sizes);
  if (!views || !sizes) return 1;
  mil_blob_iter it;
  mil_blob_iter_init(f, &it);
  for (;;) {
    mil_blob_info info;
    bool done;
    if (mil_blob_iter_next(f, &it, &info, &done, &d) != MIL_OK) die_diag("enumerate", &d);
    if (done) break;
    if (n == cap) {
      cap *= 2;
      views = realloc(views, cap * sizeof *views);
      sizes = realloc(sizes, cap * sizeof *sizes);
      if (!views || !sizes) return 1;
    }
    if (mil_blob_file_read(f, info.meta_offset, info.dtype, info.numel, &views[n], &sizes[n], &d) != MIL_OK)
      die_diag("read", &d);
    n++;
  }
  double t2 = now_s();
  long rss1 = maxrss_kb();
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t *p = views[i];
    size_t k = sizes[i] / 8;
    for (size_t j = 0; j < k; j += 512) sum += p[j]; /* one word per 4 KiB page */
  }
  double t3 = now_s();
  long rss2 = maxrss_kb();
  printf("%.3f %.3f %.3f %zu %ld %ld %ld %llu\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, n, rss0, rss1,
         rss2, (unsigned long long)sum);
  mil_blob_file_close(f);
  free(views);
  free(sizes);
  return 0;
}

static double run_cp(const char *src, const char *dst) {
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    execl("/bin/cp", "cp", src, dst, (char *)NULL);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  double t = now_s() - t0;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}

/* Runs this program again in --child mode (a fresh address space, so its
 * ru_maxrss says what opening costs) and reads its result line. */
static int run_child(const char *self, const char *path, char *line, size_t cap) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(self, self, "--child", path, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  FILE *in = fdopen(fds[0], "r");
  int ok = in && fgets(line, (int)cap, in) != NULL;
  if (in) fclose(in);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_weights [--size-mb N] [--chunk-mb M] [--dir DIR] [--no-dedup] [--keep]\n");
  exit(2);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--child") == 0) return child_read(argv[2]);
  uint64_t size_mb = 2048, chunk_mb = 64;
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  int keep = 0;
  unsigned wflags = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--size-mb") == 0 && i + 1 < argc) size_mb = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--chunk-mb") == 0 && i + 1 < argc) chunk_mb = strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) base = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0) keep = 1;
    else if (strcmp(argv[i], "--no-dedup") == 0) wflags |= MIL_BLOB_WRITE_NO_DEDUP;
    else usage();
  }
  if (size_mb == 0 || chunk_mb == 0) usage();
  if (chunk_mb > size_mb) chunk_mb = size_mb;

  char dir[512], path[600], copy[600];
  snprintf(dir, sizeof dir, "%s/bench_weights_XXXXXX", base);
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/weight.bin", dir);
  snprintf(copy, sizeof copy, "%s/weight_copy.bin", dir);

  /* one chunk of random-ish fp16 (finite values), restamped per blob so no
   * two blobs are equal and deduplication finds nothing */
  size_t chunk = (size_t)(chunk_mb << 20);
  uint16_t *buf = malloc(chunk);
  if (!buf) {
    fprintf(stderr, "bench_weights: out of memory for a %llu MiB chunk\n", (unsigned long long)chunk_mb);
    return 1;
  }
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (size_t i = 0; i < chunk / 2; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    buf[i] = (uint16_t)((x & 0x83FF) | ((x >> 20) % 30) << 10); /* exponent 0..29: finite */
  }

  uint64_t total = size_mb << 20, written = 0;
  mil_diag d = {0};
  double t0 = now_s();
  mil_blob_writer *w = NULL;
  if (mil_blob_writer_open(path, wflags, &w, &d) != MIL_OK) die_diag("writer open", &d);
  for (uint64_t k = 0; written < total; k++) {
    size_t n = total - written < chunk ? (size_t)(total - written) : chunk;
    n &= ~(size_t)1;
    if (n == 0) break;
    memcpy(buf, &k, sizeof k < n ? sizeof k : n);
    if (mil_blob_writer_add(w, MIL_DT_FP16, buf, n, (int64_t)(n / 2), NULL, &d) != MIL_OK) die_diag("writer add", &d);
    written += n;
  }
  uint32_t blobs = mil_blob_writer_count(w);
  if (mil_blob_writer_close(w, &d) != MIL_OK) die_diag("writer close", &d);
  double t_write = now_s() - t0;
  free(buf);
  struct stat st;
  stat(path, &st);
  double mb = (double)st.st_size / (1024.0 * 1024.0);

  double t_cp = run_cp(path, copy);
  unlink(copy);

  char line[512];
  double open_ms = 0, views_ms = 0, touch_ms = 0;
  size_t nviews = 0;
  long rss0 = 0, rss1 = 0, rss2 = 0;
  unsigned long long sum = 0;
  if (run_child("/proc/self/exe", path, line, sizeof line) != 0 ||
      sscanf(line, "%lf %lf %lf %zu %ld %ld %ld %llu", &open_ms, &views_ms, &touch_ms, &nviews, &rss0, &rss1, &rss2,
             &sum) != 8) {
    fprintf(stderr, "bench_weights: the reading child failed\n");
    return 1;
  }

  printf("weight file: %s (%.1f MiB, %u fp16 blobs of %llu MiB)\n", path, mb, blobs, (unsigned long long)chunk_mb);
  printf("%-34s %12s %12s\n", "measurement", "value", "unit");
  printf("%-34s %12.3f %12s\n", wflags ? "mil_blob_writer, no dedup" : "mil_blob_writer (open..close)", t_write,
         "s");
  printf("%-34s %12.1f %12s\n", "  throughput", mb / t_write, "MiB/s");
  if (t_cp > 0) {
    printf("%-34s %12.3f %12s\n", "/bin/cp of the same file", t_cp, "s");
    printf("%-34s %12.1f %12s\n", "  throughput", mb / t_cp, "MiB/s");
    printf("%-34s %12.2f %12s\n", "writer time / cp time", t_write / t_cp, "x");
  } else {
    printf("%-34s %12s\n", "/bin/cp", "failed");
  }
  printf("%-34s %12.3f %12s\n", "open (mmap + header check)", open_ms, "ms");
  printf("%-34s %12.3f %12s\n", "enumerate + view all blobs", views_ms, "ms");
  printf("%-34s %12zu %12s\n", "  views", nviews, "blobs");
  printf("%-34s %12ld %12s\n", "peak RSS at start (reader)", rss0, "KiB");
  printf("%-34s %12ld %12s\n", "peak RSS after views, untouched", rss1, "KiB");
  printf("%-34s %12.3f %12s\n", "touch one word per page", touch_ms, "ms");
  printf("%-34s %12ld %12s\n", "peak RSS after touching", rss2, "KiB");
  printf("(checksum %llx)\n", sum);

  if (!keep) {
    unlink(path);
    rmdir(dir);
  }
  mil_diag_clear(&d);
  return 0;
}
