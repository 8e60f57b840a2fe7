#!/bin/bash
# The mil tool on hostile files: a FIFO where a model file goes is an error
# (exit 1, never a hang), a @blob path leaving the text's directory is
# refused without echoing the file, and SIGTERM / SIGINT during a save
# leave no temporaries.
#   bash io_safety.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-iosafety.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

cat >"$tmp/m.mil" <<'MIL'
main[CoreML7](%x: (2, 6, fp32)(Tensor)) {
  block0() {
    %w: (2, 6, fp32)*(Tensor) = const(val=[[0.5, 1.0, 1.5, 2.0, 2.5, 3.0], [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]], name="w")
    %y: (2, 6, fp32)(Tensor) = add(x=%x, y=%w, name="y")
  } -> (%y)
}
MIL
"$MIL" convert "$tmp/m.mil" "$tmp/m.mlpackage" || fail "convert m.mil"

# --- FIFOs --------------------------------------------------------------------
# each command on a package whose file is a FIFO: exit 1 within the time-out
expect_fifo_error() { # PACKAGE_FILE
  rm -rf "$tmp/f.mlpackage"
  cp -r "$tmp/m.mlpackage" "$tmp/f.mlpackage"
  rm -f "$tmp/f.mlpackage/$1"
  mkfifo "$tmp/f.mlpackage/$1" || fail "mkfifo"
  for cmd in validate print info "run --random-inputs --no-write" "convert" "opt -o $tmp/o.mlpackage"; do
    args=("$tmp/f.mlpackage")
    [ "$cmd" = convert ] && args+=("$tmp/o.mil")
    # shellcheck disable=SC2086
    timeout 20 "$MIL" $cmd "${args[@]}" >/dev/null 2>"$tmp/err"
    rc=$?
    [ $rc -eq 124 ] && fail "mil $cmd hangs on a FIFO as $1"
    [ $rc -eq 1 ] || fail "mil $cmd with a FIFO as $1: exit $rc"
    grep -q "FIFO (named pipe), not a regular file" "$tmp/err" || fail "mil $cmd, FIFO as $1: $(cat "$tmp/err")"
  done
}
expect_fifo_error Manifest.json
expect_fifo_error Data/com.apple.CoreML/model.mlmodel
expect_fifo_error Data/com.apple.CoreML/weights/weight.bin
# a tensor file (ONNX TensorProto) as a FIFO
mkfifo "$tmp/t.pb" || fail "mkfifo"
timeout 20 "$MIL" tensor "$tmp/t.pb" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc -eq 124 ] && fail "mil tensor hangs on a FIFO"
[ $rc -eq 1 ] || fail "mil tensor on a FIFO: exit $rc ($(cat "$tmp/err"))"

# --- @blob leaving the text's directory ---------------------------------------
mkdir -p "$tmp/t"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$tmp/secret"
for p in "$tmp/secret" "../secret"; do
  cat >"$tmp/t/b.mil" <<MIL
main[CoreML7](%x: (4, fp32)(Tensor)) {
  block0() {
    %w: (4, fp32)*(Tensor) = const(val=@blob("$p", 0), name="w")
  } -> (%w)
}
MIL
  "$MIL" validate "$tmp/t/b.mil" >"$tmp/out" 2>&1
  [ $? -eq 1 ] || fail "@blob(\"$p\") must be refused"
  grep -q "outside" "$tmp/out" || fail "@blob(\"$p\"): $(cat "$tmp/out")"
  grep -q "809138234\|root:x" "$tmp/out" && fail "@blob(\"$p\") echoes the file: $(cat "$tmp/out")"
done

# --- signals during a save ----------------------------------------------------
# a model large enough that a save takes a while: 64 consts of 256 Ki floats
{
  echo 'main[CoreML7](%x: (262144, fp32)(Tensor)) {'
  echo '  block0() {'
  for i in $(seq 0 63); do
    echo "    %w$i: (262144, fp32)*(Tensor) = const(val=@blob(\"w.bin\", 64), name=\"w$i\")"
    echo "    %y$i: (262144, fp32)(Tensor) = add(x=%x, y=%w$i, name=\"y$i\")"
  done
  echo "  } -> ($(seq -s, 0 63 | sed 's/\([0-9]*\)/%y\1/g'))"
  echo '}'
} >"$tmp/big.mil"
# its weight file: one blob of 262144 fp32 zeros, metadata at 64, data at 128
{
  printf '\x01\x00\x00\x00\x02\x00\x00\x00'
  head -c 56 /dev/zero
  printf '\xef\xbe\xad\xde\x02\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00'
  head -c 40 /dev/zero
  head -c 1048576 /dev/zero
} >"$tmp/w.bin"
"$MIL" validate "$tmp/big.mil" >/dev/null || fail "big.mil does not validate"
for sig in TERM INT; do
  for out in "$tmp/s.mlpackage" "$tmp/s.mlmodel"; do
    for delay in 0.25 0.45; do
      "$MIL" convert "$tmp/big.mil" "$out" &
      pid=$!
      sleep $delay
      kill -s $sig $pid 2>/dev/null
      wait $pid
      left=$(ls "$tmp" | grep -c '\.tmp-')
      [ "$left" -eq 0 ] || fail "SIG$sig after ${delay}s left temporaries: $(ls "$tmp")"
      if [ -d "$tmp/weights" ]; then
        n=$(ls "$tmp/weights" | grep -c '^s\.[0-9a-f]*\.bin$')
        [ "$n" -le 1 ] || fail "SIG$sig after ${delay}s left $n weight files for s.mlmodel"
      fi
      rm -rf "$tmp/s.mlpackage" "$tmp/s.mlmodel" "$tmp/weights"
    done
  done
done
echo "ok"
