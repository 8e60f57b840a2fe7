/* Opening the files a model names safely (see fsafe.h), and the table of a
 * save's temporaries that an interrupted process removes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fsafe.h"
#include "mil/model.h"

static const char *kind_of(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "of another kind";
}

char *io_fs_root(const char *dir) { return realpath(dir, NULL); }

static bool under(const char *real, const char *root) {
  size_t n = strlen(root);
  if (n == 1 && root[0] == '/') return true;
  return !strncmp(real, root, n) && (real[n] == 0 || real[n] == '/');
}

mil_status io_fs_check_inside(const char *path, const char *root, const char *what, char **real_out, mil_diag *d) {
  if (real_out) *real_out = NULL;
  char *real = realpath(path, NULL);
  if (!real)
    return mil_diag_error(d, MIL_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
  if (!under(real, root)) {
    mil_status st = mil_diag_error(d, MIL_ERR_IO, "%s: %s resolves to %s, outside %s; refusing to follow it", path,
                                   what, real, root);
    free(real);
    return st;
  }
  if (real_out) *real_out = real;
  else free(real);
  return MIL_OK;
}

int io_fs_open_regular(const char *path, const char *root, const char *what, struct stat *sb, mil_status *st,
                       mil_diag *d) {
  char *real = NULL;
  if (root && (*st = io_fs_check_inside(path, root, what, &real, d)) != MIL_OK) return -1;
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer */
  int fd = open(real ? real : path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (real ? O_NOFOLLOW : 0));
  int e = errno;
  free(real);
  if (fd < 0) {
    *st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(e));
    return -1;
  }
  struct stat s;
  if (fstat(fd, &s) != 0) {
    e = errno;
    close(fd);
    *st = mil_diag_error(d, MIL_ERR_IO, "%s: cannot stat %s: %s", path, what, strerror(e));
    return -1;
  }
  if (!S_ISREG(s.st_mode)) {
    close(fd);
    *st = mil_diag_error(d, MIL_ERR_IO, "%s: %s is %s, not a regular file", path, what, kind_of(s.st_mode));
    return -1;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  if (sb) *sb = s;
  *st = MIL_OK;
  return fd;
}

/* ------------------------------------------------------------------------ */
/* temporaries removed on SIGINT / SIGTERM / SIGHUP                          */
/* ------------------------------------------------------------------------ */

#define TMP_SLOTS 16
#define TMP_PATHS 8

/* A slot is published by storing its path array last and withdrawn by
 * clearing it first, so the handler sees whole entries only. */
static char **volatile g_tmp[TMP_SLOTS];

int io_tmp_register(const char *const *paths, int n) {
  if (n <= 0 || n > TMP_PATHS) return -1;
  char **copy = calloc((size_t)n + 1, sizeof *copy);
  if (!copy) return -1;
  for (int i = 0; i < n; i++)
    if (!(copy[i] = strdup(paths[i]))) {
      for (int k = 0; k < i; k++) free(copy[k]);
      free(copy);
      return -1;
    }
  for (int s = 0; s < TMP_SLOTS; s++) {
    char **expect = NULL;
    if (__atomic_compare_exchange_n(&g_tmp[s], &expect, copy, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return s;
  }
  for (int i = 0; i < n; i++) free(copy[i]);
  free(copy);
  return -1;
}

void io_tmp_unregister(int slot) {
  if (slot < 0 || slot >= TMP_SLOTS) return;
  char **p = __atomic_exchange_n(&g_tmp[slot], NULL, __ATOMIC_SEQ_CST);
  for (int i = 0; p && p[i]; i++) free(p[i]);
  free(p);
}

void mil_save_remove_temporaries(void) {
  int saved = errno;
  for (int s = 0; s < TMP_SLOTS; s++) {
    char **p = __atomic_load_n(&g_tmp[s], __ATOMIC_SEQ_CST);
    for (int i = 0; p && p[i]; i++)
      if (unlink(p[i]) != 0 && errno == EISDIR) rmdir(p[i]);
  }
  errno = saved;
}

static void on_signal(int sig) {
  mil_save_remove_temporaries();
  signal(sig, SIG_DFL);
  raise(sig);
}

void mil_save_cleanup_on_signals(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction old;
    if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue; /* keep an ignored signal ignored */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}
