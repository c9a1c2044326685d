#!/usr/bin/env bash
# Every GPUWATCH_* variable the library, the collector or the command reads has a row in
# README.md's configuration table (tests' own variables, GPUWATCH_TEST_*, excepted).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
for v in $(grep -rhoE '"GPUWATCH_[A-Z0-9_]+"' libinject collector cli | tr -d '"' | sort -u); do
  case "$v" in GPUWATCH_TEST_*) continue ;; esac
  if ! grep -q "^| \`$v\` |" README.md; then
    echo "README.md's configuration table has no row for $v"
    missing=1
  fi
done
exit $missing
