#!/bin/bash
# Every opset a PyMIL program can carry (CoreML3..CoreML9) in every command,
# and `--target` of convert / opt (ct.convert(minimum_deployment_target=)).
#   bash opsets.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-opsets.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# coremltools' mb.program prints main[CoreML3] by default
cat >"$tmp/c3.mil" <<'MIL'
main[CoreML3](%x: (2, 3, fp32)(Tensor)) {
  block0() {
    %k: (fp32)*(Scalar) = const(val=2.0, name="k")
    %y: (2, 3, fp32)(Tensor) = mul(x=%x, y=%k, name="y")
    %z: (2, 3, fp32)(Tensor) = relu(x=%y, name="z")
  } -> (%z)
}
MIL
sed 's/CoreML3/CoreML4/' "$tmp/c3.mil" >"$tmp/c4.mil"

for f in c3 c4; do
  "$MIL" validate "$tmp/$f.mil" >"$tmp/out" 2>&1 || fail "validate $f: $(cat "$tmp/out")"
  grep -q "valid (1 function, 3 ops)" "$tmp/out" || fail "validate $f output: $(cat "$tmp/out")"
  "$MIL" print "$tmp/$f.mil" >"$tmp/out" 2>&1 || fail "print $f: $(cat "$tmp/out")"
  grep -q "mul(x=%x, y=2.0, name=\"y\")" "$tmp/out" || fail "print $f output: $(cat "$tmp/out")"
  "$MIL" print --complete "$tmp/$f.mil" >"$tmp/$f.back.mil" 2>"$tmp/err" || fail "print --complete $f: $(cat "$tmp/err")"
  "$MIL" diff "$tmp/$f.mil" "$tmp/$f.back.mil" >"$tmp/out" 2>&1 || fail "diff $f round trip: $(cat "$tmp/out")"
  "$MIL" info "$tmp/$f.mil" >"$tmp/out" 2>&1 || fail "info $f: $(cat "$tmp/out")"
  "$MIL" run "$tmp/$f.mil" --random-inputs --no-write >"$tmp/out" 2>&1 || fail "run $f: $(cat "$tmp/out")"
  grep -q "^z: (2, 3) fp32" "$tmp/out" || fail "run $f output: $(cat "$tmp/out")"
  "$MIL" convert "$tmp/$f.mil" "$tmp/$f.out.mil" 2>"$tmp/err" || fail "convert $f to .mil: $(cat "$tmp/err")"
  "$MIL" diff "$tmp/$f.mil" "$tmp/$f.out.mil" >/dev/null || fail "convert $f to .mil changed the program"
  "$MIL" opt "$tmp/$f.mil" -o "$tmp/$f.opt.mil" --quiet 2>"$tmp/err" || fail "opt $f: $(cat "$tmp/err")"
  grep -q "main\[$(echo $f | sed 's/c/CoreML/')\]" "$tmp/$f.opt.mil" || fail "opt $f must keep the opset"
done
grep -q "specification version: 4 (iOS13)" <("$MIL" info "$tmp/c3.mil") || fail "info c3: spec version"
grep -q "specification version: 5 (iOS14)" <("$MIL" info "$tmp/c4.mil") || fail "info c4: spec version"

# writing an ML Program needs CoreML5: the error says so and names --target
"$MIL" convert "$tmp/c3.mil" "$tmp/c3.mlpackage" 2>"$tmp/err"
[ $? -eq 1 ] || fail "convert of a CoreML3 program to .mlpackage must exit 1"
grep -q "needs opset CoreML5 (iOS15) or later, but function 'main' has CoreML3 (iOS13).*--target" "$tmp/err" ||
  fail "CoreML3 write message: $(cat "$tmp/err")"
