/* The memory plan of an interpreter's large blocks (src/interp/bufplan.c):
 * a run that allocates and frees in the recorded order takes every block
 * from the arena, blocks alive at the same time never overlap (random
 * traces, each block filled with its own pattern and checked when it is
 * freed), a run that departs from the plan gets the rest of its blocks
 * from the system and becomes the next plan; and an interpreter running a
 * program with large activations gives the same outputs on every run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "interp/interp_internal.h"
#include "interp_fixture.h"
#include "mil/interp.h"

typedef struct sys_count {
  int gets, puts;
} sys_count;

static void *count_get(void *ud, size_t n) {
  ((sys_count *)ud)->gets++;
  return malloc(n);
}

static void count_put(void *ud, void *p, size_t n) {
  (void)n;
  ((sys_count *)ud)->puts++;
  free(p);
}

static interp_bufplan *new_plan(sys_count *c) {
  interp_bufplan_sys sys = {count_get, count_put, c};
  interp_bufplan *pl = interp_bufplan_new(&sys);
  assert_non_null(pl);
  return pl;
}

/* A (100 KB) and B (200 KB), A freed, C (100 KB), B and C freed. */
static void abc(interp_bufplan *pl, void **a, void **b, void **c) {
  interp_bufplan_begin(pl);
  *a = interp_bufplan_alloc(pl, 100000);
  *b = interp_bufplan_alloc(pl, 200000);
  assert_true(*a && *b);
  memset(*a, 1, 100000), memset(*b, 2, 200000);
  assert_true(interp_bufplan_release(pl, *a));
  *c = interp_bufplan_alloc(pl, 100000);
  assert_non_null(*c);
  memset(*c, 3, 100000);
  assert_int_equal(((unsigned char *)*b)[199999], 2);
  assert_true(interp_bufplan_release(pl, *b));
  assert_true(interp_bufplan_release(pl, *c));
  interp_bufplan_end(pl);
}

static void test_followed_from_arena(void **state) {
  (void)state;
  sys_count n = {0, 0};
  interp_bufplan *pl = new_plan(&n);
  void *a, *b, *c;
  assert_false(interp_bufplan_ready(pl));
  abc(pl, &a, &b, &c);
  assert_int_equal(n.gets, 3);
  assert_int_equal(n.puts, 3);
  assert_true(interp_bufplan_ready(pl));
  for (int run = 0; run < 3; run++) {
    abc(pl, &a, &b, &c);
    assert_int_equal(n.gets, 3); /* nothing more from the system */
    assert_ptr_equal(a, c);      /* C takes the place A left */
    char *pa = a, *pb = b;
    assert_true(pa + 100000 <= pb || pb + 200000 <= pa); /* A and B were alive together */
  }
  int dummy = 0;
  assert_false(interp_bufplan_release(pl, &dummy)); /* not one of its blocks */
  interp_bufplan_free(pl);
}

static void test_departure_becomes_next_plan(void **state) {
  (void)state;
  sys_count n = {0, 0};
  interp_bufplan *pl = new_plan(&n);
  void *a, *b, *c;
  abc(pl, &a, &b, &c);
  /* another run: A as planned, then a block of another size */
  interp_bufplan_begin(pl);
  void *a2 = interp_bufplan_alloc(pl, 100000), *d = interp_bufplan_alloc(pl, 300000);
  assert_true(a2 && d);
  assert_int_equal(n.gets, 4); /* d from the system */
  memset(d, 4, 300000);
  memset(a2, 5, 100000);
  void *e = interp_bufplan_alloc(pl, 100000); /* after the departure: the system's too */
  assert_int_equal(n.gets, 5);
  assert_true(interp_bufplan_release(pl, a2));
  assert_int_equal(((unsigned char *)d)[299999], 4);
  assert_true(interp_bufplan_release(pl, d));
  assert_true(interp_bufplan_release(pl, e));
  interp_bufplan_end(pl);
  assert_int_equal(n.puts, 5);
  /* that order is the plan now */
  interp_bufplan_begin(pl);
  a2 = interp_bufplan_alloc(pl, 100000), d = interp_bufplan_alloc(pl, 300000), e = interp_bufplan_alloc(pl, 100000);
  assert_true(interp_bufplan_release(pl, a2) && interp_bufplan_release(pl, d) && interp_bufplan_release(pl, e));
  interp_bufplan_end(pl);
  assert_int_equal(n.gets, 5);
  interp_bufplan_free(pl);
}

/* Random traces: at most 12 blocks alive, sizes 1..40000 bytes; each
 * block holds its own byte pattern, checked at its free. */
typedef struct live_blk {
  unsigned char *p;
  size_t n;
  unsigned char tag;
} live_blk;

