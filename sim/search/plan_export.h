#pragma once
// A plan in the words of other frameworks, so a searched plan launches outside Starfish as it is:
// Megatron-LM command-line arguments, a DeepSpeed JSON config, and Starfish's own plan file.
//
// Every argument and key written is one the framework's current source defines: the lists are
// extracted from that source into configs/frameworks/ (scripts/extract-*.py, with the commit),
// and tests/sim/search/test_export.cpp checks each emitted name against them. A plan a
// framework would refuse or run differently is refused with a one-line reason naming the plan
// field ("field 'plan.zero_stage': ..."), never silently approximated. Numbers are written in
// the shortest text that reads back to the same value (units::format_number).
#include <string>
#include <utility>
#include <vector>

#include "sim/spec/job.h"
#include "sim/spec/json_writer.h"

namespace starfish::search {

// Choices an export needs that a plan does not hold.
struct ExportOptions {
  // Where DeepSpeed's ZeRO-Infinity swaps offloaded states on each node (nvme_path); DeepSpeed's
  // own examples use /local_nvme.
  std::string nvme_path = "/local_nvme";
};

// Why Megatron-LM / DeepSpeed cannot run the plan as simulated: "" when it can, else one line
// "field 'plan.zero_stage': Megatron-LM has no ZeRO stage 3 ...". Plan-level, so the search can
// filter hundreds of thousands of plans cheaply; the Job overloads add the file:line of a plan
// loaded from a file.
std::string megatron_unsupported(const Plan& plan, const Training& training);
std::string deepspeed_unsupported(const Plan& plan, const Training& training);
std::string megatron_unsupported(const Job& job);
std::string deepspeed_unsupported(const Job& job);

// Megatron-LM (megatron/training/arguments.py) arguments: {"--tensor-model-parallel-size", "8"},
// {"--sequence-parallel", ""} (a flag), ... in launch order: parallelism, batch, precision,
// attention kernel, model shape, optimizer. Throws SpecError("--megatron: <reason>") when the plan
// is unsupported.
std::vector<std::pair<std::string, std::string>> megatron_argument_list(const Job& job);
// The same, one argument (with its value) per line ending in " \" for a launch script.
std::string megatron_arguments(const Job& job);

// A DeepSpeed config (deepspeed/runtime/config.py): batch sizes, gradient clipping,
// zero_optimization (stage, overlap_comm, offload_optimizer / offload_param), bf16/fp16,
// activation_checkpointing, optimizer, zero_allow_untested_optimizer for a ZeRO plan whose
// optimizer ZeRO has not tested. Tensor and pipeline parallel degrees live in the launcher
// script (Megatron-DeepSpeed's --tensor-model-parallel-size, PipelineModule(num_stages=)), not in
// this JSON. Throws SpecError("--deepspeed: <reason>") when the plan is unsupported.
void write_deepspeed_config(JsonWriter& w, const Job& job, const ExportOptions& options = {});
std::string deepspeed_config(const Job& job, const ExportOptions& options = {});

// The plan file Starfish itself reads back (load_plan_file), naming the model and hardware.
std::string plan_file_yaml(const Job& job, const std::string& model_path, const std::string& hardware_path);

}  // namespace starfish::search
