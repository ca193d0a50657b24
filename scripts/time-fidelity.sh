#!/usr/bin/env bash
# Predicted against measured iteration time on this CPU host (docs/benchmarks.md, "Time:
# predicted against measured"): for each plan, `starfish simulate` predicts one steady iteration
# and `starfish-run` trains warm-up + 3 steady iterations; `starfish compare` shows both, the
# breakdown (forward, backward, recompute, moves, optimizer, collectives) and the move logs. The
# table it prints is the benchmark's result; no test asserts a time (timings are noisy here).
#   usage: scripts/time-fidelity.sh [BUILD_DIR] [OUT_DIR] [PLAN_FILTER]
# Reads: the 1-minute load average before each run (printed: measure when it is low), and each
# run's own verdict (`compare` says when other processes shared the machine).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
out="${2:-$(mktemp -d /tmp/time-fidelity.XXXXXX)}"
filter="${3:-}"
mkdir -p "$out"
starfish="$build/sim/starfish"
run="$build/exec/starfish-run"
for b in "$starfish" "$run"; do
  [ -x "$b" ] || { echo "time-fidelity: $b not built (cmake --build $build --target starfish starfish-run)" >&2; exit 2; }
done

# name | plan | ranks | extra flags for both (hardware, non-model) | iterations run (warm-up + 3 steady)
plans=(
  "tiny-chunked|exec/configs/tiny-gpt-chunked-plan.yaml|1|--non-model 1MiB|5"
  "tiny-flat|exec/configs/tiny-gpt-plan.yaml|1|--hw hwprofiles/cpu-host.yaml|4"
  "gpt2-2l-chunked|exec/configs/gpt2-small-2l-chunked-plan.yaml|1||5"
  "gpt2-2l-zero-2ranks|exec/configs/gpt2-small-2l-zero-2ranks.yaml|2||5"
)

# The machine and the BLAS kernels belong with the numbers (the CI machine has changed CPUs).
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
cpu_id="$(awk -F': ' '/^cpu family/ && !f {f=$2} /^model\t/ && !m {m=$2} END {print "family " f " model " m}' /proc/cpuinfo)"
printf 'machine: %s (%s), %s CPUs\n\n' "${cpu_model:-unknown CPU}" "$cpu_id" "$(nproc)"
# A GEMM probe before each run: tiny-gpt's twelve GEMMs (8-34 MFLOP) on one thread in CPU time,
# the median rate against what the profile's curve gives them (peak x its first point, flat up
# to 9.9 GFLOP): how fast this core computes now. Other engineers' work slows even the CPU time
# of a GEMM on this 2-vCPU guest (shared caches, memory bus, the host's scheduling), so a
# CPU/thread ratio above 1 with a probe below 1 is the machine's, not the model's.
calib="$build/exec/gemm_calibration"
profile="$root/hwprofiles/cpu-host.yaml"
profile_gflops="$(awk '/peak: \{fp32:/ {gsub(/[^0-9.]/, "", $3); peak=$3} /^      - \[/ && !f {gsub(/[],]/, "", $3); f=$3} END {printf "%.1f", peak * f}' "$profile")"
gemm_probe() {
  [ -x "$calib" ] || { echo "-"; return; }
  # The 256^3 square the tool always times first is not one of the model's: rows 3 onwards.
  "$calib" --dtype fp32 --threads 1 --clock cpu --shapes model --max-flop 4e7 --model 128,256 2>/dev/null |
    awk -F, '$1 == "gemm" && ++n > 1 {print 2 * $3 * $4 * $5 / $7 / 1e9}' | sort -g |
    awk -v ref="$profile_gflops" '{r[NR] = $1} END {if (!NR) {print "-"; exit}
      m = r[int((NR + 1) / 2)]; printf "%.0f GFLOP/s (%.2f)", m, m / ref}'
}
printf '| plan | ranks | load avg | GEMM probe (of profile) | predicted | measured wall | wall ratio | CPU/thread ratio | others CPU | machine | moves |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for entry in "${plans[@]}"; do
  IFS='|' read -r name plan ranks flags iterations <<<"$entry"
  [ -n "$filter" ] && [[ "$name" != *$filter* ]] && continue
  d="$out/$name"
  mkdir -p "$d"
  sim_flags=()
  for f in $flags; do sim_flags+=("$f"); done
  # `simulate` takes the hardware as --hw too; its move log only for chunked plans.
  moves_flag=()
  grep -q "chunk_size" "$root/$plan" && moves_flag=(--moves "$d/sim.jsonl")
  (cd "$root" && "$starfish" simulate --plan "$plan" "${sim_flags[@]}" --json "${moves_flag[@]}") >"$d/sim.json"
  probe="$(gemm_probe)"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  run_moves=()
  [ ${#moves_flag[@]} -gt 0 ] && run_moves=(--move-log "$d/run.jsonl")
  (cd "$root" && "$run" --nproc "$ranks" --bind-cores "$plan" "${sim_flags[@]}" --threads 1 --iterations "$iterations" --report "$d/run.json" \
     "${run_moves[@]}" --scratch "$d" --quiet) >"$d/run.log" 2>&1 || { echo "time-fidelity: $name: starfish-run failed (see $d/run.log)" >&2; exit 1; }
  cmp_moves=()
  if [ ${#moves_flag[@]} -gt 0 ]; then
    measured_log="$d/run.jsonl"
    [ "$ranks" -gt 1 ] && measured_log="$d/run.jsonl.rank0"
    cmp_moves=(--moves "$d/sim.jsonl" "$measured_log")
  fi
  status=0
  "$starfish" compare "$d/sim.json" "$d/run.json" "${cmp_moves[@]}" >"$d/compare.txt" || status=$?
  iteration_row="$(grep '^iteration time' "$d/compare.txt")"
  predicted="$(awk '{print $3, $4}' <<<"$iteration_row")"
  measured="$(awk '{print $5, $6}' <<<"$iteration_row")"
  ratio="$(awk '{print $7}' <<<"$iteration_row")"
  cpu_ratio="$(sed -n 's/.*, \([0-9.]*\) of the prediction/\1/p' "$d/compare.txt")"
  others="$(sed -n 's/.*other processes used \(.*\) of CPU per iteration (\([0-9]*%\) of a core).*/\2 of a core/p' "$d/compare.txt")"
  machine="dedicated"
  grep -q "^  SHARED" "$d/compare.txt" && machine="SHARED"
  moves="-"
  if [ ${#cmp_moves[@]} -gt 0 ]; then
    moves="$(sed -n 's/^move logs: //p' "$d/compare.txt")"
    [ "$status" -eq 0 ] || moves="DIVERGED: $moves"
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$ranks" "$load" "$probe" "$predicted" "$measured" "$ratio" \
    "${cpu_ratio:--}" "${others:--}" "$machine" "$moves"
done
blas="$(sed -n 's/.*"blas": "\([^"]*\)".*/\1/p' "$out"/*/run.json 2>/dev/null | sort -u | paste -sd' ')"
echo "(OpenBLAS kernels: ${blas:-not OpenBLAS}; details: $out/<plan>/compare.txt)"
