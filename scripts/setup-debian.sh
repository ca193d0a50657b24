#!/usr/bin/env bash
# Installs every Debian 12 package Starfish needs to build and test. Works either way: as root
# (a minimal image or CI, where there is no sudo) it runs apt-get itself; as any other user it
# runs apt-get through sudo. `--dry-run` prints the commands instead of running them.
# clang and its runtime (libFuzzer, ASan, UBSan) build the `sanitize` preset's fuzz targets.
# nlohmann-json3-dev (JSON parsing and escaping), libcli11-dev (the command-line parser of
# starfish and starfish-run) and libfmt-dev (number formatting); Boost.Asio's thread pool (the
# search's) comes with libboost-graph-dev's Boost headers.
# CUDA and NCCL are not Debian packages: install the CUDA Toolkit from NVIDIA for STARFISH_CUDA.
# libopenblas0-openmp: Debian's LibTorch calls the BLAS behind the libblas.so.3 alternative, which
# is otherwise the netlib reference BLAS (single-threaded, unvectorised: ~4 GFLOP/s here). OpenBLAS
# takes the alternative over (priority 95 against 10, in auto mode) and is what users train on;
# the OpenMP build follows LibTorch's at::set_num_threads (one OpenMP runtime, libgomp), where
# the pthread build would start its own threads beside LibTorch's. hwprofiles/cpu-host.yaml is
# measured with it (docs/benchmarks.md).
set -euo pipefail
dry_run=false
case "${1:-}" in
  "") ;;
  --dry-run) dry_run=true ;;
  *) echo "usage: bash scripts/setup-debian.sh [--dry-run]" >&2; exit 2 ;;
esac
packages=(
  build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libboost-graph-dev libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libtorch-dev libgloo-dev libopenblas0-openmp
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev
  xvfb xauth
  clang libclang-rt-14-dev
)
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo > /dev/null; then
    echo "setup-debian.sh: not root and no sudo: run it as root (su -c 'bash scripts/setup-debian.sh')" >&2
    exit 1
  fi
  as_root=(sudo)
fi
run() {
  if $dry_run; then echo "$*"; else "$@"; fi
}
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${packages[@]}"
