#!/usr/bin/env bash
# The collector's stages include only downwards (docs/ARCHITECTURE.md):
#   common < ingest, import < interpret < analyze < report, trace, live < jobs < service < main
# (report, trace and live are views of the same level and include none of each other's
# headers but trace -> nothing of report). compare/ (`gpuwatch diff`) reads summary.json
# documents, not the collector's structs: it includes common/ and report/ (the page's
# helpers) only, and nothing includes it. interpret/ and analyze/ read decoded frames and
# events, whichever source sent them: they include nothing of ingest/ or import/ (what both
# sides need, e.g. moving a time onto another clock, lives in common/). Prints each include
# that breaks this; exit 1 if any.
set -euo pipefail
cd "$(dirname "$0")/../collector"
rank() {
  case "$1" in
    common) echo 0 ;; ingest|import) echo 1 ;; interpret) echo 2 ;; analyze) echo 3 ;;
    report|trace|live) echo 4 ;; jobs|compare) echo 5 ;; service) echo 6 ;; *) echo 9 ;;
  esac
}
bad=0
for f in $(find common ingest import interpret analyze report trace live jobs compare service -name '*.h' -o -name '*.cpp' | sort); do
  from=${f%%/*}
  while read -r inc; do
    to=${inc%%/*}
    [ "$to" = "$inc" ] && continue  # proto/ headers and the like: below every stage
    rf=$(rank "$from"); rt=$(rank "$to")
    if [ "$rt" = 9 ]; then continue; fi
    if [ "$rt" -gt "$rf" ] || { [ "$rt" = 4 ] && [ "$rf" = 4 ] && [ "$to" != "$from" ]; }; then
      echo "$f includes $inc: $from may not include $to"
      bad=1
    fi
    if { [ "$from" = interpret ] || [ "$from" = analyze ]; } && { [ "$to" = ingest ] || [ "$to" = import ]; }; then
      echo "$f includes $inc: $from reads decoded frames and events, never ingest/ or import/"
      bad=1
    fi
    if { [ "$from" = compare ] && [ "$to" != compare ] && [ "$to" != common ] && [ "$to" != report ]; } ||
       { [ "$to" = compare ] && [ "$from" != compare ]; }; then
      echo "$f includes $inc: compare/ reads summary.json only (common/, report/), and no stage includes it"
      bad=1
    fi
  done < <(grep -o '#include "[^"]*"' "$f" | sed 's/#include "//; s/"$//')
done
exit $bad
