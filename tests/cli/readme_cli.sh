#!/bin/bash
# README.md's CLI reference is what the commands' --help say: the text
# between its cli-reference markers equals tools/cli-reference.sh's output,
# and every option any command's help names appears there.
#   bash readme_cli.sh MIL TESTS_DIR SHARED_DIR
set -u
MIL=$1
ROOT=$(cd "$2/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mil-readme.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
sh "$ROOT/tools/cli-reference.sh" "$MIL" >"$tmp/want" || fail "tools/cli-reference.sh failed"
sed -n '/<!-- cli-reference:begin -->/,/<!-- cli-reference:end -->/p' "$ROOT/README.md" | sed '1d;$d' >"$tmp/got"
[ -s "$tmp/got" ] || fail "README.md has no cli-reference section"
diff -u "$tmp/got" "$tmp/want" >"$tmp/diff" ||
  fail "README.md's CLI reference differs from --help (update it with: sh tools/cli-reference.sh build/mil):
$(cat "$tmp/diff")"
# every command of the table is there, and every option its help mentions
n=0
for c in $("$MIL" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p'); do
  grep -q "^mil $c " "$tmp/got" || fail "README lacks 'mil $c'"
  for o in $("$MIL" "$c" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u); do
    [ "$o" = --help ] && continue
    grep -q -- "$o" "$tmp/got" || fail "README lacks $c's option $o"
    n=$((n + 1))
  done
done
[ "$n" -gt 30 ] || fail "only $n options found in the commands' help"
echo "ok: README's CLI reference matches --help ($n options)"
