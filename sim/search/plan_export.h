#pragma once
// A plan in the words of other frameworks, so a searched plan launches outside Starfish as it is:
// Megatron-LM command-line arguments, Megatron-Bridge recipe overrides, a DeepSpeed JSON config,
// a torchtitan recipe (a Python module), and Starfish's own plan file.
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
// torchtitan needs the model as well (its llama3 decoder; no weight tying under PP).
std::string torchtitan_unsupported(const Plan& plan, const Training& training, const Model& model);
std::string torchtitan_unsupported(const Job& job);
// What no plan changes: a model the framework's export cannot describe ("" when it can).
std::string megatron_model_unsupported(const Model& model);
std::string deepspeed_model_unsupported(const Model& model);
std::string torchtitan_model_unsupported(const Model& model);

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

// Megatron-Bridge (NVIDIA-NeMo/Megatron-Bridge) runs Megatron-core from a recipe's
// ConfigContainer with trailing KEY=VALUE overrides (scripts/training/run_recipe.py). The export
// starts from vanilla_gpt_pretrain_config (a bare GPTModelProvider) and sets every field the plan
// decides, under Bridge's names for what megatron_argument_list writes: ("model.tensor_model_
// parallel_size", "8"), ("mixed_precision", "bf16_mixed"), ... Megatron-core plans only, in bf16
// or fp16, fp8 only as its delayed-scaling hybrid recipe; throws SpecError("--megatron-bridge:
// <reason>") otherwise. tests/sim/search/test_export.cpp checks every key against
// configs/frameworks/megatron-bridge-overrides.txt.
std::string megatron_bridge_unsupported(const Plan& plan, const Training& training);
std::string megatron_bridge_unsupported(const Job& job);
// What no plan changes: the model itself (multi-head latent attention).
std::string megatron_bridge_model_unsupported(const Model& model);
std::vector<std::pair<std::string, std::string>> megatron_bridge_overrides(const Job& job);
// The run_recipe.py command line, one override per line ending in " \".
std::string megatron_bridge_command(const Job& job);

// torchtitan (github.com/pytorch/torchtitan) runs a job from a Python function returning its
// Trainer.Config, named by `--module M --config F` (torchtitan/config/README.md: its TOML files
// are gone and its `--section.option` flags frozen). The export is such a module, starfish_plan.py,
// whose function starfish_plan builds the model at its shape with torchtitan's llama3 builders
// and sets what the plan decides: FSDP2 (ZeRO-3: data_parallel_shard_degree with
// fsdp_reshard_after_forward "always"; ZeRO-2: "never"; ZeRO-0: data_parallel_replicate_degree),
// CPU offload, TP with sequence parallelism, PP with its schedule, micro-batches and every model
// chunk's layers, full activation checkpointing, precision, optimizer, batch in tokens.
// `imports` and `keywords` list every name it takes from torchtitan and every keyword it
// passes, for tests/sim/search/test_export.cpp to check against configs/frameworks/
// torchtitan-config.txt. Throws SpecError("--torchtitan: <reason>") when unsupported.
inline constexpr const char* kTorchtitanCommit = "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a";  // the schema's
struct TorchtitanRecipe {
  std::string text;                                          // the module
  std::vector<std::pair<std::string, std::string>> imports;  // (module, name)
  struct Keyword {
    std::string callee;  // as written: "ParallelismConfig", "llama3._build_llama3_layers"
    std::string name, value;
  };
  std::vector<Keyword> keywords;
};
TorchtitanRecipe torchtitan_recipe(const Job& job);
// The torchrun line that runs the module on each node.
std::string torchtitan_launch(const Job& job);

// The plan file Starfish itself reads back (load_plan_file), naming the model and hardware.
std::string plan_file_yaml(const Job& job, const std::string& model_path, const std::string& hardware_path);

}  // namespace starfish::search
