#!/usr/bin/env bash
# Installs every Debian 12 package Starfish needs to build and test (run as root, or with sudo).
# clang and its runtime (libFuzzer, ASan, UBSan) build the `sanitize` preset's fuzz targets.
# CUDA and NCCL are not Debian packages: install the CUDA Toolkit from NVIDIA for STARFISH_CUDA.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-debian.sh: run as root (sudo bash scripts/setup-debian.sh)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  build-essential cmake ninja-build pkg-config git \
  libyaml-cpp-dev libboost-graph-dev libgtest-dev libgmock-dev libbenchmark-dev \
  libtorch-dev libgloo-dev \
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libxkbcommon-dev \
  xvfb xauth \
  clang libclang-rt-14-dev
