/* Files a model names are opened safely, and saves replace models
 * atomically:
 *  - a FIFO (or any non-regular file) as Manifest.json, model.mlmodel,
 *    weight.bin, a .mil file or a @blob file is an error, never a hang;
 *  - paths a model names may not leave the package / the .mlmodel's
 *    directory / the text file's directory, symlinks included, and errors
 *    never echo bytes of a file that is not a weight file;
 *  - a crash at every step of a save leaves the old model or the new one,
 *    readers running during saves and kills never see a mix;
 *  - a save never overwrites another model's weight file;
 *  - temporaries are removed on SIGTERM and by the next save after a crash.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sys/wait.h>
#include <time.h>

#include "mil/mil.h"
#include "mil/model.h"
#include "unit/model_testutil.h"

/* src/io/model_save.c (tests only): the step of a save at which the
 * process kills itself, and with which signal */
extern int io_save_crash_at, io_save_crash_signal;

static char *g_dir;

static int setup(void **state) {
  (void)state;
  g_dir = mt_tempdir();
  /* a hang fails the test instead of blocking the suite */
  alarm(120);
  return g_dir ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  mt_rm_rf(g_dir);
  free(g_dir);
  return 0;
}

#define N_W 16

/* Model generation v: input x (16,) fp32, const "w<v>" of 16 values v (in
 * the weight file), y = x + w. */
static mil_model *model_v(int v) {
  int64_t s[1] = {N_W};
  float w[N_W];
  for (int i = 0; i < N_W; i++) w[i] = (float)v;
  char name[16];
  snprintf(name, sizeof name, "w%d", v);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_model_from_program(mt_add_const_program(name, 1, s, w), 0, &m, &d), MIL_OK);
  mil_diag_clear(&d);
  return m;
}

static void save_v(int v, const char *path) {
  char *err = mt_save_free(model_v(v), path);
  if (err) fail_msg("save %s: %s", path, err);
}

/* Loads path: the generation it holds (const "w<v>" whose 16 values are
 * all v), -1 when it does not load, -2 when the model and its weights are
 * of different generations. */
static int load_v(const char *path, char *why, size_t nwhy) {
  mil_model *m = NULL;
  mil_diag d = {0};
  if (mil_model_load(path, &m, &d) != MIL_OK) {
    if (why) snprintf(why, nwhy, "%s", mil_diag_first_error(&d) ? mil_diag_first_error(&d) : "?");
    mil_diag_clear(&d);
    return -1;
  }
  mil_diag_clear(&d);
  int gen = -1;
  const mil_block *b = mil_function_body(mil_program_find_function(mil_model_program(m), "main"));
  for (const mil_op *op = b->first; op; op = op->next) {
    if (!mil_op_is_const(op)) continue;
    int v = atoi(op->name + 1);
    const float *w = mil_value_data(op->outputs[0]->val);
    gen = v;
    for (int i = 0; i < N_W; i++)
      if (w[i] != (float)v) gen = -2;
  }
  mil_model_free(m);
  return gen;
}

static int count_entries_with(const char *dir, const char *needle) {
  DIR *dh = opendir(dir);
  int n = 0;
  for (struct dirent *e; dh && (e = readdir(dh));) n += strstr(e->d_name, needle) != NULL;
  if (dh) closedir(dh);
  return n;
}

/* ------------------------------------------------------------------------ */
/* fault: FIFOs                                                               */
/* ------------------------------------------------------------------------ */

static void expect_load_error(const char *path, const char *needle) {
  mil_model *m = NULL;
  mil_diag d = {0};
  mil_status st = mil_model_load(path, &m, &d);
  const char *msg = mil_diag_first_error(&d);
  if (st == MIL_OK || !msg || !strstr(msg, needle))
    fail_msg("%s: status %d, message '%s', expected one containing '%s'", path, st, msg ? msg : "(none)", needle);
  assert_null(m);
  mil_diag_clear(&d);
}

static void replace_with_fifo(const char *path) {
  unlink(path);
  assert_int_equal(mkfifo(path, 0666), 0);
}

