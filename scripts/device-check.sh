#!/usr/bin/env bash
# One command for a GPU machine: builds the executor against that machine's LibTorch (with CUDA),
# runs the executor's tests (the Torch Backend then uses cuda:LOCAL_RANK, pinned host buffers and a
# copy stream), a two-rank run that reports its collectives (nccl or gloo), its benchmarks and the
# GEMM calibration (gemm_calibration's CSV, for `starfish calibrate`: docs/calibration.md), and
# writes everything to $OUT (or ./device-check-out); then GPT-2 small's GEMM shapes and one
# predicted-against-measured comparison of GPT-2 small with eviction (time, moves, breakdown).
# Budget: under 5 minutes on a 16-core machine. It needs python3 with torch (CUDA build), cmake, ninja, yaml-cpp,
# Boost.Graph and GoogleTest.
#   usage: scripts/device-check.sh            (from the repository root)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/device-check-out}"
mkdir -p "$out"
build="$root/build-device"
log() { echo "[device-check] $*" | tee -a "$out/summary.txt"; }
: >"$out/summary.txt"

torch_dir="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)/Torch"
if [ ! -f "$torch_dir/TorchConfig.cmake" ]; then
  log "no LibTorch from python3 (import torch failed): cannot build the executor"; exit 2
fi
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' \
  | tee -a "$out/summary.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$out/summary.txt"

# pip's LibTorch is built with the pre-C++11 ABI on some versions: match it, or linking fails.
abi="$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')"
jobs="$(nproc)"
# pip's LibTorch keeps nccl.h in the nvidia-nccl wheel, not with its own headers: exec/CMakeLists.txt
# needs it to detect c10d NCCL (and then builds the NCCL path).
nccl_include="$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)"
log "configure (Torch_DIR=$torch_dir, CXX11 ABI $abi, nccl.h in ${nccl_include:-the CUDA toolkit})"
if ! cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTARFISH_EXEC=ON -DSTARFISH_CUDA=ON \
     -DSTARFISH_GUI=OFF -DSTARFISH_BENCH=ON -DTorch_DIR="$torch_dir" ${nccl_include:+-DSTARFISH_NCCL_INCLUDE_DIR="$nccl_include"} \
     -DCMAKE_CXX_FLAGS="-D_GLIBCXX_USE_CXX11_ABI=$abi" >"$out/configure.log" 2>&1; then
  log "configure failed (see configure.log)"; exit 3
fi
grep -E "Starfish|CUDA code paths|c10d NCCL" "$out/configure.log" | tee -a "$out/summary.txt"
log "build with $jobs jobs"
exec_tests=$(cd "$root/tests/exec" && ls test_*.cpp | sed 's/^test_/test_exec_/; s/\.cpp$//')
# The tests also need `starfish` (the simulator-parity test runs `starfish compare`).
if ! timeout 240 ninja -C "$build" -j"$jobs" starfish starfish-run exec_overhead exec_max_model gemm_calibration $exec_tests \
     >"$out/build.log" 2>&1; then
  log "build failed or timed out (see build.log)"; tail -30 "$out/build.log" >>"$out/summary.txt"; exit 4
fi

status=0
for t in $exec_tests; do
  if timeout 60 "$build/tests/exec/$t" --gtest_brief=1 >"$out/$t.log" 2>&1; then
    log "$t: passed"
  else
    log "$t: FAILED (see $t.log)"; status=1
  fi
done
# Merge the per-test logs into one file so $OUT stays within 8 files.
cat "$out"/test_exec_*.log >"$out/tests.log" 2>/dev/null && rm -f "$out"/test_exec_*.log

# Which collectives a real two-rank run used (its report's "collectives"): nccl needs the c10d
# NCCL build (configure, above) and a GPU per rank; with fewer GPUs the ranks share them over gloo.
gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"
if timeout 90 "$build/exec/starfish-run" --nproc 2 "$root/exec/configs/tiny-gpt-zero-2ranks.yaml" --iterations 3 --quiet \
     --report "$build/zero-2ranks.json" >"$build/zero-2ranks.log" 2>&1; then
  used="$(grep -o '"collectives": *"[a-z]*"' "$build/zero-2ranks.json" | head -1 | sed 's/.*"\([a-z]*\)"$/\1/')"
  log "starfish-run --nproc 2 (ZeRO, chunked): collectives ${used:-unknown} ($gpus GPU(s) here)"
else
  log "starfish-run --nproc 2 (ZeRO, chunked): FAILED"; tail -20 "$build/zero-2ranks.log" >>"$out/summary.txt"; status=1
fi

