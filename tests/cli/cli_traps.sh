#!/bin/bash
# The CLI's consistency rules: usage errors exit 2 and say what is valid;
# repeated single-valued options are errors; files are created 0666 minus
# the umask; .mil output reads back with the same meaning; scriptable output
# (info --json, print --function, verify --reference); warnings summarized.
#   bash cli_traps.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
SHARED=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-traps.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
# expect_usage DESCRIPTION PATTERN CMD...: CMD must exit 2 with PATTERN on stderr
expect_usage() {
  local what=$1 pat=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, expected 2 ($(cat "$tmp/err"))"
  grep -q -- "$pat" "$tmp/err" || fail "$what: message lacks '$pat': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "$what: printed to stdout: $(head -3 "$tmp/out")"
  return 0
}

cat >"$tmp/a.mil" <<'EOF'
main[CoreML7](%x: (2, 6, fp32)(Tensor)) {
  block0() {
    %w: (2, 6, fp32)*(Tensor) = const(val=[[0.5, 1.0, 1.5, 2.0, 2.5, 3.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]], name="w")
    %h: (fp32)*(Scalar) = const(val=0.5, name="h")
    %r0: (2, 6, fp32)(Tensor) = relu(x=%x, name="r0")
    %s0: (2, 6, fp32)(Tensor) = sigmoid(x=%r0, name="s0")
    %m: (2, 6, fp32)(Tensor) = mul(x=%r0, y=%h, name="m")
    %r1: (2, 6, fp32)(Tensor) = add(x=%m, y=%w, name="r1")
  } -> (%r1)
}
EOF

# --- opt ------------------------------------------------------------------------
expect_usage "opt without -o" "missing -o OUT" "$MIL" opt "$tmp/a.mil"
expect_usage "opt with two -o" "-o given twice" "$MIL" opt "$tmp/a.mil" -o "$tmp/x.mil" -o "$tmp/y.mil"
[ -e "$tmp/x.mil" ] || [ -e "$tmp/y.mil" ] && fail "a usage error must not write output"
expect_usage "--passes empty" "names no pass" "$MIL" opt "$tmp/a.mil" -o - --passes ""
expect_usage "--passes of commas" "names no pass" "$MIL" opt "$tmp/a.mil" -o - --passes=,,
expect_usage "--print-after unknown" "no pass 'nosuch'" "$MIL" opt "$tmp/a.mil" -o - --print-after=nosuch
grep -q "common::dead_code_elimination" "$tmp/err" || fail "--print-after lists the pipeline's passes"
expect_usage "--print-after not in the pipeline" "does not run 'const_elimination'" \
  "$MIL" opt "$tmp/a.mil" -o - --passes dead_code_elimination --print-after=const_elimination
expect_usage "unknown pipeline" "available pipelines: default, cleanup" "$MIL" opt "$tmp/a.mil" -o - --pipeline nosuch
expect_usage "unknown pass" "not a known pass" "$MIL" opt "$tmp/a.mil" -o - --passes nosuch
expect_usage "bad precision" "must be fp16 or fp32" "$MIL" opt "$tmp/a.mil" -o - --compute-precision fp8
expect_usage "opt -o with an unknown format" "choose one of .mil, .mlmodel, .mlpackage, -" \
  "$MIL" opt "$tmp/a.mil" -o "$tmp/x.onnx"
expect_usage "convert to an unknown format" "choose one of .mlpackage, .mlmodel, .mil" \
  "$MIL" convert "$tmp/a.mil" "$tmp/x.txt"
expect_usage "two pipelines" "given twice" "$MIL" opt "$tmp/a.mil" -o - --pipeline default --pipeline cleanup
"$MIL" opt "$tmp/a.mil" -o - --passes dead_code_elimination --quiet >"$tmp/out" 2>"$tmp/err" || fail "opt -o -: $(cat "$tmp/err")"
grep -q "relu(x=%x" "$tmp/out" || fail "opt -o - prints the program"
grep -q sigmoid "$tmp/out" && fail "opt -o - ran dead_code_elimination"

# --- print, convert, ops ----------------------------------------------------------------
expect_usage "--inline-weights without --complete" "applies to --complete only" "$MIL" print --inline-weights "$tmp/a.mil"
expect_usage "convert --inline-weights to a package" "applies to .mil output only" \
  "$MIL" convert --inline-weights "$tmp/a.mil" "$tmp/a.mlpackage"
for o in iOS13 iOS14 iOS26 CoreML4 CoreML9 nosuch; do
  expect_usage "ops $o" "choose one of iOS15, iOS16, iOS17, iOS18" "$MIL" ops "$o"
