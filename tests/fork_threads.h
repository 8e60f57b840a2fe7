/* Test helper: several threads predicting on one model at once. Workers
 * are an array of n structs of `stride` bytes, each beginning with a
 * mil_interp * (worker 0 gets root, the others forks of it); fn runs on
 * each in its own thread and calls fork_threads_wait() before its runs so
 * that all start together. The forks are freed after the threads end (root
 * stays the caller's). Header-only; include after cmocka.h. */
#ifndef MIL_TESTS_FORK_THREADS_H
#define MIL_TESTS_FORK_THREADS_H

#include <pthread.h>

#include "mil/interp.h"

#define FORK_THREADS_MAX 16

static pthread_barrier_t fork_threads_barrier;

static inline void fork_threads_wait(void) { pthread_barrier_wait(&fork_threads_barrier); }

static inline void fork_threads_run(mil_interp *root, int n, void *workers, size_t stride, void *(*fn)(void *),
                                    mil_diag *d) {
  pthread_t t[FORK_THREADS_MAX];
  assert_true(n > 0 && n <= FORK_THREADS_MAX);
  pthread_barrier_init(&fork_threads_barrier, NULL, (unsigned)n);
  for (int k = 0; k < n; k++) {
    mil_interp **ip = (mil_interp **)((char *)workers + (size_t)k * stride);
    if (k == 0) *ip = root;
    else assert_int_equal(mil_interp_fork(root, ip, d), MIL_OK);
  }
  for (int k = 0; k < n; k++) assert_int_equal(pthread_create(&t[k], NULL, fn, (char *)workers + (size_t)k * stride), 0);
  for (int k = 0; k < n; k++) pthread_join(t[k], NULL);
  pthread_barrier_destroy(&fork_threads_barrier);
  for (int k = 1; k < n; k++) mil_interp_free(*(mil_interp **)((char *)workers + (size_t)k * stride));
}

#endif