[ -e "$tmp/c3.mlpackage" ] && fail "a failed convert must not leave output"
"$MIL" opt "$tmp/c4.mil" -o "$tmp/c4.mlmodel" --quiet 2>"$tmp/err"
[ $? -eq 1 ] || fail "opt of a CoreML4 program to .mlmodel must exit 1"
grep -q "CoreML4 (iOS14)" "$tmp/err" || fail "CoreML4 write message: $(cat "$tmp/err")"
"$MIL" convert --spec-version 6 "$tmp/c3.mil" "$tmp/c3.mlpackage" 2>/dev/null
[ $? -eq 1 ] || fail "--spec-version alone must not write a CoreML3 program"

# --target retargets
"$MIL" convert --target iOS15 "$tmp/c3.mil" "$tmp/c3.mlpackage" 2>"$tmp/err" || fail "convert --target iOS15: $(cat "$tmp/err")"
"$MIL" info "$tmp/c3.mlpackage" >"$tmp/out" || fail "info of the retargeted package"
grep -q "^opset: CoreML5" "$tmp/out" || fail "retargeted opset: $(cat "$tmp/out")"
grep -q "specification version: 6 (iOS15)" "$tmp/out" || fail "retargeted spec version: $(cat "$tmp/out")"
"$MIL" opt "$tmp/c4.mil" --target iOS17 -o "$tmp/c4.mlpackage" --quiet 2>"$tmp/err" || fail "opt --target iOS17: $(cat "$tmp/err")"
grep -q "^opset: CoreML7" <("$MIL" info "$tmp/c4.mlpackage") || fail "opt --target iOS17 opset"
"$MIL" opt "$tmp/c3.mil" --target=iOS18 -o "$tmp/c3.18.mil" --quiet || fail "opt --target=iOS18"
grep -q "main\[CoreML8\]" "$tmp/c3.18.mil" || fail "opt --target=iOS18 must write CoreML8"
for bad in iOS13 iOS14 ios15 CoreML5 ""; do
  "$MIL" convert --target "$bad" "$tmp/c3.mil" "$tmp/x.mlpackage" 2>"$tmp/err"
  [ $? -eq 2 ] || fail "--target '$bad' must be a usage error"
  grep -q "iOS15, iOS16, iOS17, iOS18" "$tmp/err" || fail "--target error must list the choices: $(cat "$tmp/err")"
  "$MIL" opt "$tmp/c3.mil" --target "$bad" -o "$tmp/x.mil" 2>/dev/null
  [ $? -eq 2 ] || fail "opt --target '$bad' must be a usage error"
done

# an op the target lacks: the retarget fails, naming the op and the opset it needs
cat >"$tmp/q7.mil" <<'MIL'
main[CoreML7](%x: (2, 3, fp32)(Tensor)) {
  block0() {
    %s: (fp32)*(Scalar) = const(val=0.5, name="s")
    %dt: (string)*(Scalar) = const(val="int8", name="dt")
    %q: (2, 3, int8)(Tensor) = quantize(input=%x, scale=%s, output_dtype=%dt, name="q")
    %y: (2, 3, fp32)(Tensor) = dequantize(input=%q, scale=%s, name="y")
  } -> (%y)
}
MIL
"$MIL" convert --target iOS16 "$tmp/q7.mil" "$tmp/q.mlpackage" 2>"$tmp/err"
[ $? -eq 1 ] || fail "retargeting quantize to iOS16 must fail"
grep -q "cannot retarget to iOS16 (CoreML6): function 'main': op 'q' (quantize): .*needs opset CoreML7 (iOS17)" "$tmp/err" ||
  fail "retarget message: $(cat "$tmp/err")"
[ -e "$tmp/q.mlpackage" ] && fail "a failed retarget must not leave output"
"$MIL" convert --target iOS18 "$tmp/q7.mil" "$tmp/q.mlpackage" || fail "retargeting quantize up to iOS18"
grep -q "^opset: CoreML8" <("$MIL" info "$tmp/q.mlpackage") || fail "retargeted up: opset"
echo "opsets: ok"
