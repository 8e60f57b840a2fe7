#!/bin/bash
# `mil convert` and `mil info`: exit codes, messages, and round trips through
# every format on the corpus models (when present) and on tests/data/*.mil.
#   bash convert_info.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
TESTS=$2
SHARED=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-convert.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# --- usage and errors ---------------------------------------------------------
"$MIL" convert >/dev/null 2>&1
[ $? -eq 2 ] || fail "'mil convert' without arguments must exit 2"
"$MIL" info >/dev/null 2>&1
[ $? -eq 2 ] || fail "'mil info' without arguments must exit 2"
"$MIL" convert --bogus a.mil b.mil >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option must exit 2"
"$MIL" convert --spec-version 3 a.mil b.mlpackage >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad --spec-version must exit 2"
"$MIL" convert --help | grep -q "usage: mil convert" || fail "convert --help"
"$MIL" info --help | grep -q "usage: mil info" || fail "info --help"
"$MIL" info "$tmp/missing.mlpackage" 2>"$tmp/err" >/dev/null
[ $? -eq 1 ] || fail "info on a missing model must exit 1"
grep -q "^mil: error: .*missing.mlpackage: no such package" "$tmp/err" || fail "info error message: $(cat "$tmp/err")"
printf 'not a protobuf' >"$tmp/junk.mlmodel"
"$MIL" convert "$tmp/junk.mlmodel" "$tmp/junk.mlpackage" 2>"$tmp/err"
[ $? -eq 1 ] || fail "converting a damaged model must exit 1"
grep -q "^mil: error: .*junk.mlmodel: byte " "$tmp/err" || fail "damage message: $(cat "$tmp/err")"
[ -e "$tmp/junk.mlpackage" ] && fail "a failed convert must not leave output"

# --- a small model built here -----------------------------------------------
cat >"$tmp/small.mil" <<'MIL'
main[CoreML7](%x: (2, 6, fp32)(Tensor)) {
  block0() {
    %w: (2, 6, fp32)*(Tensor) = const(val=[[0.5, 1.0, 1.5, 2.0, 2.5, 3.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]], name="w")
    %y: (2, 6, fp32)(Tensor) = add(x=%x, y=%w, name="y")
  } -> (%y)
}
MIL
"$MIL" convert "$tmp/small.mil" "$tmp/small.mlpackage" || fail "convert small.mil"
[ -f "$tmp/small.mlpackage/Manifest.json" ] || fail "no Manifest.json"
[ -f "$tmp/small.mlpackage/Data/com.apple.CoreML/weights/weight.bin" ] || fail "12 fp32 values belong in weight.bin"
"$MIL" info "$tmp/small.mlpackage" >"$tmp/info" || fail "info small.mlpackage"
grep -q "^specification version: 8 (iOS17)" "$tmp/info" || fail "spec version: $(cat "$tmp/info")"
grep -q "x: fp32 (2, 6)  \[multiArray FLOAT32 (2, 6)\]" "$tmp/info" || fail "input line: $(cat "$tmp/info")"
grep -q "^  add  *1$" "$tmp/info" || fail "op histogram: $(cat "$tmp/info")"
grep -Eq "fp32 +48 bytes +1 consts; weight file: +48 bytes +1 consts" "$tmp/info" || fail "weights: $(cat "$tmp/info")"
"$MIL" convert "$tmp/small.mlpackage" "$tmp/small.mlmodel" || fail "convert to .mlmodel"
ls "$tmp"/weights/small.????????????????.bin >/dev/null 2>&1 || fail ".mlmodel weights go to weights/small.<hex>.bin beside it"
"$MIL" convert "$tmp/small.mlmodel" "$tmp/back.mil" || fail "convert to .mil"
"$MIL" print --complete "$tmp/small.mil" >"$tmp/p1" || fail "print small.mil"
"$MIL" print --complete "$tmp/back.mil" >"$tmp/p2" || fail "print back.mil"
diff "$tmp/p1" "$tmp/p2" >/dev/null || fail "small.mil changed in the round trip: $(diff "$tmp/p1" "$tmp/p2" | head)"

# --- tests/data/*.mil ---------------------------------------------------------
for f in "$TESTS"/data/*.mil; do
  [ -f "$f" ] || continue
  base=$(basename "$f" .mil)
  if "$MIL" convert --spec-version 10 "$f" "$tmp/$base.mlpackage" 2>"$tmp/err"; then
    "$MIL" info "$tmp/$base.mlpackage" >/dev/null || fail "info $base.mlpackage"
    "$MIL" print "$tmp/$base.mlpackage" >"$tmp/p1" || fail "print $base.mlpackage"
    "$MIL" convert "$tmp/$base.mlpackage" "$tmp/$base.back.mil" || fail "convert $base back to .mil"
    "$MIL" print "$tmp/$base.back.mil" >"$tmp/p2" || fail "print $base.back.mil"
    diff "$tmp/p1" "$tmp/p2" >/dev/null || fail "$base: package and its .mil print differently"
  else
    # a program the description cannot express (e.g. variable-rank inputs) is refused with a reason
    grep -q "^mil: error: " "$tmp/err" || fail "$base: refused without a message"
  fi
done

# --- corpus models ------------------------------------------------------------
models="$SHARED/corpus/models"
if [ ! -d "$models" ]; then
  echo "skipped: corpus not found"
  exit 0
fi
n=0
for d in "$models"/*/; do
  name=$(basename "$d")
  for k in input expected; do
    pkg="$d$k.mlpackage"
    [ -d "$pkg" ] || continue
    "$MIL" info "$pkg" >"$tmp/info" || fail "info $name/$k"
    want=$(sed -n "s/.*\"ops_$([ $k = input ] && echo before || echo after)\": *\([0-9]*\).*/\1/p" "$d/info.json")
    got=$(sed -n 's/^ops: //p' "$tmp/info")
    [ -z "$want" ] || [ "$got" = "$want" ] || fail "$name/$k: mil info counts $got ops, info.json says $want"
    out="$tmp/$name-$k"
    mkdir -p "$out"
    "$MIL" convert "$pkg" "$out/m.mlpackage" || fail "convert $name/$k to .mlpackage"
    cmp -s "$pkg/Data/com.apple.CoreML/weights/weight.bin" "$out/m.mlpackage/Data/com.apple.CoreML/weights/weight.bin" ||
      fail "$name/$k: weight.bin not reproduced"
    "$MIL" convert "$out/m.mlpackage" "$out/m.mlmodel" || fail "convert $name/$k to .mlmodel"
    "$MIL" print "$pkg" >"$tmp/p1" || fail "print $name/$k"
    "$MIL" print "$out/m.mlmodel" >"$tmp/p2" || fail "print $name/$k .mlmodel"
    diff "$tmp/p1" "$tmp/p2" >/dev/null || fail "$name/$k: the .mlmodel prints differently"
    rm -rf "$out"
    n=$((n + 1))
  done
done
echo "convert/info: $n corpus packages converted and checked"