static void test_fifos_are_errors(void **state) {
  (void)state;
  char *dir = mt_path(g_dir, "fifo");
  mkdir(dir, 0777);
  static const char *const in_pkg[] = {"Manifest.json", "Data/com.apple.CoreML/model.mlmodel",
                                       "Data/com.apple.CoreML/weights/weight.bin"};
  for (int i = 0; i < 3; i++) {
    char *pkg = mt_path(dir, "p.mlpackage");
    mt_rm_rf(pkg);
    save_v(1, pkg);
    char *f = mt_path(pkg, in_pkg[i]);
    replace_with_fifo(f);
    expect_load_error(pkg, "is a FIFO (named pipe), not a regular file");
    free(f);
    free(pkg);
  }
  /* a bare .mlmodel, its weight file, a .mil file */
  char *mm = mt_path(dir, "m.mlmodel");
  save_v(1, mm);
  char *w = mt_mlmodel_weights(dir, "m");
  assert_non_null(w);
  replace_with_fifo(w);
  expect_load_error(mm, "is a FIFO");
  replace_with_fifo(mm);
  expect_load_error(mm, "is a FIFO");
  char *mil = mt_path(dir, "t.mil");
  replace_with_fifo(mil);
  expect_load_error(mil, "is a FIFO");
  /* a @blob file */
  char *blob = mt_path(dir, "b.bin");
  replace_with_fifo(blob);
  const char *mtext = "main[CoreML7](%x: (16, fp32)(Tensor)) {\n  block0() {\n"
                      "    %w: (16, fp32)*(Tensor) = const(val=@blob(\"b.bin\", 64), name=\"w\")\n"
                      "  } -> (%w)\n}\n";
  mil_parse_options o = {.filename = mil, .base_dir = NULL};
  mil_program *p = NULL;
  mil_diag d = {0};
  assert_int_not_equal(mil_parse_program(mtext, strlen(mtext), &o, &p, &d), MIL_OK);
  assert_non_null(strstr(mil_diag_first_error(&d), "is a FIFO"));
  mil_diag_clear(&d);
  mt_rm_rf(dir);
  free(blob), free(mil), free(w), free(mm), free(dir);
}

/* ------------------------------------------------------------------------ */
/* fault: paths that leave a model                                            */
/* ------------------------------------------------------------------------ */

/* A file outside every model whose bytes 4..7 read as version 809138234,
 * like /etc/passwd ("root:x:0:0..."). */
static char *secret_file(void) {
  char *s = mt_path(g_dir, "secret");
  const char text[] = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n";
  assert_true(mt_write(s, text, sizeof text - 1));
  return s;
}

static void expect_no_echo(const mil_diag *d) {
  for (size_t i = 0; i < d->count; i++)
    if (strstr(d->msgs[i].text, "809138234") || strstr(d->msgs[i].text, "0x303A783A") ||
        strstr(d->msgs[i].text, "root:x"))
      fail_msg("message echoes the file's bytes: %s", d->msgs[i].text);
}

static void test_symlinks_out_of_a_package(void **state) {
  (void)state;
  char *dir = mt_path(g_dir, "links");
  mkdir(dir, 0777);
  char *out = mt_path(g_dir, "outside"); /* outside the package and the .mlmodel's directory */
  mkdir(out, 0777);
  char *pkg = mt_path(dir, "p.mlpackage");
  save_v(1, pkg);
  /* the weights directory moved outside and linked back */
  char *wd = mt_path(pkg, "Data/com.apple.CoreML/weights");
  char *owd = mt_path(out, "weights");
  assert_int_equal(rename(wd, owd), 0);
  assert_int_equal(symlink(owd, wd), 0);
  expect_load_error(pkg, "outside");
  /* weight.bin alone a link to a file outside */
  unlink(wd);
  mkdir(wd, 0777);
  char *wb = mt_path(wd, "weight.bin"), *owb = mt_path(owd, "weight.bin");
  assert_int_equal(symlink(owb, wb), 0);
  expect_load_error(pkg, "outside");
  /* ... and to a non-weight file: the error does not show its bytes */
  char *secret = secret_file();
  unlink(wb);
  assert_int_equal(symlink(secret, wb), 0);
  mil_model *m = NULL;
  mil_diag d = {0};
  assert_int_not_equal(mil_model_load(pkg, &m, &d), MIL_OK);
  expect_no_echo(&d);
  mil_diag_clear(&d);
  /* a link inside the package stays allowed */
  unlink(wb);
  char *real_bin = mt_path(wd, "real.bin");
  assert_int_equal(rename(owb, real_bin), 0);
  free(real_bin);
  assert_int_equal(symlink("real.bin", wb), 0);
  assert_int_equal(load_v(pkg, NULL, 0), 1);
  /* the model file a link to outside */
  char *mf = mt_path(pkg, "Data/com.apple.CoreML/model.mlmodel"), *omf = mt_path(out, "model.mlmodel");
  assert_int_equal(rename(mf, omf), 0);
  assert_int_equal(symlink(omf, mf), 0);
  expect_load_error(pkg, "outside");
  /* a .mlmodel's weights directory a link to outside */
  char *mm = mt_path(dir, "m.mlmodel");
  save_v(2, mm);
  char *mwd = mt_path(dir, "weights"), *omwd = mt_path(out, "mw");
  assert_int_equal(rename(mwd, omwd), 0);
  assert_int_equal(symlink(omwd, mwd), 0);
  expect_load_error(mm, "outside");
  mt_rm_rf(dir);
  mt_rm_rf(out);
  free(mwd), free(omwd), free(mm), free(mf), free(omf), free(secret), free(wb), free(owb), free(wd), free(owd);
  free(pkg), free(out), free(dir);
}

