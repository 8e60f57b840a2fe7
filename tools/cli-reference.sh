#!/bin/sh
# Prints the README's CLI reference from the commands' own --help: for each
# command `mil --help` lists (after that list), its usage lines and its options (the lines of
# the help that start with "  -", with their continuation lines).
# tests/cli/readme_cli.sh checks that README.md holds exactly this text
# between its cli-reference markers; after changing a command's help, run
#   sh tools/cli-reference.sh build/mil
# and paste the output there.
MIL=${1:-build/mil}
echo '```'
"$MIL" --help | sed -n '/^commands:/,/^$/p' | sed '$d'
echo
"$MIL" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p' | while read -r c; do
  "$MIL" "$c" --help | awk '
    /^usage: / { u = 1 }
    u && /^$/ { u = 0 }
    u { print substr($0, 8); next }
    /^  -/ { o = 1; print "  " $0; next }
    o && /^    / { print "  " $0; next }
    { o = 0 }
  '
  echo
done | sed '$d'
echo '```'
