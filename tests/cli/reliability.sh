#!/bin/bash
# `mil opt` exit status: any error means exit 1 and no output.
#   bash reliability.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-reliab.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
cat >"$tmp/unknown.mil" <<'MIL'
main[CoreML7](%x: (2, fp32)(Tensor)) {
  block0() {
    %y: (2, fp32)(Tensor) = frobnicate(x=%x, name="y")
  } -> (%y)
}
MIL
for args in "--pipeline empty" "--passes common::noop_elimination" "--pipeline frontend_milinternal"; do
  for out in o.mlpackage o.mlmodel o.mil; do
    rm -rf "${tmp:?}/$out"
    # shellcheck disable=SC2086
    "$MIL" opt "$tmp/unknown.mil" $args -o "$tmp/$out" 2>"$tmp/err" >/dev/null
    rc=$?
    [ $rc -eq 1 ] || fail "opt $args -o $out on an unknown op exited $rc, expected 1"
    [ -e "$tmp/$out" ] && fail "opt $args -o $out wrote output despite the error"
    grep -q "unknown op type 'frobnicate'" "$tmp/err" || fail "opt $args: message: $(cat "$tmp/err")"
  done
done
echo "ok"
