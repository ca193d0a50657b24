#include "sim/search/variants.h"

#include <stdexcept>

namespace starfish::search {
namespace {

// Plans without Megatron's newer mechanisms: one pipeline stage, no sequence parallelism, and
// activation checkpointing whole or not at all (selective recompute is Megatron's, 2022).
void no_pipeline_or_megatron_extras(SearchSpace& s) {
  s.pp = {1};
  s.schedules = {Schedule::one_f_one_b};
  s.sequence_parallel = {false};
  s.recompute = {Recompute::none, Recompute::full};
}

}  // namespace

SystemVariant system_variant(VariantKind kind, bool chunk_nvme) {
  SystemVariant v;
  v.kind = kind;
  SearchSpace& s = v.space;
  switch (kind) {
    case VariantKind::any:
      v.name = "any plan";
      v.key = "any";
      return v;
    case VariantKind::patrickstar:
      v.name = "PatrickStar-style";
      v.key = "patrickstar";
      no_pipeline_or_megatron_extras(s);
      s.tp = {1};
      s.zero_stages = {3};  // chunks sharded over the data-parallel ranks
      s.chunk_elements = {int64_t{1} << 25, int64_t{1} << 26, int64_t{1} << 27};
      s.param_tiers = {Tier::gpu, Tier::cpu};
      s.grad_tiers = {Tier::gpu, Tier::cpu};
      s.optimizer_tiers = {Tier::gpu, Tier::cpu};
      if (chunk_nvme)
        for (auto* tiers : {&s.param_tiers, &s.grad_tiers, &s.optimizer_tiers}) tiers->push_back(Tier::nvme);
      // use_cpu_embedding, on by default in PatrickStar (patrickstar/runtime/__init__.py) and in
      // its benchmark (examples/benchmark/run_benchmark.sh: CPU_EBD=1); the search keeps it where
      // make_job admits it (an untied model) and it pays.
      s.cpu_embedding = {false, true};
      s.framework = Framework::starfish;
      return v;
    case VariantKind::zero_offload:
      v.name = "DeepSpeed ZeRO-Offload";
      v.key = "zero-offload";
      no_pipeline_or_megatron_extras(s);
      s.zero_stages = {2};
      s.chunk_elements = {0};
      s.param_tiers = {Tier::gpu};
      s.grad_tiers = {Tier::cpu};
      s.optimizer_tiers = {Tier::cpu};
      s.framework = Framework::deepspeed;
      return v;
    case VariantKind::zero_infinity:
      v.name = "DeepSpeed ZeRO-Infinity";
      v.key = "zero-infinity";
      no_pipeline_or_megatron_extras(s);
      s.zero_stages = {3};
      s.chunk_elements = {0};
      s.framework = Framework::deepspeed;
      return v;
    case VariantKind::megatron_3d:
      v.name = "Megatron 3D";
      v.key = "megatron-3d";
      s.zero_stages = {0, 1};  // 1 = the distributed optimizer
      s.chunk_elements = {0};
      s.param_tiers = {Tier::gpu};
      s.grad_tiers = {Tier::gpu};
      s.optimizer_tiers = {Tier::gpu};
      s.framework = Framework::megatron_lm;
      return v;
  }
  throw std::logic_error("system_variant: unknown kind");
}

std::vector<SystemVariant> all_system_variants(bool chunk_nvme) {
  std::vector<SystemVariant> out;
  for (VariantKind k : {VariantKind::any, VariantKind::patrickstar, VariantKind::zero_offload, VariantKind::zero_infinity,
                        VariantKind::megatron_3d})
    out.push_back(system_variant(k, chunk_nvme));
  return out;
}

}  // namespace starfish::search
