#pragma once
// Training systems as plan spaces: what each one can really do, so that `maxsize` compares a
// system with another on what each would run, not on plans neither has. Each variant names the
// framework whose traits its plans get (sim/cost/framework.h) and restricts the search space
// (plan_space.h) to that system's mechanisms, each restriction with its source:
//
//  - PatrickStar-style: data parallelism over chunked heterogeneous memory (GPU + CPU), chunks
//    sharded over the ranks ZeRO-3 style, activation checkpointing on or off; no tensor or
//    pipeline parallelism (PatrickStar has neither: patrickstar/runtime/engine.py wraps a
//    plain DDP-style model), no NVMe unless asked (PatrickStar keeps chunks on GPU and CPU
//    only, patrickstar/core/chunk_list.py), the embeddings on the CPU or in the chunks
//    (use_cpu_embedding; a tied output head keeps them in the chunks). Run by the chunk runtime
//    (framework `starfish`).
//  - DeepSpeed ZeRO-Offload (Ren et al., ATC 2021): ZeRO-2 with the fp16 params on the GPU and
//    the gradients *and* optimizer states on the CPU, stepped by CPU Adam; combinable with
//    Megatron tensor parallelism (the paper's model-parallel runs), not with pipelining
//    (DeepSpeed's pipeline engine takes ZeRO-1 at most); DeepSpeed's activation checkpointing.
//  - DeepSpeed ZeRO-Infinity (Rajbhandari et al., SC 2021): ZeRO-3, params, grads and optimizer
//    states anywhere on GPU / CPU / NVMe (its NVMe offload needs an NVMe); tensor parallelism
//    allowed, no pipelining.
//  - Megatron 3D: TP x PP x DP with the distributed optimizer (ZeRO-1) or none, every state on
//    the GPU, sequence parallelism and selective or full recompute (Megatron-LM, Narayanan 2021;
//    Korthikanti 2022).
//  - any plan: every plan of the default space.
#include <string>
#include <vector>

#include "sim/search/plan_space.h"

namespace starfish::search {

enum class VariantKind { any, patrickstar, zero_offload, zero_infinity, megatron_3d };

struct SystemVariant {
  VariantKind kind = VariantKind::any;
  const char* name = "";   // as printed: "PatrickStar-style"
  const char* key = "";    // as in files and JSON: "patrickstar"
  SearchSpace space;
};

// `chunk_nvme`: let PatrickStar-style chunks spill to NVMe (only when asked).
SystemVariant system_variant(VariantKind kind, bool chunk_nvme = false);

// Every variant, in the order maxsize prints them.
std::vector<SystemVariant> all_system_variants(bool chunk_nvme = false);

}  // namespace starfish::search