static void parse_blob_expect_error(const char *dir, const char *blob_path) {
  char text[1024];
  snprintf(text, sizeof text,
           "main[CoreML7](%%x: (4, fp32)(Tensor)) {\n  block0() {\n"
           "    %%w: (4, fp32)*(Tensor) = const(val=@blob(\"%s\", 0), name=\"w\")\n"
           "  } -> (%%w)\n}\n", blob_path);
  char *file = mt_path(dir, "t.mil");
  mil_parse_options o = {.filename = file, .base_dir = NULL};
  mil_program *p = NULL;
  mil_diag d = {0};
  mil_status st = mil_parse_program(text, strlen(text), &o, &p, &d);
  if (st == MIL_OK) fail_msg("@blob(\"%s\") was read", blob_path);
  if (!strstr(mil_diag_first_error(&d), "outside")) fail_msg("@blob(\"%s\"): %s", blob_path, mil_diag_first_error(&d));
  expect_no_echo(&d);
  assert_null(p);
  mil_diag_clear(&d);
  free(file);
}

static void test_blob_paths_stay_in_the_text_directory(void **state) {
  (void)state;
  char *dir = mt_path(g_dir, "blobdir");
  mkdir(dir, 0777);
  char *secret = secret_file();
  parse_blob_expect_error(dir, secret);      /* absolute path */
  parse_blob_expect_error(dir, "../secret"); /* relative, leaving */
  char *link = mt_path(dir, "link.bin");
  assert_int_equal(symlink(secret, link), 0);
  parse_blob_expect_error(dir, "link.bin");  /* a link leaving it */
  /* inside the directory, a non-weight file is refused without its bytes */
  char *inside = mt_path(dir, "inside.bin");
  size_t n;
  unsigned char *bytes = mt_read(secret, &n);
  assert_true(mt_write(inside, bytes, n));
  free(bytes);
  char text[512];
  snprintf(text, sizeof text,
           "main[CoreML7](%%x: (4, fp32)(Tensor)) {\n  block0() {\n"
           "    %%w: (4, fp32)*(Tensor) = const(val=@blob(\"inside.bin\", 0), name=\"w\")\n  } -> (%%w)\n}\n");
  char *file = mt_path(dir, "t.mil");
  mil_parse_options o = {.filename = file, .base_dir = NULL};
  mil_program *p = NULL;
  mil_diag d = {0};
  assert_int_equal(mil_parse_program(text, strlen(text), &o, &p, &d), MIL_ERR_FORMAT);
  assert_non_null(strstr(mil_diag_first_error(&d), "not a weight file"));
  expect_no_echo(&d);
  mil_diag_clear(&d);
  free(file), free(inside), free(link), free(secret);
  mt_rm_rf(dir);
  free(dir);
}

/* ------------------------------------------------------------------------ */
/* faults: atomic saves, stale temporaries                                    */
/* ------------------------------------------------------------------------ */

