#!/bin/sh
# Runs every built fuzz target for a short while.
#   sh fuzz/run.sh BUILD_DIR [SECONDS]
# BUILD_DIR is a build configured with -DCMAKE_C_COMPILER=clang -DMIL_FUZZ=ON.
# Each BUILD_DIR/fuzz/fuzz_* runs for SECONDS (default 30) on a scratch copy of
# the seeds tests/data/*.mil (plus fuzz/seeds/<target>/ and the dictionary
# fuzz/<target>.dict when present). Exits non-zero when any target finds a
# crash, leak, sanitizer report or time-out; the reproducer is copied into
# BUILD_DIR.
set -u
build=${1:?usage: sh fuzz/run.sh BUILD_DIR [SECONDS]}
secs=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
work=$(mktemp -d "${TMPDIR:-/tmp}/mil-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

status=0
count=0
for exe in "$build"/fuzz/fuzz_*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name=$(basename "$exe")
  corpus="$work/$name"
  mkdir -p "$corpus"
  for s in "$root"/tests/data/*.mil; do
    [ -f "$s" ] && cp "$s" "$corpus/"
  done
  if [ -d "$here/seeds/$name" ]; then
    cp "$here/seeds/$name"/* "$corpus/" 2>/dev/null
  fi
  set --
  [ -f "$here/$name.dict" ] && set -- "-dict=$here/$name.dict"
  echo "== $name: $secs s"
  if "$exe" "$@" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
      -artifact_prefix="$work/$name-" "$corpus" >"$work/$name.log" 2>&1; then
    grep -E "^Done|^#[0-9]+.*DONE" "$work/$name.log" | tail -n 1
  else
    echo "FAILED: $name"
    tail -n 60 "$work/$name.log"
    for a in "$work/$name"-*; do
      if [ -f "$a" ]; then
        cp "$a" "$build/"
        echo "reproducer: $build/$(basename "$a")  (run: $exe $build/$(basename "$a"))"
      fi
    done
    status=1
  fi
  count=$((count + 1))
done
if [ "$count" -eq 0 ]; then
  echo "no fuzz targets in $build/fuzz (configure with -DCMAKE_C_COMPILER=clang -DMIL_FUZZ=ON)"
  exit 1
fi
exit $status
