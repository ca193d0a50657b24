#pragma once
// The iteration of a plan whose model states stay where the plan places them (GPU, or CPU/NVMe
// with copies): Megatron-LM, DeepSpeed and FSDP's way.
//
// Symmetry reduction: the TP ranks of a stage do identical work, and so do the DP replicas, so
// by default one "lead" GPU per pipeline stage (TP rank 0 of replica 0) carries the compute
// tasks; TP collectives run over the stage's whole TP group, and the DP collectives of every TP
// rank run over their DP groups (so they share NICs and switches as they really do). Where the
// symmetry holds this gives the full cluster's timeline at a fraction of the tasks.
//
// Per stage, the ops of its schedule (sim/cost/pipeline_order.h) are chained in order on the lead's
// compute stream; each op is its layers in order, each layer a compute task followed by its
// TP collective (the layer's two all-reduces, or SP's all-gather/reduce-scatter pairs, of the
// same volume). Forward ops wait for the previous virtual stage's activation (a PP transfer),
// backward ops for the next one's gradient. After a virtual stage's last backward its grads are
// reduced over DP (all-reduce, or reduce-scatter with ZeRO >= 1), then the optimizer step runs
// where the optimizer states live (GPU, or CPU with PCIe copies, NVMe reads/writes), and ZeRO
// >= 1 all-gathers the updated params. ZeRO-3 all-gathers each layer's params before it
// computes, and offloaded params are copied in before each op, one op ahead (prefetch).
#include "sim/schedule/iteration.h"

namespace starfish::schedule {

// (The chunked plans have their own builder: iteration_builder_for picks.)
BuiltIteration build_static_iteration(const Job& job, des::Engine& engine, const BuildOptions& options);

}  // namespace starfish::schedule
