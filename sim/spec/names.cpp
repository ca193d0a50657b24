// Text names of the spec enums, as written in YAML.
#include <utility>

#include "sim/spec/collective_kind.h"
#include "sim/spec/dtype.h"
#include "sim/spec/hardware.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace starfish {

const char* to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8: return "fp8";
  }
  return "?";
}

bool parse_dtype(const std::string& text, DType& out) {
  for (DType t : {DType::fp32, DType::tf32, DType::fp16, DType::bf16, DType::fp8})
    if (text == to_string(t)) {
      out = t;
      return true;
    }
  return false;
}

const char* to_string(NvlinkTopology t) {
  switch (t) {
    case NvlinkTopology::switched: return "switch";
    case NvlinkTopology::ring: return "ring";
    case NvlinkTopology::mesh: return "mesh";
  }
  return "?";
}

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::adamw: return "adamw";
    case Optimizer::sgd: return "sgd";
  }
  return "?";
}

const char* to_string(Tier t) {
  switch (t) {
    case Tier::gpu: return "gpu";
    case Tier::cpu: return "cpu";
    case Tier::nvme: return "nvme";
  }
  return "?";
}

bool parse_tier(const std::string& text, Tier& out) {
  for (Tier t : {Tier::gpu, Tier::cpu, Tier::nvme})
    if (text == to_string(t)) {
      out = t;
      return true;
    }
  return false;
}

bool parse_framework(const std::string& text, Framework& out) {
  for (Framework f : {Framework::megatron_lm, Framework::megatron_core, Framework::deepspeed, Framework::fsdp, Framework::starfish})
    if (text == to_string(f)) {
      out = f;
      return true;
    }
  return false;
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

namespace {
// Megatron-core's names of the recompute modules, in its order.
constexpr std::pair<const char*, uint8_t> kRecomputeModules[] = {
    {"core_attn", recompute_module::core_attn},         {"moe_act", recompute_module::moe_act},
    {"layernorm", recompute_module::layernorm},         {"mla_up_proj", recompute_module::mla_up_proj},
    {"mlp", recompute_module::mlp},                     {"shared_experts", recompute_module::shared_experts}};
}  // namespace

std::vector<std::string> recompute_module_names(uint8_t modules) {
  std::vector<std::string> out;
  for (const auto& [name, bit] : kRecomputeModules)
    if (modules & bit) out.push_back(name);
  return out;
}

std::string recompute_modules_text(uint8_t modules, const char* separator) {
  std::string out;
  for (const std::string& name : recompute_module_names(modules)) out += (out.empty() ? "" : separator) + name;
  return out;
}

std::string recompute_text(const Plan& p) {
  std::string out = to_string(p.recompute);
  if (p.recompute == Recompute::selective && p.recompute_modules != recompute_module::core_attn)
    out += " (" + recompute_modules_text(p.recompute_modules) + ")";
  return out;
}

bool parse_recompute_module(const std::string& text, uint8_t& bit) {
  for (const auto& [name, b] : kRecomputeModules)
    if (text == name) {
      bit = b;
      return true;
    }
  return false;
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::megatron_lm: return "megatron-lm";
    case Framework::megatron_core: return "megatron-core";
    case Framework::deepspeed: return "deepspeed";
    case Framework::fsdp: return "fsdp";
    case Framework::starfish: return "starfish";
  }
  return "?";
}

const char* to_string(Attention a) {
  switch (a) {
    case Attention::framework_default: return "default";
    case Attention::unfused: return "unfused";
    case Attention::flash: return "flash";
    case Attention::flash1: return "flash1";
  }
  return "?";
}

const char* to_string(GradReduce g) {
  switch (g) {
    case GradReduce::framework_default: return "default";
    case GradReduce::fp32: return "fp32";
    case GradReduce::training: return "training";
  }
  return "?";
}

const char* to_string(Loss l) {
  switch (l) {
    case Loss::framework_default: return "default";
    case Loss::vocab_parallel: return "vocab-parallel";
    case Loss::pytorch: return "pytorch";
    case Loss::fused: return "fused";
    case Loss::te: return "te";
  }
  return "?";
}

const char* to_string(Fp8 f) {
  switch (f) {
    case Fp8::none: return "none";
    case Fp8::hybrid: return "hybrid";
    case Fp8::e4m3: return "e4m3";
  }
  return "?";
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::delayed: return "delayed";
    case Fp8Recipe::tensorwise: return "tensorwise";
    case Fp8Recipe::mxfp8: return "mxfp8";
  }
  return "?";
}

const char* to_string(Fp4 f) {
  switch (f) {
    case Fp4::none: return "none";
    case Fp4::nvfp4: return "nvfp4";
  }
  return "?";
}

const char* to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::all_reduce: return "all-reduce";
    case CollectiveKind::all_gather: return "all-gather";
    case CollectiveKind::reduce_scatter: return "reduce-scatter";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::all_to_all: return "all-to-all";
    case CollectiveKind::send_recv: return "send-recv";
  }
  return "?";
}

}  // namespace starfish
