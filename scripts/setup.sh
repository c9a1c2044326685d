#!/usr/bin/env bash
# Installs every package the build and the tests need, from Debian's registry only.
# The CUDA toolkit (headers, CUPTI, NVTX, NCCL headers, nvcc) is expected under /usr/local/cuda.
set -euo pipefail
pkgs=(cmake g++ make protobuf-compiler libprotobuf-dev libspdlog-dev nlohmann-json3-dev
      libcli11-dev catch2 libbenchmark-dev zlib1g-dev
      chromium   # headless, for the report.html test (tests/e2e/report_html_test.cpp)
      prometheus curl   # the Prometheus tests: promtool, a real server, a client
      python3           # a CPython job in the call-site test (tests/e2e/python_item.py)
      python3-jsonschema)  # summary.json against docs/summary.schema.json (tests/schema/)
# scripts/fuzz.sh and scripts/sanitize_unit.sh (run by test.sh when GPUWATCH_FUZZ_SECONDS > 0
# or GPUWATCH_SANITIZE_UNIT=1) need clang, libFuzzer and the sanitizer runtimes.
if [ "${GPUWATCH_FUZZ_SECONDS:-0}" -gt 0 ] || [ "${GPUWATCH_SANITIZE_UNIT:-0}" = 1 ]; then
  pkgs+=(clang-14 libclang-rt-14-dev)
fi
# The launcher tests (tests/e2e/launchers_test.cpp): Open MPI's mpirun, and a one-node Slurm
# the test starts and stops itself (munged, slurmctld, slurmd; srun and sinfo from
# slurm-client). Without their recommends: 26 packages instead of 55.
launcher_pkgs=(openmpi-bin munge slurmctld slurmd slurm-client)
missing=() missing_launchers=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
for p in "${launcher_pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing_launchers+=("$p"); done
if [ $((${#missing[@]} + ${#missing_launchers[@]})) -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  [ ${#missing[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
  [ ${#missing_launchers[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_launchers[@]}"
fi
[ -x /usr/local/cuda/bin/nvcc ] || { echo "setup: the CUDA toolkit is missing at /usr/local/cuda" >&2; exit 1; }