done
for o in iOS15 iOS16 iOS17 iOS18 CoreML5 CoreML8 ios17; do
  "$MIL" ops "$o" --op relu >/dev/null || fail "ops $o is documented and must work"
done
expect_usage "ops with two opsets" "one OPSET only" "$MIL" ops iOS17 iOS18

# --- run, verify --------------------------------------------------------------------------
expect_usage "run --input twice" "--input x given twice" "$MIL" run "$tmp/a.mil" --input x=a.npy --input x=b.npy
expect_usage "verify --input twice" "--input x given twice" "$MIL" verify "$tmp/a.mil" "$tmp/a.mil" --input x=a.npy \
  --input x=b.npy
expect_usage "verify --rtol junk" "--rtol expects a non-negative number" "$MIL" verify "$tmp/a.mil" "$tmp/a.mil" --rtol x
expect_usage "run --seed junk" "--seed expects a non-negative integer" "$MIL" run "$tmp/a.mil" --seed -3
expect_usage "verify --reference with two models" "got two models" \
  "$MIL" verify "$tmp/a.mil" "$tmp/a.mil" --reference r1=x.npy
expect_usage "graph without -o" "missing -o OUT" "$MIL" graph "$tmp/a.mil"
expect_usage "graph bad format" "choose one of .svg, .png, .pdf, .dot" "$MIL" graph "$tmp/a.mil" -o "$tmp/a.jpg"
expect_usage "graph --max-ops 0" "--max-ops expects a positive integer" "$MIL" graph "$tmp/a.mil" -o "$tmp/a.dot" --max-ops 0

# --- file modes: 0666 minus the umask, whatever writes them ----------------------------------
umask 022
"$MIL" opt "$tmp/a.mil" -o "$tmp/o.mil" --passes dead_code_elimination --quiet || fail "opt -o o.mil"
"$MIL" convert "$tmp/a.mil" "$tmp/c.mil" || fail "convert to .mil"
"$MIL" convert "$tmp/a.mil" "$tmp/c.mlmodel" || fail "convert to .mlmodel"
"$MIL" graph "$tmp/a.mil" -o "$tmp/g.dot" || fail "graph .dot"
"$MIL" run "$tmp/a.mil" --random-inputs --output-dir "$tmp/run" >/dev/null || fail "run"
for f in o.mil o.weight.bin c.mil c.weight.bin c.mlmodel g.dot run/r1.npy; do
  [ -f "$tmp/$f" ] || fail "$f not written"
  m=$(stat -c %a "$tmp/$f")
  [ "$m" = 644 ] || fail "$f has mode $m, expected 644 (0666 minus umask 022)"
done

# --- .mil output: weights beside the text, read back with the same meaning --------------------
grep -q 'val=@blob("c.weight.bin", ' "$tmp/c.mil" || fail "c.mil refers to c.weight.bin: $(cat "$tmp/c.mil")"
grep -q 'const(val=@blob("c.weight.bin", 64), name="w")' "$tmp/c.mil" || fail "w goes to the weight file"
grep -q 'const(val=0.5, name="h")' "$tmp/c.mil" || fail "a scalar const stays inline"
mkdir "$tmp/moved" && mv "$tmp/c.mil" "$tmp/c.weight.bin" "$tmp/moved/" || fail "move"
"$MIL" diff "$tmp/a.mil" "$tmp/moved/c.mil" >/dev/null || fail "c.mil (moved with its weights) differs from a.mil"
"$MIL" convert --inline-weights "$tmp/a.mil" "$tmp/i.mil" || fail "convert --inline-weights"
[ -e "$tmp/i.weight.bin" ] && fail "--inline-weights writes no weight file"
grep -q '@blob' "$tmp/i.mil" && fail "--inline-weights: no @blob in the text"
"$MIL" diff "$tmp/a.mil" "$tmp/i.mil" >/dev/null || fail "i.mil differs from a.mil"
# print --complete of a model with a weight file: @blob paths that resolve wherever the text goes
"$MIL" print --complete "$tmp/moved/c.mil" >"$tmp/elsewhere.mil" || fail "print --complete"
grep -q "@blob(\"/" "$tmp/elsewhere.mil" || fail "print --complete refers by absolute path: $(grep blob "$tmp/elsewhere.mil")"
"$MIL" diff "$tmp/a.mil" "$tmp/elsewhere.mil" >/dev/null || fail "printed text elsewhere reads back the same"

