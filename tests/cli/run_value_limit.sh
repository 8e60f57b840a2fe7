#!/bin/bash
# `mil run` refuses to materialize a value above its per-value limit
# (--max-value-bytes, default half of the physical memory): exit 1, the
# message names the op, the output's shape and size and the limit, nothing
# is written, and no memory is touched for it.
#   bash run_value_limit.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-vlimit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# an output that is a fill of 2^40 floats (4 TiB)
cat >"$tmp/fill.mil" <<'MIL'
main[CoreML7](%x: (1, fp32)(Tensor)) {
  block0() {
    %s: (2, int32)*(Tensor) = const(val=[1048576, 1048576], name="s")
    %y: (1048576, 1048576, fp32)(Tensor) = fill(shape=%s, value=1.0, name="y")
  } -> (%y)
}
MIL
# 1024 floats (4096 bytes)
cat >"$tmp/tile.mil" <<'MIL'
main[CoreML7](%x: (2, fp32)(Tensor)) {
  block0() {
    %r: (1, int32)*(Tensor) = const(val=[512], name="r")
    %y: (1024, fp32)(Tensor) = tile(x=%x, reps=%r, name="y")
  } -> (%y)
}
MIL
mkdir "$tmp/out"
# 4 GiB of address space, a thousandth of the value: the refusal must come
# before any allocation of it (not under AddressSanitizer, which reserves
# terabytes of shadow memory)
(
  grep -qa __asan_init "$MIL" || ulimit -v 4194304
  exec timeout 60 "$MIL" run "$tmp/fill.mil" --random-inputs --output-dir "$tmp/out"
) >"$tmp/stdout" 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "run on a fill of 2^40 floats exited $rc, expected 1: $(cat "$tmp/err")"
grep -q "fill.mil:4:5: function 'main': op 'y' (fill): output 0 %y (1048576, 1048576, fp32) would take 4398046511104 bytes, more than the limit of [0-9]* bytes on one value" "$tmp/err" ||
  fail "message: $(cat "$tmp/err")"
[ -z "$(ls "$tmp/out")" ] || fail "run wrote $(ls "$tmp/out") despite the error"

"$MIL" run "$tmp/tile.mil" --random-inputs --output-dir "$tmp/out" --max-value-bytes 4095 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "--max-value-bytes 4095 on a 4096-byte output exited $rc, expected 1"
grep -q "op 'y' (tile): output 0 %y (1024,fp32) would take 4096 bytes, more than the limit of 4095 bytes" "$tmp/err" ||
  fail "message: $(cat "$tmp/err")"
[ -z "$(ls "$tmp/out")" ] || fail "run wrote $(ls "$tmp/out") despite the error"
"$MIL" run "$tmp/tile.mil" --random-inputs --output-dir "$tmp/out" --max-value-bytes 4096 >/dev/null 2>"$tmp/err" ||
  fail "--max-value-bytes 4096 on a 4096-byte output: $(cat "$tmp/err")"
[ -f "$tmp/out/y.npy" ] || fail "run with --max-value-bytes 4096 wrote no y.npy"
for bad in 0 -1 x; do
  "$MIL" run "$tmp/tile.mil" --random-inputs --no-write --max-value-bytes "$bad" >/dev/null 2>"$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "--max-value-bytes $bad exited $rc, expected 2 (usage)"
done
echo "ok"
