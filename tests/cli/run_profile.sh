#!/bin/bash
# `mil run --runs N --profile`: the run times and the per-op profile go to
# stderr, the outputs are those of one run; and the memory plan frees a
# large value only after the last reader of every view of it (a reshape
# view read after the value's own last reader still sees its bytes: the
# values are checked by hand, fill 3 -> relu 3 -> +1 = 4 and view * 2 = 6),
# and the profile reports the plan's peak of live activations (3 MiB).
#   bash run_profile.sh MIL
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-profile.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# %a is 1 MiB (its own mapping once freed); %b views it; %c is a's last
# direct reader, %d reads the view afterwards
cat >"$tmp/alias.mil" <<'MIL'
main[CoreML7](%x: (1, fp32)(Tensor)) {
  block0() {
    %s: (2, int32)*(Tensor) = const(val=[512, 512], name="s")
    %s2: (1, int32)*(Tensor) = const(val=[262144], name="s2")
    %f: (512, 512, fp32)(Tensor) = fill(shape=%s, value=3.0, name="f")
    %a: (512, 512, fp32)(Tensor) = relu(x=%f, name="a")
    %b: (262144, fp32)(Tensor) = reshape(x=%a, shape=%s2, name="b")
    %c: (512, 512, fp32)(Tensor) = add(x=%a, y=1.0, name="c")
    %e: (512, 512, fp32)(Tensor) = sub(x=%c, y=1.0, name="e")
    %d: (262144, fp32)(Tensor) = mul(x=%b, y=2.0, name="d")
  } -> (%e, %d)
}
MIL
"$MIL" run "$tmp/alias.mil" --random-inputs --no-write --runs 3 --profile >"$tmp/out" 2>"$tmp/err" ||
  fail "mil run --runs 3 --profile: exit $? $(cat "$tmp/err")"
grep -q '^e: (512, 512) fp32  min 3  max 3  mean 3$' "$tmp/out" || fail "output e: $(cat "$tmp/out")"
grep -q '^d: (262144) fp32  min 6  max 6  mean 6$' "$tmp/out" || fail "output d: $(cat "$tmp/out")"
grep -q '^runs: 3, first [0-9.]* ms, best [0-9.]* ms$' "$tmp/err" || fail "no run times: $(cat "$tmp/err")"
grep -q '^profile: 2 run(s), ' "$tmp/err" || fail "profile of the runs after the first: $(cat "$tmp/err")"
grep -q '^op type ' "$tmp/err" || fail "no per-type table"
for t in fill relu reshape add sub mul; do
  grep -Eq "^$t +1 " "$tmp/err" || fail "op type $t not once per run: $(cat "$tmp/err")"
done
grep -q '^slowest 6 op(s):' "$tmp/err" || fail "slowest ops: $(cat "$tmp/err")"
# the peak of live activations, by hand: while e and d are computed, a
# (pinned by its view b until d), c or e, and the new value: 3 x 1 MiB
grep -q '^peak live activations: 3.1 MB ' "$tmp/err" || fail "peak live activations: $(cat "$tmp/err")"
# one run: profile of that run
"$MIL" run "$tmp/alias.mil" --random-inputs --no-write --profile >/dev/null 2>"$tmp/err1" || fail "--profile alone"
grep -q '^profile: 1 run(s), ' "$tmp/err1" || fail "profile of one run: $(cat "$tmp/err1")"
grep -q '^runs:' "$tmp/err1" && fail "run times printed for one run"
# bad --runs
"$MIL" run "$tmp/alias.mil" --runs 0 >/dev/null 2>"$tmp/err2" && fail "--runs 0 accepted"
grep -q -- '--runs is 0' "$tmp/err2" || fail "--runs 0 message: $(cat "$tmp/err2")"
echo "run_profile: ok"