/* Runs a save of generation v to path in a child killed (SIGKILL) at step
 * k of it. Returns true when the child finished the save (k beyond the
 * last step). */
static bool save_in_child(int v, const char *path, int k) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(60);
    mil_model *m = model_v(v);
    io_save_crash_at = k;
    mil_diag d = {0};
    _exit(mil_model_save(m, path, &d) == MIL_OK ? 0 : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    assert_int_equal(WEXITSTATUS(status), 0);
    return true;
  }
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  return false;
}

static void crash_at_every_step(const char *name, const char *stem, int min_steps) {
  char *dir = mt_path(g_dir, "crash");
  mt_rm_rf(dir);
  mkdir(dir, 0777);
  char *path = mt_path(dir, name);
  save_v(1, path);
  int gen = 1, steps = 0;
  for (int k = 1; k < 50; k++) {
    bool done = save_in_child(gen + 1, path, k);
    char why[512] = "";
    int got = load_v(path, why, sizeof why);
    if (got != gen && got != gen + 1)
      fail_msg("%s: after a crash at step %d, the model reads as %d (%s); expected %d or %d", name, k, got, why, gen,
               gen + 1);
    gen = got;
    if (done) {
      steps = k;
      break;
    }
  }
  assert_true(steps > min_steps); /* the crash points cover the save */
  /* the crashes left temporaries; the next save removes them */
  save_v(gen + 1, path);
  assert_int_equal(load_v(path, NULL, 0), gen + 1);
  assert_int_equal(count_entries_with(dir, ".tmp-"), 0);
  if (stem) { /* one weight file: the model's own */
    char *w = mt_mlmodel_weights(dir, stem);
    if (!w) fail_msg("%s: not exactly one weights/%s.<hex>.bin after the saves", name, stem);
    free(w);
  }
  mt_rm_rf(dir);
  free(path), free(dir);
}

static void test_crash_at_every_step_mlmodel(void **state) {
  (void)state;
  crash_at_every_step("out.mlmodel", "out", 4);
}

static void test_crash_at_every_step_mlpackage(void **state) {
  (void)state;
  crash_at_every_step("out.mlpackage", NULL, 4);
}

static void test_crash_at_every_step_mil(void **state) {
  (void)state;
  crash_at_every_step("out.mil", NULL, 1);
}

/* A writer saving generations 1, 2, 3, ... in a loop; killed with SIGKILL
 * at random moments and restarted, while this process reads. No read may
 * see a model with another generation's weights. Bounded in time. */
static void kill_and_read(const char *name) {
  char *dir = mt_path(g_dir, "race");
  mt_rm_rf(dir);
  mkdir(dir, 0777);
  char *path = mt_path(dir, name);
  save_v(1, path);
  srand(12345);
  int reads = 0, failed = 0, kills = 0, base = 1;
  time_t t0 = time(NULL);
  while (time(NULL) - t0 < 3) {
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
      alarm(30);
      for (int v = base + 1;; v++) save_v(v, path);
    }
    struct timespec ts = {0, (long)(rand() % 50) * 1000000L};
    for (int i = 0; i < 4; i++) {
      char why[512] = "";
      int got = load_v(path, why, sizeof why);
      reads++;
      if (got == -2) {
        kill(w, SIGKILL); /* no writer may outlive the test */
        waitpid(w, NULL, 0);
        fail_msg("%s: read %d saw a model with another generation's weights", name, reads);
      }
      if (got == -1) failed++;
    }
    nanosleep(&ts, NULL);
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
    kills++;
    base += 1000;
  }
  /* a reader can fail only when saves outpace its retries; never most */
  assert_true(failed * 2 < reads);
  save_v(base + 1, path);
  assert_int_equal(load_v(path, NULL, 0), base + 1);
  assert_int_equal(count_entries_with(dir, ".tmp-"), 0);
  print_message("%s: %d reads during %d killed writers, %d failed to load\n", name, reads, kills, failed);
  mt_rm_rf(dir);
  free(path), free(dir);
}

static void test_kill_during_saves_mlmodel(void **state) {
  (void)state;
  kill_and_read("k.mlmodel");
}

