#!/bin/bash
# `mil run --threads N` (and MIL_NUM_THREADS): the count is checked (1 to
# 1024, else exit 2 naming the option), and runs on 1 and 2 threads write
# the same outputs, byte for byte, for elementwise ops large enough to be
# split across threads (sigmoid and exp of 512 x 512 values, checked against
# values computed by hand at 0: sigmoid 0.5, exp 1).
#   bash run_threads.sh MIL
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-threads.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
cat >"$tmp/m.mil" <<'MIL'
main[CoreML7](%x: (512, 512, fp32)(Tensor)) {
  block0() {
    %s: (512, 512, fp32)(Tensor) = sigmoid(x=%x, name="s")
    %e: (512, 512, fp32)(Tensor) = exp(x=%x, name="e")
    %z: (512, 512, fp32)(Tensor) = mul(x=%x, y=0.0, name="z")
    %sz: (512, 512, fp32)(Tensor) = sigmoid(x=%z, name="sz")
    %ez: (512, 512, fp32)(Tensor) = exp(x=%z, name="ez")
  } -> (%s, %e, %sz, %ez)
}
MIL
for t in 1 2; do
  "$MIL" run "$tmp/m.mil" --random-inputs --seed 3 --threads $t --output-dir "$tmp/o$t" >"$tmp/out$t" 2>"$tmp/err$t" ||
    fail "mil run --threads $t: exit $? $(cat "$tmp/err$t")"
done
grep -q '^sz: (512, 512) fp32  min 0.5  max 0.5  mean 0.5$' "$tmp/out1" || fail "sigmoid(0): $(cat "$tmp/out1")"
grep -q '^ez: (512, 512) fp32  min 1  max 1  mean 1$' "$tmp/out1" || fail "exp(0): $(cat "$tmp/out1")"
for f in s e sz ez; do
  cmp -s "$tmp/o1/$f.npy" "$tmp/o2/$f.npy" || fail "output $f differs between 1 and 2 threads"
done
MIL_NUM_THREADS=2 "$MIL" run "$tmp/m.mil" --random-inputs --seed 3 --output-dir "$tmp/o3" >/dev/null 2>&1 ||
  fail "MIL_NUM_THREADS=2"
cmp -s "$tmp/o1/s.npy" "$tmp/o3/s.npy" || fail "MIL_NUM_THREADS=2 changed the sigmoid"
for bad in 0 1025 -1 two; do
  "$MIL" run "$tmp/m.mil" --random-inputs --no-write --threads "$bad" >/dev/null 2>"$tmp/errb"
  rc=$?
  [ $rc -eq 2 ] || fail "--threads $bad: exit $rc, expected 2"
  grep -q -- '--threads' "$tmp/errb" || fail "--threads $bad message: $(cat "$tmp/errb")"
done
echo "run_threads: ok"
