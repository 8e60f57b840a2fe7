#!/bin/bash
# W8A8 (`mil compress --quantize int8 --quantize-activations int8`) on the
# small fp16 iOS17 conv net of tests/data/w8a8 against what coremltools'
# linear_quantize_activations + linear_quantize_weights recorded there
# (record.py): the same op histogram and outputs within 2% of coremltools'
# model on a sample. Then the edge cases coremltools fails on: a zero-range
# activation and int32 inputs stay unquantized with one warning naming them.
#   bash compress_w8a8.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
DATA=$2/data/w8a8
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-w8a8.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$MIL" compress "$DATA/model.mlpackage" -o "$tmp/q.mlpackage" --quantize int8 --weight-threshold 100 \
  --quantize-activations int8 --calibration-data "$DATA/samples" 2>"$tmp/err" || { cat "$tmp/err"; fail "W8A8 compress"; }
grep -q "linear_quantize_activations: 13 quantize/dequantize rewrites" "$tmp/err" || { cat "$tmp/err"; fail "rewrite count"; }
grep -q "warning" "$tmp/err" && { cat "$tmp/err"; fail "unexpected warning"; }

# op histogram of `mil info` ("  <op>  <count>") against coremltools' JSON
"$MIL" info "$tmp/q.mlpackage" | sed -n '/^ops:/,/^[a-z]/p' | awk 'NF == 2 && $1 !~ /:$/ {print $1, $2}' | sort >"$tmp/h"
sed -n 's/^ *"\([a-z_]*\)": \([0-9]*\),*$/\1 \2/p' "$DATA/ct_histogram.json" | sort >"$tmp/ct"
diff "$tmp/ct" "$tmp/h" || fail "op histogram differs from coremltools' (< coremltools, > libmil)"
# the whole program, names, scales and const values included, is coremltools'
"$MIL" print "$DATA/ct_w8a8.mlpackage" >"$tmp/ct.mil" && "$MIL" print "$tmp/q.mlpackage" >"$tmp/q.mil" || fail "print"
diff "$tmp/ct.mil" "$tmp/q.mil" || fail "the program differs from coremltools' (< coremltools, > libmil)"
grep -q "^quantize 10$" "$tmp/h" && grep -q "^dequantize 11$" "$tmp/h" && grep -q "^conv 4$" "$tmp/h" || fail "counts"

"$MIL" run "$tmp/q.mlpackage" --input "x=$DATA/samples/0/x.npy" --output-dir "$tmp/out" >/dev/null || fail "run"
PY=/usr/bin/python3
if $PY -c "import numpy" 2>/dev/null; then
  $PY - "$tmp/out/fc.npy" "$DATA/ct_out.npy" <<'PYEOF' || fail "outputs differ from coremltools' by more than 2%"
import sys, numpy as np
a, b = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
err = np.abs(a - b).max() / np.abs(b).max()
print("max relative difference to coremltools: %.4f" % err)
sys.exit(0 if a.shape == b.shape and err <= 0.02 else 1)
PYEOF
else
  echo "note: numpy not found, output comparison skipped"
fi

# activations only, mode linear (zero points), against coremltools
"$MIL" compress "$DATA/model.mlpackage" -o "$tmp/l.mlpackage" --quantize-activations int8 --activation-mode linear \
  --calibration-data "$DATA/samples" --quiet || fail "linear compress"
"$MIL" info "$tmp/l.mlpackage" | sed -n '/^ops:/,/^[a-z]/p' | awk 'NF == 2 && $1 !~ /:$/ {print $1, $2}' | sort >"$tmp/h"
sed -n 's/^ *"\([a-z_]*\)": \([0-9]*\),*$/\1 \2/p' "$DATA/ct_a8_linear_histogram.json" | sort >"$tmp/ct"
diff "$tmp/ct" "$tmp/h" || fail "linear: op histogram differs from coremltools'"
"$MIL" run "$tmp/l.mlpackage" --input "x=$DATA/samples/0/x.npy" --output-dir "$tmp/lout" >/dev/null || fail "run"
if $PY -c "import numpy" 2>/dev/null; then
  $PY - "$tmp/lout/fc.npy" "$DATA/ct_a8_linear_out.npy" <<'PYEOF' || fail "linear: outputs differ from coremltools'"
