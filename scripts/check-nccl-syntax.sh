#!/usr/bin/env bash
# Compiles (syntax only) the executor's CUDA + NCCL code paths against the LibTorch headers of
# a CPU-only machine: exec/dist.cpp's ProcessGroupNCCL groups, and the CUDA paths of the Torch
# backend and the chunk store. Debian's LibTorch ships ProcessGroupNCCL.hpp but not the
# generated c10/cuda/impl/cuda_cmake_macros.h, so an empty one is supplied; nccl.h comes from the
# CUDA toolkit. Not part of CI (the build never defines USE_C10D_NCCL without a LibTorch that
# links NCCL, see exec/CMakeLists.txt); run it after changing those paths.
#   usage: scripts/check-nccl-syntax.sh [CUDA include dir, default /usr/local/cuda/include]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cuda_include="${1:-/usr/local/cuda/include}"
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
mkdir -p "$stub/c10/cuda/impl"
echo "#pragma once" >"$stub/c10/cuda/impl/cuda_cmake_macros.h"
status=0
for f in exec/dist.cpp exec/torch_backend.cpp exec/chunk_store.cpp; do
  if g++ -std=c++20 -fsyntax-only -Wall -Wextra -DUSE_C10D_GLOO -DUSE_DISTRIBUTED -DUSE_C10D_NCCL -DSTARFISH_WITH_CUDA=1 \
       -I"$root" -isystem "$stub" -isystem /usr/include/torch/csrc/api/include -isystem "$cuda_include" "$root/$f"; then
    echo "$f: ok"
  else
    echo "$f: FAILED"; status=1
  fi
done
exit $status
