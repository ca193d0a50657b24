#pragma once
// A plan in the words of other frameworks, so a searched plan can be run outside Starfish:
// Megatron-LM command-line arguments, a DeepSpeed JSON config, and Starfish's own plan file.
// A plan a framework cannot express (Megatron: ZeRO-2/3, offload, chunks, GPipe; DeepSpeed: the
// chunk runtime, interleaving) is refused with a SpecError that says what is missing, never
// silently approximated.
#include <string>

#include "sim/spec/job.h"

namespace starfish::search {

// Why Megatron-LM / DeepSpeed cannot run the job as planned; "" when it can.
std::string megatron_unsupported(const Job& job);
std::string deepspeed_unsupported(const Job& job);

// "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 ... --bf16", one argument
// (with its value) per line ending in " \" for pasting into a launch script. Includes the
// model shape (--num-layers, --hidden-size, --num-attention-heads, --seq-length, ...).
std::string megatron_arguments(const Job& job);

// A DeepSpeed config: train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, zero_optimization (stage, offload_optimizer / offload_param with
// device cpu or nvme), bf16/fp16, activation_checkpointing for full recompute. TP and PP come
// from the launcher (Megatron-DeepSpeed), so they are recorded under "starfish" for reference.
std::string deepspeed_config(const Job& job);

// The plan file Starfish itself reads back (load_plan_file), naming the model and hardware.
std::string plan_file_yaml(const Job& job, const std::string& model_path, const std::string& hardware_path);

}  // namespace starfish::search