static unsigned rnd(unsigned *s) {
  *s = *s * 1103515245u + 12345u;
  return *s >> 8;
}

static void random_run(interp_bufplan *pl, unsigned seed) {
  live_blk live[12];
  int nlive = 0;
  unsigned char tag = 0;
  interp_bufplan_begin(pl);
  for (int step = 0; step < 300 || nlive; step++) {
    bool alloc = step < 300 && nlive < 12 && (nlive == 0 || rnd(&seed) % 3 != 0);
    if (alloc) {
      size_t n = 1 + rnd(&seed) % 40000;
      unsigned char *p = interp_bufplan_alloc(pl, n);
      assert_non_null(p);
      memset(p, ++tag, n);
      live[nlive++] = (live_blk){p, n, tag};
    } else {
      int k = (int)(rnd(&seed) % (unsigned)nlive);
      for (size_t i = 0; i < live[k].n; i++)
        if (live[k].p[i] != live[k].tag) fail_msg("block of %zu bytes overwritten at %zu", live[k].n, i);
      assert_true(interp_bufplan_release(pl, live[k].p));
      live[k] = live[--nlive];
    }
  }
  interp_bufplan_end(pl);
}

static void test_random_traces_never_overlap(void **state) {
  (void)state;
  for (unsigned seed = 1; seed <= 20; seed++) {
    sys_count n = {0, 0};
    interp_bufplan *pl = new_plan(&n);
    random_run(pl, seed);
    int first = n.gets;
    random_run(pl, seed); /* the same trace: the arena only */
    assert_int_equal(n.gets, first);
    random_run(pl, seed + 1000); /* another trace: departs, then is the plan */
    int third = n.gets;
    random_run(pl, seed + 1000);
    assert_int_equal(n.gets, third);
    assert_int_equal(n.gets, n.puts);
    interp_bufplan_free(pl);
  }
}

/* A chain of ops over 1 MB activations, run five times by one
 * interpreter (the second run on follows the plan), with and without
 * MIL_INTERP_NO_PLAN: the same outputs every time. */
static void test_interpreter_runs_agree(void **state) {
  (void)state;
  const char *text = "main[CoreML6](%x: (1, 4, 256, 256, fp32)(Tensor)) {\n  block0() {\n"
                     "    %a: (1, 4, 256, 256, fp32)(Tensor) = relu(x=%x, name=\"a\")\n"
                     "    %b: (1, 4, 256, 256, fp32)(Tensor) = mul(x=%a, y=%x, name=\"b\")\n"
                     "    %c: (1, 8, 256, 256, fp32)(Tensor) = concat(values=(%a, %b), axis=1, interleave=False, name=\"c\")\n"
                     "    %d: (1, 8, 256, 256, fp32)(Tensor) = sigmoid(x=%c, name=\"d\")\n"
                     "    %e: (1, 8, 256, 256, fp32)(Tensor) = add(x=%d, y=%c, name=\"e\")\n"
                     "  } -> (%e)\n}\n";
  int64_t shape[4] = {1, 4, 256, 256}, nx = 4 * 256 * 256;
  float *x = malloc((size_t)nx * sizeof *x), *first = malloc((size_t)nx * 2 * sizeof *x);
  assert_true(x && first);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)((i * 37) % 101 - 50) / 16.0f;
  for (int mode = 0; mode < 2; mode++) {
    if (mode) setenv("MIL_INTERP_NO_PLAN", "1", 1);
    mil_program *p = ifix_parse(text, "plan.mil");
    mil_diag d;
    mil_diag_init(&d);
    mil_interp *ip = NULL;
    assert_int_equal(mil_interp_new(p, NULL, &ip, &d), MIL_OK);
    for (int run = 0; run < 5; run++) {
      mil_tensor t = {MIL_DT_FP32, 4, shape, x, (size_t)nx * sizeof(float), nx};
      assert_int_equal(mil_interp_set_input(ip, "x", &t, &d), MIL_OK);
      if (mil_interp_run(ip, NULL, &d) != MIL_OK) fail_msg("%s", mil_diag_first_error(&d));
      const mil_tensor *o = mil_interp_output_at(ip, 0);
      assert_int_equal(o->nbytes, (size_t)nx * 2 * sizeof(float));
      if (mode == 0 && run == 0) memcpy(first, o->data, o->nbytes);
      else assert_memory_equal(o->data, first, o->nbytes);
    }
    mil_interp_free(ip);
    mil_diag_clear(&d);
    mil_program_free(p);
  }
  unsetenv("MIL_INTERP_NO_PLAN");
  free(x), free(first);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_followed_from_arena),
      cmocka_unit_test(test_departure_becomes_next_plan),
      cmocka_unit_test(test_random_traces_never_overlap),
      cmocka_unit_test(test_interpreter_runs_agree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