log "benchmarks"
{
  timeout 60 "$build/exec/exec_overhead" 8 512 5
  timeout 60 "$build/exec/exec_max_model" 64 256 64
} >"$out/bench.txt" 2>&1 || status=1
cat "$out/bench.txt" >>"$out/summary.txt"

# GEMM efficiency and streaming bandwidth of this GPU, as `starfish calibrate --measurements` reads
# them. bf16 is what the hwprofiles' curves describe; its largest shapes take ~1e13 FLOP.
log "gemm calibration (bf16)"
name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//')"
csv="$out/gemm-${name:-device}-bf16.csv"
if timeout 150 "$build/exec/gemm_calibration" --dtype bf16 >"$csv" 2>"$out/gemm_calibration.err"; then
  log "gemm_calibration: $(($(wc -l <"$csv") - 1)) measurements in $(basename "$csv")"
else
  log "gemm_calibration: FAILED (see gemm_calibration.err)"; status=1
fi
cat "$out/gemm_calibration.err" >>"$out/summary.txt" 2>/dev/null && rm -f "$out/gemm_calibration.err"
# The CSV must be what `starfish calibrate` reads: fit it against the bundled profile with the
# same peak (H100 and H200 SXM share 989 TFLOP/s dense bf16; other GPUs have no profile here).
case "$name" in
  *H100*|*H200*)
    if "$build/sim/starfish" calibrate --hw dgx-h100 --measurements "$csv" --out "$out/dgx-h100-calibrated.yaml" --force \
         >>"$out/summary.txt" 2>&1; then
      log "starfish calibrate: fitted curve in dgx-h100-calibrated.yaml"
      grep -A12 "matmul_efficiency" "$out/dgx-h100-calibrated.yaml" | tee -a "$out/summary.txt"
    else
      log "starfish calibrate: FAILED on $(basename "$csv")"; status=1
    fi ;;
  *) log "starfish calibrate: no bundled profile for $name; fit the CSV by hand (docs/calibration.md)" ;;
esac

# Time fidelity on the GPU (docs/benchmarks.md, "Time: predicted against measured"): GPT-2 small
# (12 layers, 4 x 1024 tokens) in the chunk runtime with a 2 GiB "GPU" budget, so that it evicts,
# predicted with the calibrated profile (one GPU of it) and measured; compare shows moves, time
# and the breakdown. The model's own GEMM shapes are measured first (forward, and the transposed
# operands of backward and of the 50257-token head) into the same CSV format.
calibrated="$out/dgx-h100-calibrated.yaml"
if [ -f "$calibrated" ]; then
  log "time fidelity: gpt2-small, chunked, 2 GiB budget"
  timeout 60 "$build/exec/gemm_calibration" --dtype bf16 --max-flop 1e12 --model 768,4096,50257 >"$out/gemm-gpt2-shapes.csv" 2>&1 || status=1
  fid="$build/fidelity"
  mkdir -p "$fid"
  # One GPU of the node, its memory cut to 2 GiB (the first memory/reserved lines are the GPU's).
  sed -e 's/^  gpus: .*/  gpus: 1/' -e '0,/^    memory: /s/^    memory: .*/    memory: 2GiB/' \
    -e '0,/^    reserved: /s/^    reserved: .*/    reserved: 256MiB/' -e 's/^nodes: .*/nodes: 1/' "$calibrated" >"$fid/one-gpu.yaml"
  cat >"$fid/plan.yaml" <<PLAN
model: $root/configs/models/gpt2-small.yaml
hardware: one-gpu.yaml
training: {global_batch: 4, dtype: bf16, optimizer: adamw, learning_rate: 0.0003, weight_decay: 0.01, grad_clip: 1.0, iterations: 5, seed: 7}
plan: {micro_batch: 4, chunk_size: 40000000, recompute: full}
PLAN
  if "$build/sim/starfish" simulate --plan "$fid/plan.yaml" --json --moves "$fid/sim.jsonl" >"$fid/sim.json" 2>"$fid/sim.err" &&
     timeout 120 "$build/exec/starfish-run" "$fid/plan.yaml" --iterations 5 --quiet --report "$fid/run.json" --move-log "$fid/run.jsonl" \
       --scratch "$fid" >"$fid/run.log" 2>&1; then
    "$build/sim/starfish" compare "$fid/sim.json" "$fid/run.json" --moves "$fid/sim.jsonl" "$fid/run.jsonl" | tee "$out/fidelity.txt" \
      >>"$out/summary.txt" || status=1
  else
    log "time fidelity: FAILED"; cat "$fid/sim.err" >>"$out/summary.txt"; tail -20 "$fid/run.log" >>"$out/summary.txt"; status=1
  fi
fi
log "done, status $status"
exit $status