static void test_kill_during_saves_mlpackage(void **state) {
  (void)state;
  kill_and_read("k.mlpackage");
}

/* SIGTERM / SIGINT during a save: the handler removes the temporaries. */
static void test_signal_removes_temporaries(void **state) {
  (void)state;
  static const int sigs[] = {SIGTERM, SIGINT};
  static const char *const names[] = {"s.mlmodel", "s.mlpackage", "s.mil"};
  for (int n = 0; n < 3; n++)
    for (int s = 0; s < 2; s++)
      for (int k = 1; k <= 3; k++) {
        char *dir = mt_path(g_dir, "sig");
        mt_rm_rf(dir);
        mkdir(dir, 0777);
        char *path = mt_path(dir, names[n]);
        save_v(1, path);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
          alarm(60);
          mil_save_cleanup_on_signals();
          mil_model *m = model_v(2);
          io_save_crash_signal = sigs[s];
          io_save_crash_at = k;
          mil_diag d = {0};
          mil_model_save(m, path, &d);
          _exit(0);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        /* a save with fewer steps finishes */
        assert_true((WIFSIGNALED(status) && WTERMSIG(status) == sigs[s]) || (WIFEXITED(status) && !WEXITSTATUS(status)));
        int got = load_v(path, NULL, 0);
        assert_true(got == 1 || got == 2);
        if (count_entries_with(dir, ".tmp-"))
          fail_msg("%s: signal %d at step %d left a temporary", names[n], sigs[s], k);
        if (n == 0) { /* no stray weight file either */
          char *w = mt_mlmodel_weights(dir, "s");
          if (!w) fail_msg("%s: signal %d at step %d left a stray weight file", names[n], sigs[s], k);
          free(w);
        }
        mt_rm_rf(dir);
        free(path), free(dir);
      }
}

/* ------------------------------------------------------------------------ */
/* fault: another model's weights                                             */
/* ------------------------------------------------------------------------ */

static void test_models_do_not_share_weights(void **state) {
  (void)state;
  char *dir = mt_path(g_dir, "share");
  mkdir(dir, 0777);
  char *a = mt_path(dir, "a.mlmodel"), *b = mt_path(dir, "b.mlmodel");
  save_v(1, a);
  save_v(2, b);
  assert_int_equal(load_v(a, NULL, 0), 1);
  assert_int_equal(load_v(b, NULL, 0), 2);
  save_v(3, a); /* replacing a removes a's old weights only */
  assert_int_equal(load_v(a, NULL, 0), 3);
  assert_int_equal(load_v(b, NULL, 0), 2);
  /* a .mlmodel inside a package would put files next to the package's own */
  char *pkg = mt_path(dir, "A.mlpackage");
  save_v(4, pkg);
  char *wb = mt_path(pkg, "Data/com.apple.CoreML/weights/weight.bin");
  size_t n0, n1;
  unsigned char *before = mt_read(wb, &n0);
  char *inner = mt_path(pkg, "Data/com.apple.CoreML/other.mlmodel");
  mil_model *m = model_v(5);
  mil_diag d = {0};
  assert_int_equal(mil_model_save(m, inner, &d), MIL_ERR_IO);
  assert_non_null(strstr(mil_diag_first_error(&d), "lies inside the package"));
  mil_diag_clear(&d);
  mil_model_free(m);
  assert_false(mt_exists(inner));
  unsigned char *after = mt_read(wb, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  assert_int_equal(load_v(pkg, NULL, 0), 4);
  free(before), free(after), free(inner), free(wb), free(pkg), free(a), free(b);
  mt_rm_rf(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fifos_are_errors),
      cmocka_unit_test(test_symlinks_out_of_a_package),
      cmocka_unit_test(test_blob_paths_stay_in_the_text_directory),
      cmocka_unit_test(test_crash_at_every_step_mlmodel),
      cmocka_unit_test(test_crash_at_every_step_mlpackage),
      cmocka_unit_test(test_crash_at_every_step_mil),
      cmocka_unit_test(test_kill_during_saves_mlmodel),
      cmocka_unit_test(test_kill_during_saves_mlpackage),
      cmocka_unit_test(test_signal_removes_temporaries),
      cmocka_unit_test(test_models_do_not_share_weights),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
