#!/bin/bash
# bench/RESULTS.md shows paths relative to the repository, never the
# machine's absolute checkout path, and bench/run.sh writes them so.
#   bash bench_paths.sh MIL TESTS_DIR SHARED_DIR
set -u
ROOT=$2/..
fail() {
  echo "FAIL: $*"
  exit 1
}
hits=$(grep -nE '(^|[ `(="'"'"'])/(work|home|root|tmp|usr/src|build)/' "$ROOT/bench/RESULTS.md")
[ -z "$hits" ] || fail "absolute paths in bench/RESULTS.md: $hits"
# bench/run.sh's repo_rel, on its own
fn=$(sed -n '/^repo_rel() {/,/^}/p' "$ROOT/bench/run.sh")
[ -n "$fn" ] || fail "bench/run.sh has no repo_rel"
grep -q 'sh bench/run.sh $(repo_rel "$BUILD")' "$ROOT/bench/run.sh" || fail "run.sh does not print the build directory through repo_rel"
eval "$fn"
ROOT=/srv/checkout/libmil
[ "$(repo_rel /srv/checkout/libmil/build)" = build ] || fail "repo_rel build: $(repo_rel /srv/checkout/libmil/build)"
[ "$(repo_rel /srv/checkout/libmil)" = . ] || fail "repo_rel root"
[ "$(repo_rel /opt/b/build-x)" = "build-x (outside the repository)" ] || fail "repo_rel outside: $(repo_rel /opt/b/build-x)"
echo ok
