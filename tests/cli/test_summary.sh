#!/bin/bash
# `make test` ends with tools/test-summary.sh: "N passed, N failed, N
# skipped" alone on the last line, a line per skipped test saying why, and
# ctest's exit status. Checked on a scratch CTest project with one test of
# each kind (needs cmake and ctest, which ran this test).
#   bash test_summary.sh MIL TESTS_DIR SHARED_DIR
set -u
ROOT=$2/..
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-test-summary.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v cmake >/dev/null && command -v ctest >/dev/null || { echo "skipped: cmake/ctest not on PATH"; exit 77; }
cat >"$tmp/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.13)
project(scratch NONE)
enable_testing()
add_test(NAME good COMMAND sh -c "echo fine")
add_test(NAME good2 COMMAND sh -c "exit 0")
add_test(NAME broken COMMAND sh -c "echo broken; exit 1")
add_test(NAME nocorpus COMMAND sh -c "echo start; echo 'SKIPPED: corpus/models not found (MIL_SHARED_DIR=x)'; exit 77")
add_test(NAME silent COMMAND sh -c "echo one; echo last words; exit 77")
set_tests_properties(nocorpus silent PROPERTIES SKIP_RETURN_CODE 77)
CM
cmake -S "$tmp" -B "$tmp/b" >/dev/null || fail "cmake"
# the Makefile's recipe, as `make test` runs it in the build directory
recipe=$(sed -n '/^test: build/,/^$/p' "$ROOT/Makefile" | grep -c 'tools/test-summary.sh')
[ "$recipe" -eq 1 ] || fail "the Makefile's test target does not end with tools/test-summary.sh"
cd "$tmp/b" || exit 1
{ ctest -j 2; echo $? >ctest-status.txt; } >ctest-output.txt 2>&1
sh "$ROOT/tools/test-summary.sh" "$(cat ctest-status.txt)" ctest-output.txt Testing/Temporary/LastTest.log >summary.txt
rc=$?
[ "$rc" -eq "$(cat ctest-status.txt)" ] && [ "$rc" -ne 0 ] || fail "exit status $rc, ctest's was $(cat ctest-status.txt)"
[ "$(tail -n 1 summary.txt)" = "2 passed, 1 failed, 2 skipped" ] || fail "last line: $(cat summary.txt)"
grep -qx "skipped nocorpus: SKIPPED: corpus/models not found (MIL_SHARED_DIR=x)" summary.txt || fail "reason: $(cat summary.txt)"
grep -qx "skipped silent: last words" summary.txt || fail "reason of a test without 'skip': $(cat summary.txt)"
grep -qx "failed  broken" summary.txt || fail "failed list: $(cat summary.txt)"
# all passing: status 0 kept
{ ctest -R good; echo $? >ctest-status.txt; } >ctest-output.txt 2>&1
sh "$ROOT/tools/test-summary.sh" 0 ctest-output.txt Testing/Temporary/LastTest.log >summary.txt || fail "status 0 not kept"
[ "$(cat summary.txt)" = "2 passed, 0 failed, 0 skipped" ] || fail "all passing: $(cat summary.txt)"
echo ok
