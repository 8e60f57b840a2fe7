#!/bin/bash
# The rooms of the library keep to shared/spec/design.md's "who may use
# whom" table, as far as #include lines show it:
#   core: nothing else          ops: core          io, interp: core, ops
#   build: core, ops            compress: core, ops, build
#   passes: core, ops, build, compress
#   onnx: core, ops, io, build, compress
#   convert, utils: everything above;  tools: the public API (include/mil/)
# A public header counts as the room that implements it (mil/ir.h: core,
# mil/text.h: io, ...; the umbrella mil/mil.h: core, ops and io). Also:
# src/passes/ prints, formats and uses io/ nowhere; src/onnx/ runs no
# pipeline; src/core/ includes no umbrella header.
#   bash rooms.sh MIL TESTS_DIR SHARED_DIR   (only TESTS_DIR is used)
set -u
ROOT=$(cd "$2/.." && pwd)
cd "$ROOT" || exit 1
bad=0
fail() {
  echo "FAIL: $*"
  bad=1
}

# The room of a public header.
public_room() {
  case "$1" in
  status.h | types.h | value.h | ir.h | version.h) echo core ;;
  ops.h) echo ops ;;
  text.h | blob.h | npy.h | model.h | equiv.h | image.h) echo io ;;
  interp.h) echo interp ;;
  compress.h) echo compress ;;
  passes.h) echo passes ;;
  onnx.h | onnx_tensor.h) echo onnx ;;
  convert.h | input_types.h) echo convert ;;
  calibrate.h) echo utils ;;
  utils.h) echo utils ;;
  mil.h) echo "core ops io" ;;
  *) echo "unknown:$1" ;;
  esac
}

# The rooms room $1 may use (itself included).
allowed() {
  case "$1" in
  core) echo "core" ;;
  ops) echo "core ops" ;;
  io | interp) echo "core ops $1" ;;
  build) echo "core ops build" ;;
  compress) echo "core ops build compress" ;;
  passes) echo "core ops build compress passes" ;;
  onnx) echo "core ops io build compress onnx" ;;
  convert | utils) echo "core ops io interp build compress passes onnx convert utils" ;;
  *) echo "" ;;
  esac
}

# Known exceptions, each with its reason: "file room".
#  - the compression kernels take the pass options of the compression passes
#    they serve (mil_pass_options in cw_pass, src/compress/select.c); the
#    public pass-option API, not the pass manager.
exception() {
  case "$1 $2" in
  "src/compress/compress_internal.h passes") return 0 ;;
  esac
  return 1
}

rooms="core ops io interp build compress passes onnx convert utils"
n_files=0
for room in $rooms; do
  [ -d "src/$room" ] || continue
  ok=" $(allowed "$room") "
  while IFS= read -r f; do
    n_files=$((n_files + 1))
    while IFS= read -r inc; do
      used=""
      case "$inc" in
      mil/*) used=$(public_room "${inc#mil/}") ;;
      */*) used=${inc%%/*} ;;
      *) continue ;; # a header of the same folder
      esac
      for u in $used; do
        case "$ok" in *" $u "*) continue ;; esac
        exception "$f" "$u" && continue
        fail "$f (room $room) includes \"$inc\" (room $u); $room may use: $(allowed "$room")"
      done
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done < <(find "src/$room" -name '*.[ch]' -o -name '*.def' | sort)
done
[ "$n_files" -gt 100 ] || fail "only $n_files source files found under src/: wrong directory?"

# The rules design.md spells out.
f=$(grep -l '#include "passes/' $(find src -path src/passes -prune -o -type f -print) 2>/dev/null)
[ -z "$f" ] || fail "a passes/ header is included outside src/passes/: $f"
f=$(grep -l '#include "io/\|mil_print_program\|mil_format_double\|mil_buf_\|mil/text.h\|[^n]printf(\|fputs(\|fwrite(\|\bstderr\b\|\bstdout\b' $(find src/passes -type f) 2>/dev/null)
[ -z "$f" ] || fail "src/passes/ prints, formats or uses io/: $f"
f=$(grep -l 'mil_pipeline_run\|mil_pipeline_new\|mil/passes.h' $(find src/onnx -type f) 2>/dev/null)
[ -z "$f" ] || fail "src/onnx/ runs a pipeline: $f"
f=$(grep -l '#include "mil/mil.h"' $(find src/core -type f) 2>/dev/null)
[ -z "$f" ] || fail "src/core/ includes the umbrella header: $f"
# tools and python use the public API only
f=$(grep -l '#include "\(core\|ops\|io\|interp\|build\|compress\|passes\|onnx\|convert\|utils\)/' tools/mil/* 2>/dev/null)
[ -z "$f" ] || fail "tools/mil includes an internal header: $f"
[ "$bad" = 0 ] && echo "rooms: $n_files files keep design.md's rules"
exit "$bad"