# --- scriptable output ------------------------------------------------------------------------
"$MIL" convert "$tmp/a.mil" "$tmp/a.mlpackage" || fail "convert to .mlpackage"
"$MIL" info --json "$tmp/a.mlpackage" >"$tmp/info.json" || fail "info --json"
/usr/bin/python3 - "$tmp/info.json" <<'EOF' || fail "info --json content: $(cat "$tmp/info.json")"
import json, sys
j = json.load(open(sys.argv[1]))
f = j["functions"][0]
assert f["name"] == "main" and f["inputs"][0]["name"] == "x", f
assert f["inputs"][0]["shape"] == [2, 6] and f["inputs"][0]["dtype"] == "fp32", f
assert f["outputs"][0]["name"] == "r1", f
assert j["ops"]["by_type"] == {"const": 2, "relu": 1, "sigmoid": 1, "mul": 1, "add": 1}, j["ops"]
assert j["ops"]["total"] == 6
assert j["weights"]["by_dtype"]["fp32"] == {"bytes": 52, "consts": 2, "weight_file_bytes": 48,
                                             "weight_file_consts": 1}, j["weights"]
assert j["specification_version"] == 8 and j["target"] == "iOS17", j
EOF
cat >"$tmp/two.mil" <<'EOF'
main[CoreML7](%x: (2,fp32)(Tensor)) {
  block0() {
    %a: (2,fp32)(Tensor) = relu(x=%x, name="a")
  } -> (%a)
}

other[CoreML7](%y: (2,fp32)(Tensor)) {
  block1() {
    %b: (2,fp32)(Tensor) = sigmoid(x=%y, name="b")
  } -> (%b)
}
EOF
"$MIL" print --function other "$tmp/two.mil" >"$tmp/out" || fail "print --function"
grep -q "^other\[CoreML7\]" "$tmp/out" || fail "print --function prints it: $(cat "$tmp/out")"
grep -q "^main" "$tmp/out" && fail "print --function prints that function only"
"$MIL" print --function nosuch "$tmp/two.mil" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "print --function nosuch must exit 1"
grep -q "has no function 'nosuch'; its functions: main other" "$tmp/err" || fail "function list: $(cat "$tmp/err")"

# verify --reference: run once to get the outputs, then compare with them
"$MIL" run "$tmp/a.mil" --random-inputs --seed 3 --output-dir "$tmp/ref" >/dev/null || fail "run for the reference"
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/x.npy', np.linspace(-1, 1, 12, dtype=np.float32).reshape(2, 6))"
"$MIL" run "$tmp/a.mil" --input x="$tmp/x.npy" --output-dir "$tmp/ref" >/dev/null || fail "run with x.npy"
"$MIL" verify "$tmp/a.mil" --input x="$tmp/x.npy" --reference r1="$tmp/ref/r1.npy" >"$tmp/out" ||
  fail "verify --reference: $(cat "$tmp/out")"
grep -q "^PASS: .*a.mil matches the reference" "$tmp/out" || fail "verify --reference verdict: $(cat "$tmp/out")"
/usr/bin/python3 -c "import numpy as np; a=np.load('$tmp/ref/r1.npy'); a[0,0]+=1; np.save('$tmp/bad.npy', a)"
"$MIL" verify "$tmp/a.mil" --input x="$tmp/x.npy" --reference r1="$tmp/bad.npy" >"$tmp/out"
[ $? -eq 1 ] || fail "verify against a wrong reference must exit 1"
grep -q "^r1 .*FAIL  max abs 1 " "$tmp/out" || fail "verify reports the error: $(cat "$tmp/out")"
"$MIL" verify "$tmp/a.mil" --input x="$tmp/x.npy" --reference nosuch="$tmp/bad.npy" >"$tmp/out"
[ $? -eq 1 ] || fail "verify --reference of a missing output must exit 1"
grep -q "no such output (the model's outputs: r1)" "$tmp/out" || fail "missing output: $(cat "$tmp/out")"
# near zero: the relative error is against the largest |b|, not elementwise
/usr/bin/python3 -c "import numpy as np; np.save('$tmp/z.npy', np.zeros((2, 6), np.float32))"
cat >"$tmp/zero.mil" <<'EOF'
main[CoreML7](%x: (2, 6, fp32)(Tensor)) {
  block0() {
    %r: (2, 6, fp32)(Tensor) = mul(x=%x, y=1e-09, name="r")
  } -> (%r)
}
EOF
"$MIL" verify "$tmp/zero.mil" --input x="$tmp/x.npy" --reference r="$tmp/z.npy" >"$tmp/out" || fail "1e-9 vs 0 passes"
grep -q "rel inf (of max |b| 0)" "$tmp/out" || fail "relative error against zero: $(cat "$tmp/out")"
# which model failed
"$MIL" verify "$tmp/a.mil" "$tmp/missing.mil" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 1 ] || fail "verify with a missing model must exit 1"
grep -q "model B $tmp/missing.mil could not be loaded" "$tmp/err" || fail "verify names model B: $(cat "$tmp/err")"

