#!/usr/bin/env bash
# libgpuwatch.so exports exactly the entry points listed in libinject/exports.map: a name
# it exports beyond them would take the place of the job's own function of that name, and a
# listed name it lacks is a hook that no longer binds. Usage: check_exports.sh LIBRARY
set -euo pipefail
lib=$1
map="$(dirname "$0")/../libinject/exports.map"
want=$(sed -n 's/^ *\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map" | sort)
have=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort)
extra=$(comm -13 <(echo "$want") <(echo "$have"))
missing=$(comm -23 <(echo "$want") <(echo "$have"))
[ -z "$extra" ] || echo "exported but not in exports.map: $(echo $extra)"
[ -z "$missing" ] || echo "in exports.map but not exported: $(echo $missing)"
[ -z "$extra$missing" ] && echo "$(echo "$have" | wc -l) exported names, all in exports.map" && exit 0
exit 1
