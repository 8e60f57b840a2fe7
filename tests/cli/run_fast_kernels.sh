#!/bin/bash
# The interpreter's sigmoid_hard, reduce_mean and reduce_sum kernels on
# values worked out by hand, in fp32 and fp16 (the kernels take the
# trailing-axes reductions; a reduction over a leading axis goes to value
# inference, with the same answer):
#   sigmoid_hard(2, alpha=0.25, beta=0.25) = 0.75; mean of 3s = 3;
#   sum of eight 0.5s = 4; sum over the leading axis of four 0.5s = 2.
#   bash run_fast_kernels.sh MIL
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-fastk.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
for dt in fp32 fp16; do
  cat >"$tmp/k_$dt.mil" <<MIL
main[CoreML7](%x: (1, fp32)(Tensor)) {
  block0() {
    %s: (4, int32)*(Tensor) = const(val=[1, 16, 64, 64], name="s")
    %s2: (2, int32)*(Tensor) = const(val=[4, 8], name="s2")
    %two: ($dt)*(Scalar) = const(val=2.0, name="two")
    %three: ($dt)*(Scalar) = const(val=3.0, name="three")
    %half: ($dt)*(Scalar) = const(val=0.5, name="half")
    %f: (1, 16, 64, 64, $dt)(Tensor) = fill(shape=%s, value=%two, name="f")
    %h: (1, 16, 64, 64, $dt)(Tensor) = sigmoid_hard(x=%f, alpha=0.25, beta=0.25, name="h")
    %g: (1, 16, 64, 64, $dt)(Tensor) = fill(shape=%s, value=%three, name="g")
    %m: (1, 16, 1, 1, $dt)(Tensor) = reduce_mean(x=%g, axes=[-2, -1], keep_dims=True, name="m")
    %q: (4, 8, $dt)(Tensor) = fill(shape=%s2, value=%half, name="q")
    %u: (4, $dt)(Tensor) = reduce_sum(x=%q, axes=[1], keep_dims=False, name="u")
    %v: (8, $dt)(Tensor) = reduce_sum(x=%q, axes=[0], keep_dims=False, name="v")
  } -> (%h, %m, %u, %v)
}
MIL
  "$MIL" run "$tmp/k_$dt.mil" --random-inputs --no-write >"$tmp/out_$dt" 2>"$tmp/err_$dt" ||
    fail "$dt: exit $? $(cat "$tmp/err_$dt")"
  grep -q "^h: (1, 16, 64, 64) $dt  min 0.75  max 0.75  mean 0.75$" "$tmp/out_$dt" || fail "$dt h: $(cat "$tmp/out_$dt")"
  grep -q "^m: (1, 16, 1, 1) $dt  min 3  max 3  mean 3$" "$tmp/out_$dt" || fail "$dt m: $(cat "$tmp/out_$dt")"
  grep -q "^u: (4) $dt  min 4  max 4  mean 4$" "$tmp/out_$dt" || fail "$dt u: $(cat "$tmp/out_$dt")"
  grep -q "^v: (8) $dt  min 2  max 2  mean 2$" "$tmp/out_$dt" || fail "$dt v: $(cat "$tmp/out_$dt")"
done
echo "run_fast_kernels: ok"
