#!/bin/sh
# Runs every built fuzz target for a short while.
#   sh fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]
# BUILD_DIR is a build configured with -DCMAKE_C_COMPILER=clang -DMIL_FUZZ=ON.
# Each BUILD_DIR/fuzz/fuzz_* runs for SECONDS (default 30) on a scratch copy of
# the seeds tests/data/*.mil (plus fuzz/seeds/<target>/ and the dictionary
# fuzz/<target>.dict when present). fuzz_proto and fuzz_package are also
# seeded with the real models' model.mlmodel files of the shared corpus
# (MIL_SHARED_DIR, default ../shared next to the repository) when it is there;
# they are copied into the scratch corpus, never into the repository.
# TARGET names limit the run to those targets. Exits non-zero when any target finds a
# crash, leak, sanitizer report or time-out; the reproducer is copied into
# BUILD_DIR.
set -u
build=${1:?usage: sh fuzz/run.sh BUILD_DIR [SECONDS]}
secs=${2:-30}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
only="$*"
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
shared=${MIL_SHARED_DIR:-$root/../shared}
# scratch in memory when the machine has a /dev/shm with 1 GiB free
# (fuzz_package and fuzz_image write their inputs to files: twice the
# executions a second); TMPDIR chooses another place
shm_free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -z "${TMPDIR:-}" ] && [ -w /dev/shm ] && [ "${shm_free:-0}" -ge 1048576 ]; then
  TMPDIR=/dev/shm
  export TMPDIR
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/mil-fuzz.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM

status=0
count=0
for exe in "$build"/fuzz/fuzz_*; do
  [ -f "$exe" ] && [ -x "$exe" ] || continue
  name=$(basename "$exe")
  if [ -n "$only" ]; then
    case " $only " in *" $name "*) ;; *) continue ;; esac
  fi
  corpus="$work/$name"
  mkdir -p "$corpus"
  for s in "$root"/tests/data/*.mil; do
    [ -f "$s" ] && cp "$s" "$corpus/"
  done
  # small valid programs for the targets that validate, optimize and run
  case $name in fuzz_validate | fuzz_pipeline | fuzz_interp | fuzz_model_load | fuzz_text_parse)
    cp "$here"/seeds/mil/*.mil "$corpus/" 2>/dev/null ;;
  esac
  if [ -d "$here/seeds/$name" ]; then
    cp "$here/seeds/$name"/* "$corpus/" 2>/dev/null
  fi
  # real models as seeds: fuzz_proto takes mode byte 0 + the protobuf,
  # fuzz_package u16 manifest length 0 (a valid manifest), u16 model length,
  # the model (no weights: models under 64 KiB only)
  k=0
  for mm in "$shared"/corpus/models/*/*.mlpackage/Data/com.apple.CoreML/model.mlmodel; do
    [ -f "$mm" ] || continue
    k=$((k + 1))
    case $name in
    fuzz_proto) { printf '\000'; cat "$mm"; } >"$corpus/real-$k.bin" ;;
    fuzz_package)
      n=$(wc -c <"$mm")
      if [ "$n" -lt 65536 ]; then
        { printf '\000\000'; printf "\\$(printf %03o $((n % 256)))\\$(printf %03o $((n / 256)))"; cat "$mm"; } \
          >"$corpus/real-$k.bin"
      fi
      ;;
    esac
  done
  # ONNX's own small backend-test models (Debian's libonnx-testdata) seed the ONNX importer
  if [ "$name" = fuzz_onnx_model ]; then
    for om in /usr/share/libonnx-testdata/data/node/test_*/model.onnx; do
      [ -f "$om" ] && [ "$(wc -c <"$om")" -lt 4096 ] && cp "$om" "$corpus/$(basename "$(dirname "$om")").onnx"
    done
  fi
  set --
  [ -f "$here/$name.dict" ] && set -- "-dict=$here/$name.dict"
  case $name in fuzz_validate | fuzz_pipeline | fuzz_interp | fuzz_model_load)
    [ -f "$here/fuzz_text_parse.dict" ] && set -- "-dict=$here/fuzz_text_parse.dict" ;;
  esac
  echo "== $name: $secs s"
  # FUZZ_SEED fixes libFuzzer's random seed: with the same seeds, a shorter run explores a prefix of
  # a longer one, so CI's short run replays what a longer run here found clean
  [ -n "${FUZZ_SEED:-}" ] && set -- "$@" "-seed=$FUZZ_SEED"
  # FUZZ_RUNS caps the executions (a long run stops at whichever of SECONDS and FUZZ_RUNS comes first)
  [ -n "${FUZZ_RUNS:-}" ] && set -- "$@" "-runs=$FUZZ_RUNS"
  if "$exe" "$@" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
      -artifact_prefix="$work/$name-" "$corpus" >"$work/$name.log" 2>&1; then
    grep -E "^Done|^#[0-9]+.*DONE" "$work/$name.log" | tail -n 2
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