import sys, numpy as np
a, b = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
sys.exit(0 if a.shape == b.shape and np.abs(a - b).max() <= 0.02 * np.abs(b).max() else 1)
PYEOF
fi

# edge cases
"$MIL" compress "$DATA/edge.mil" -o "$tmp/e.mil" --quantize-activations int8 --calibration-data "$DATA/edge_samples" \
  --no-pipeline 2>"$tmp/err" || { cat "$tmp/err"; fail "edge compress"; }
[ "$(grep -c warning "$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "expected one warning"; }
grep -q "3 activations left unquantized: r (zero range), n (int32), m (int32)" "$tmp/err" || { cat "$tmp/err"; fail "warning text"; }
grep -q 'add(x=%r, y=%x, name="a")' "$tmp/e.mil" || fail "the zero-range add was changed"
grep -q 'add(x=%n, y=%m, name="k")' "$tmp/e.mil" || fail "the int32 add was changed"
grep -q 'add(x=%dequantize_0, y=%dequantize_1, name="b")' "$tmp/e.mil" || fail "the fp16 add lost its pairs"
# 2 * 8 / 254 rounded to fp16 (the samples reach -8)
grep -q 'val=0.06298828125, name="quantize_0_scale_0"' "$tmp/e.mil" || { grep scale "$tmp/e.mil"; fail "scale"; }

# usage errors
"$MIL" compress "$DATA/edge.mil" -o "$tmp/x.mil" --quantize-activations int8 2>/dev/null && fail "no --calibration-data accepted"
"$MIL" compress "$DATA/edge.mil" -o "$tmp/x.mil" --quantize-activations int4 --calibration-data "$DATA/edge_samples" \
  2>/dev/null && fail "int4 activations accepted"
"$MIL" compress "$DATA/edge.mil" -o "$tmp/x.mil" --quantize-activations int8 --calibration-data "$tmp/none" 2>"$tmp/err" &&
  fail "missing folder accepted"
grep -q "cannot open folder" "$tmp/err" || { cat "$tmp/err"; fail "missing folder message"; }
mkdir -p "$tmp/bad/0"
cp "$DATA/edge_samples/0/x.npy" "$tmp/bad/0/"
"$MIL" compress "$DATA/edge.mil" -o "$tmp/x.mil" --quantize-activations int8 --calibration-data "$tmp/bad" 2>"$tmp/err" &&
  fail "a sample missing inputs accepted"
grep -q "holds 1 of the model's 3 inputs" "$tmp/err" || { cat "$tmp/err"; fail "missing input message"; }
cp "$DATA/edge_samples/0/"*.npy "$tmp/bad/0/"
cp "$DATA/edge_samples/0/x.npy" "$tmp/bad/0/zz.npy"
"$MIL" compress "$DATA/edge.mil" -o "$tmp/x.mil" --quantize-activations int8 --calibration-data "$tmp/bad" 2>"$tmp/err" &&
  fail "an array named after no input accepted"
grep -q "has no input named 'zz'" "$tmp/err" || { cat "$tmp/err"; fail "unknown input message"; }
[ -e "$tmp/x.mil" ] && fail "output written after an error"
# fp32 samples for an fp16 input are converted, as `mil run` converts inputs
"$MIL" edit "$DATA/model.mlpackage" -o "$tmp/h.mlpackage" --io-type fp16 --input x >/dev/null || fail "fp16 input model"
"$MIL" compress "$tmp/h.mlpackage" -o "$tmp/h8.mlpackage" --quantize-activations int8 --calibration-data "$DATA/samples" \
  --quiet 2>"$tmp/err" || { cat "$tmp/err"; fail "fp32 samples for an fp16 input"; }
echo "ok"