# --- errors after loading name the file and line:column -------------------------------------------
cat >"$tmp/bad.mil" <<'EOF'
main[CoreML7](%x: (2, 3, fp32)(Tensor)) {
  block0() {
    %r0: (2, 3, fp32)(Tensor) = relu(x=%x, name="r0")
    %r1: (2, 3, fp32)(Tensor) = matmul(x=%r0, y=%r0, name="r1")
  } -> (%r1)
}
EOF
"$MIL" validate "$tmp/bad.mil" >/dev/null 2>"$tmp/err"
[ $? -eq 1 ] || fail "validate bad.mil must exit 1"
grep -q "^mil: error: $tmp/bad.mil:4:5: function 'main': op 'r1' (matmul)" "$tmp/err" ||
  fail "type error names file:line:col: $(cat "$tmp/err")"

# --- warnings: once each, summarized, silenced by --quiet ----------------------------------------------
{
  echo 'main[CoreML7](%x: (2,fp32)(Tensor)) {'
  echo '  block0() {'
  echo '    %input.1: (2,fp32)(Tensor) = relu(x=%x, name="input.1")'
  # %y defined 7 times: 6 redefinitions (an output may not share the input's name)
  for i in 0 1 2 3 4 5 6; do echo "    %y: (2,fp32)(Tensor) = relu(x=%input.1, name=\"s$i\")"; done
  echo '  } -> (%y)'
  echo '}'
} >"$tmp/w.mil"
"$MIL" validate "$tmp/w.mil" >"$tmp/out" 2>"$tmp/err" || fail "w.mil is valid: $(cat "$tmp/err")"
grep -q "input.1" "$tmp/err" && fail "names coremltools writes (input.1) are not warned about: $(cat "$tmp/err")"
grep -q "warning: .*warning:" "$tmp/err" && fail "each warning says 'warning' once: $(cat "$tmp/err")"
[ "$(grep -c "is defined again" "$tmp/err")" -eq 3 ] || fail "3 warnings of a kind shown: $(cat "$tmp/err")"
grep -q "^mil: warning: \.\.\. and 3 more like it$" "$tmp/err" || fail "the rest counted: $(cat "$tmp/err")"
"$MIL" validate --quiet "$tmp/w.mil" >"$tmp/out" 2>"$tmp/err" || fail "validate --quiet"
[ -s "$tmp/err" ] || [ -s "$tmp/out" ] && fail "validate --quiet prints nothing: $(cat "$tmp/err" "$tmp/out")"
# --verify-each verifies after every pass: the same findings are not repeated per pass
"$MIL" opt "$tmp/w.mil" -o - --passes const_elimination,noop_elimination,const_elimination --verify-each \
  >/dev/null 2>"$tmp/err" || fail "opt --verify-each: $(cat "$tmp/err")"
[ -z "$(grep -v "more like it" "$tmp/err" | sort | uniq -d)" ] || fail "opt --verify-each repeats warnings: $(cat "$tmp/err")"
[ "$(grep -c "^mil: warning:" "$tmp/err")" -le 8 ] || fail "opt --verify-each: 3 of each kind, then a count: $(cat "$tmp/err")"
"$MIL" opt "$tmp/w.mil" -o - --passes const_elimination --verify-each --quiet >/dev/null 2>"$tmp/err" ||
  fail "opt --verify-each --quiet"
[ -s "$tmp/err" ] && fail "opt --quiet prints no warnings: $(cat "$tmp/err")"
# what coremltools would rename (model inputs and outputs) is still warned about
printf '%s\n' 'main[CoreML7](%in.1: (2,fp32)(Tensor)) {' '  block0() {' \
  '    %y: (2,fp32)(Tensor) = relu(x=%in.1, name="y")' '  } -> (%y)' '}' >"$tmp/io.mil"
"$MIL" validate "$tmp/io.mil" >/dev/null 2>"$tmp/err" || fail "io.mil is valid"
grep -q "warning: $tmp/io.mil: function 'main': input name 'in.1' is not of the form" "$tmp/err" ||
  fail "model input names: $(cat "$tmp/err")"
echo "ok"
