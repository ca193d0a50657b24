#pragma once
// The search's analytic tier: starfish::estimate() with everything that does not depend on the
// plan computed once.
//
// estimate() calls shard_parameters() for every pipeline stage, which builds every parameter
// tensor of the stage with its name (std::string) -- about 100 us per call for GPT-3 175B, 10x
// over the search's budget. Here the per-stage parameter counts are cached per (TP, PP, virtual
// stages) and the model's FLOPs per recompute mode, and the plan goes through the same
// arithmetic (sim/cost's estimate_into); a plan that overflows memory skips the time model.
// tests/sim/search/test_analytic.cpp checks both give identical numbers.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "sim/cost/chunk_layout.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
#include "sim/search/plan_space.h"
#include "sim/spec/job.h"

namespace starfish::search {

class AnalyticEvaluator {
 public:
  AnalyticEvaluator(const Model& model, const Cluster& cluster, const Training& training);

  // Caches the shard parameter counts of these plans' (TP, PP, v, stage layout) shapes and the
  // chunk footprints of their chunked plans (TP, chunk size, ZeRO group); call before sharing
  // the evaluator between threads (evaluate() on an unprepared shape computes it, slowly).
  void prepare(const std::vector<Candidate>& candidates);

  // Fills `out` as estimate() would for the job of `plan` (dp resolved, plan valid). With
  // `memory_only_if_rejected`, a plan that does not fit stops after the memory model (time,
  // throughput and FLOPs stay 0); with `explain`, why_not carries estimate()'s text.
  void evaluate(const Plan& plan, Estimate& out, bool memory_only_if_rejected = false, bool explain = true) const;

  // A lower bound of the memory of every plan of `plan`'s family (same TP, PP, v, DP, ZeRO,
  // offload and chunk size; any micro-batch, schedule, recompute or SP): the model states alone,
  // without activations or buffers. GPU: the most loaded stage (estimate() reports the stage
  // with the most GPU memory, which holds at least its own states); CPU and NVMe: the least
  // loaded stage times the GPUs per node (estimate() scales one stage's host share by them).
  struct StatesBound {
    double gpu_bytes = 0, cpu_bytes = 0, nvme_bytes = 0;
  };
  StatesBound states_lower_bound(const Plan& plan) const;

  const Model& model() const { return model_; }
  const Cluster& cluster() const { return cluster_; }
  const Training& training() const { return training_; }

 private:
  // tp, pp, v, first/last stage layers, ep, etp, embedding/loss slots
  using ShapeKey = std::tuple<int, int, int, int, int, int, int, bool, bool>;
  // Parameters per stage of `plan`'s shape: cached, or computed into `scratch` (an explicit
  // per-stage layout is never cached).
  const std::vector<double>& stage_params(const Plan& plan, std::vector<double>& scratch) const;
  // A chunked plan's chunk footprint: cached, or computed into `scratch`; null for a static plan.
  using ChunkKey = std::tuple<int, int64_t, int>;  // tp, chunk elements, ZeRO group (1: unsharded)
  static ChunkKey chunk_key(const Plan& plan) { return {plan.tp, plan.chunk_elements, plan.zero_stage >= 1 ? plan.dp : 1}; }
  const ChunkFootprint* chunk_footprint_of(const Plan& plan, ChunkFootprint& scratch) const;

  Model model_;
  Cluster cluster_;
  Training training_;
  ParamCount params_;
  IterationFlops flops_[3];  // per Recompute value
  std::map<ShapeKey, std::vector<double>> stage_params_;
  std::map<ChunkKey, ChunkFootprint> chunk_footprints_;
};

// The memory headroom of a tier as a fraction of its capacity (negative when over).
double headroom_fraction(const TierUse& use);

}  // namespace starfish::search
