#!/bin/sh
# Ends `make test`: counts the tests ctest passed, failed and skipped, says
# why each skipped test was skipped, and exits with ctest's status.
#   sh tools/test-summary.sh STATUS CTEST_OUTPUT [LASTTEST_LOG]
# CTEST_OUTPUT: what ctest printed (its "Test #N: name ... Passed" lines);
# LASTTEST_LOG: ctest's Testing/Temporary/LastTest.log, where each test's
# output is (ctest records a skipped test as passed there, so the verdicts
# come from CTEST_OUTPUT). A skipped test's reason is the first line of its
# output that mentions "skip" (tests print e.g. "SKIPPED: <corpus> not
# found"), else its last line. The last line printed is
#   N passed, N failed, N skipped
# alone on its line (CI reads it).
status=${1:-1}
out=$2
log=${3:-}
if [ ! -r "$out" ]; then
  echo "test-summary: cannot read ctest's output $out" >&2
  exit "$status"
fi
awk -v logf="$log" '
  # "12/85 Test #12: name .........   Passed    0.05 sec" (also "***Failed", "***Skipped", "***Timeout", ...)
  / Test +#[0-9]+: / {
    line = $0
    sub(/^.* Test +#[0-9]+: /, "", line)
    name = line
    sub(/ .*$/, "", name)
    if (line ~ /[ *]Passed/) verdict = "passed"
    else if (line ~ /\*\*\*Skipped/ || line ~ /Not Run|Disabled/) verdict = "skipped"
    else verdict = "failed"
    if (!(name in seen)) order[n++] = name
    seen[name] = verdict
  }
  END {
    # the output of each skipped test, from LastTest.log
    if (logf != "") {
      cur = ""; inout = 0
      while ((getline l < logf) > 0) {
        if (l ~ /^[0-9]+\/[0-9]+ Test: /) { cur = l; sub(/^[0-9]+\/[0-9]+ Test: /, "", cur); inout = 0; continue }
        if (l == "Output:") { inout = 1; getline l < logf; continue }
        if (l ~ /^<end of output>/) { inout = 0; continue }
        if (inout && cur != "" && seen[cur] == "skipped" && l != "") {
          if (!(cur in why) && tolower(l) ~ /skip/) why[cur] = l
          last[cur] = l
        }
      }
    }
    p = f = s = 0
    for (i = 0; i < n; i++) {
      v = seen[order[i]]
      if (v == "passed") p++
      else if (v == "failed") f++
      else {
        s++
        r = order[i] in why ? why[order[i]] : order[i] in last ? last[order[i]] : "(it gave no reason)"
        printf "skipped %s: %s\n", order[i], r
      }
    }
    for (i = 0; i < n; i++) if (seen[order[i]] == "failed") printf "failed  %s\n", order[i]
    printf "%d passed, %d failed, %d skipped\n", p, f, s
  }
' "$out"
exit "$status"
