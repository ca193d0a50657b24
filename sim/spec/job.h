#pragma once
// A complete job: model, cluster, training and plan, checked against one another.
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

struct Job {
  Model model;
  Cluster cluster;
  Training training;
  Plan plan;  // after validate(): dp is resolved (never 0)

  int dp() const { return plan.dp; }
  int64_t micro_batches() const;  // per pipeline per iteration: global / (micro * dp)
};

// Checks every cross-spec rule and resolves plan.dp; throws SpecError naming the offending
// field's file:line. Rules: TP divides heads, kv_heads and the FFN; PP * virtual stages divides
// layers; TP * PP * DP equals the cluster's GPUs; the global batch divides into micro-batches
// over DP; interleaving needs virtual stages > 1 and micro-batches divisible by PP; offload to
// NVMe needs an NVMe; chunk-runtime plans have no pipeline parallelism; the dtype is one the GPU
// supports.
Job make_job(Model model, Cluster cluster, Training training, Plan plan);

// The plan Starfish assumes when none is given: pure data parallelism over every GPU, no ZeRO.
Plan default_plan();

}  // namespace starfish
