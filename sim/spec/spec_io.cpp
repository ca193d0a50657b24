#include "sim/spec/spec_io.h"

#include <yaml-cpp/yaml.h>

#include <climits>
#include <cstdlib>
#include <type_traits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fmt/format.h>

#include "sim/spec/input_file.h"
#include "sim/spec/job.h"
#include "sim/spec/limits.h"
#include "sim/spec/units.h"
#include "sim/spec/yaml_reader.h"

namespace starfish {
namespace {

constexpr std::initializer_list<std::pair<const char*, DType>> kDTypes = {
    {"fp32", DType::fp32}, {"tf32", DType::tf32}, {"fp16", DType::fp16}, {"bf16", DType::bf16}, {"fp8", DType::fp8}};
constexpr std::initializer_list<std::pair<const char*, Tier>> kTiers = {
    {"gpu", Tier::gpu}, {"cpu", Tier::cpu}, {"nvme", Tier::nvme}};

// ---------------------------------------------------------------- hardware

// gpu.elementwise: per kernel, {forward: <time>, backward: <time>} per element (hardware.h).
PassTime read_pass_time(MapReader r) {
  PassTime t;
  t.forward_s = r.seconds("forward");
  t.backward_s = r.seconds("backward");
  r.finish();
  return t;
}

ElementwiseTimes read_elementwise(MapReader r) {
  ElementwiseTimes e;
  const std::pair<const char*, PassTime*> kernels[] = {{"norm", &e.norm},         {"activation", &e.activation},
                                                       {"softmax", &e.softmax},   {"residual", &e.residual},
                                                       {"loss", &e.loss},         {"head_copy", &e.head_copy},
                                                       {"bias", &e.bias}};
  for (const auto& [key, field] : kernels)
    if (r.has(key)) *field = read_pass_time(r.map(key));
  r.finish();
  return e;
}

GpuSpec read_gpu(MapReader r) {
  GpuSpec g;
  g.name = r.text("name");
  g.memory_bytes = r.bytes("memory");
  if (g.memory_bytes <= 0) r.fail("memory", "must be positive");
  if (r.has("reserved")) g.reserved_bytes = r.bytes("reserved");
  if (g.reserved_bytes >= g.memory_bytes) r.fail("reserved", "must be smaller than memory");
  if (r.has("nccl_communicator")) {
    MapReader n = r.map("nccl_communicator");
    auto communicator_bytes = [&](const char* key) {
      const int64_t v = n.bytes(key);
      if (v < 0 || v >= g.memory_bytes) n.fail(key, "must be at least 0 and below memory");
      return v;
    };
    g.nccl_communicator.pair = communicator_bytes("pair");
    g.nccl_communicator.group = communicator_bytes("group");
    n.finish();
  }
  g.hbm_bandwidth_Bps = r.rate("hbm_bandwidth");
  if (g.hbm_bandwidth_Bps <= 0) r.fail("hbm_bandwidth", "must be positive");
  if (r.has("hbm_efficiency")) g.hbm_efficiency = r.real("hbm_efficiency", 0.01, 1.0);
  MapReader peak = r.map("peak");
  for (const auto& [name, t] : kDTypes) {
    if (!peak.has(name)) continue;
    const double v = peak.flops(name);
    if (v <= 0) peak.fail(name, "must be positive");
    g.peak_flops[t] = v;
  }
  // The block-scaled formats' peaks (hardware.h): optional, a GPU without them has none.
  for (auto [name, field] : {std::pair{"mxfp8", &g.mxfp8_peak_flops}, std::pair{"fp4", &g.fp4_peak_flops}}) {
    if (!peak.has(name)) continue;
    *field = peak.flops(name);
    if (*field <= 0) peak.fail(name, "must be positive");
  }
  peak.finish();
  if (g.peak_flops.empty()) r.fail("peak", "needs at least one of fp32, tf32, fp16, bf16, fp8");
  const YAML::Node curve = r.sequence("matmul_efficiency");
  double last_flop = -1;
  for (const auto& item : curve) {
    const SourceLoc at = r.where(item);
    if (!item.IsSequence() || item.size() != 2)
      fail_at(at, r.field("matmul_efficiency"), "each point must be [flop, fraction], e.g. [1GFLOP, 0.4]");
    double flop = 0, fraction = 0;
    try {
      flop = units::parse_flop_count(item[0].Scalar());
      fraction = units::parse_number(item[1].Scalar());
    } catch (const std::invalid_argument& e) {
      fail_at(at, r.field("matmul_efficiency"), std::string("bad point: ") + e.what());
    }
    if (fraction <= 0 || fraction > 1) fail_at(at, r.field("matmul_efficiency"), "fractions must be in (0, 1]");
    if (flop > limits::kMaxFlopCount) fail_at(at, r.field("matmul_efficiency"), "FLOP counts must be at most 1e24");
    if (flop <= last_flop) fail_at(at, r.field("matmul_efficiency"), "points must have ascending FLOP counts");
    last_flop = flop;
    g.matmul_efficiency.points.emplace_back(flop, fraction);
  }
  if (g.matmul_efficiency.points.empty()) r.fail("matmul_efficiency", "needs at least one point");
  if (r.has("attention_efficiency")) {
    MapReader a = r.map("attention_efficiency");
    if (a.has("flash1")) g.attention_efficiency.flash1 = a.real("flash1", 0.01, 1.0);
    if (a.has("flash2")) g.attention_efficiency.flash2 = a.real("flash2", 0.01, 1.0);
    if (a.has("flash1_backward")) g.attention_efficiency.flash1_backward = a.real("flash1_backward", 0.01, 1.0);
    if (a.has("flash2_backward")) g.attention_efficiency.flash2_backward = a.real("flash2_backward", 0.01, 1.0);
    a.finish();
  }
  if (r.has("elementwise")) g.elementwise = read_elementwise(r.map("elementwise"));
  if (r.has("copy_engines")) g.copy_engines = r.whole("copy_engines", 1, limits::kMaxCopyEngines);
  if (r.has("tdp_watts")) g.tdp_watts = r.real("tdp_watts", 1, 1e5);
  r.finish();
  return g;
}

HostSpec read_host(MapReader r) {
  HostSpec h;
  h.memory_bytes = r.bytes("memory");
  if (h.memory_bytes <= 0) r.fail("memory", "must be positive");
  if (r.has("reserved")) h.reserved_bytes = r.bytes("reserved");
  if (h.reserved_bytes >= h.memory_bytes) r.fail("reserved", "must be smaller than memory");
  h.memory_bandwidth_Bps = r.rate("memory_bandwidth");
  if (h.memory_bandwidth_Bps <= 0) r.fail("memory_bandwidth", "must be positive");
  h.cpu_cores = r.whole("cpu_cores", 1, limits::kMaxCpuCores);
  h.cpu_adam_params_per_s = r.real("cpu_adam_params_per_s", 1, 1e15);
  if (r.has("op_dispatch")) h.op_dispatch_s = r.seconds("op_dispatch");
  if (r.has("backward_op_dispatch")) h.backward_op_dispatch_s = r.seconds("backward_op_dispatch");
  r.finish();
  return h;
}

NvmeSpec read_nvme(MapReader r) {
  NvmeSpec n;
  n.capacity_bytes = r.bytes("capacity");
  if (n.capacity_bytes <= 0) r.fail("capacity", "must be positive");
  n.read_Bps = r.rate("read");
  n.write_Bps = r.rate("write");
  if (n.read_Bps <= 0) r.fail("read", "must be positive");
  if (n.write_Bps <= 0) r.fail("write", "must be positive");
  if (r.has("latency")) n.latency_s = r.seconds("latency");
  r.finish();
  return n;
}

PcieSpec read_pcie(MapReader r) {
  PcieSpec p;
  p.generation = r.whole("generation", 1, INT32_MAX);
  if (p.generation > 6) r.fail("generation", "PCIe generations 1 to 6 are known, got " + std::to_string(p.generation));
  p.lanes = r.whole("lanes", 1, INT32_MAX);
  if (p.lanes != 1 && p.lanes != 2 && p.lanes != 4 && p.lanes != 8 && p.lanes != 16)
    r.fail("lanes", "must be 1, 2, 4, 8 or 16");
  if (r.has("efficiency")) p.efficiency = r.real("efficiency", 0.05, 1.0);
  if (r.has("latency")) p.latency_s = r.seconds("latency");
  if (r.has("gpus_per_root")) p.gpus_per_root = r.whole("gpus_per_root", 1, limits::kMaxGpusPerNode);
  r.finish();
  return p;
}

NvlinkSpec read_nvlink(MapReader r) {
  NvlinkSpec n;
  n.bandwidth_Bps = r.rate("bandwidth");
  if (n.bandwidth_Bps <= 0) r.fail("bandwidth", "must be positive");
  if (r.has("efficiency")) n.efficiency = r.real("efficiency", 0.05, 1.0);
  if (r.has("latency")) n.latency_s = r.seconds("latency");
  if (r.has("topology")) {
    if (r.has("switched")) r.fail("switched", "give topology: switch | ring | mesh, or the older switched: true | false, not both");
    n.topology = r.choice<NvlinkTopology>("topology", {{to_string(NvlinkTopology::switched), NvlinkTopology::switched},
                                                      {to_string(NvlinkTopology::ring), NvlinkTopology::ring},
                                                      {to_string(NvlinkTopology::mesh), NvlinkTopology::mesh}});
  } else if (r.has("switched")) {  // profiles from before topology: false was always the ring
    n.topology = r.boolean("switched") ? NvlinkTopology::switched : NvlinkTopology::ring;
  }
  if (r.has("domain_nodes")) n.domain_nodes = r.whole("domain_nodes", 1, limits::kMaxGpus);
  if (n.domain_nodes > 1 && !n.switched()) r.fail("domain_nodes", "an NVLink domain across nodes needs topology: switch");
  r.finish();
  return n;
}

// fabric: {rail_optimized: bool, tiers: [{nodes, oversubscription, latency}, ...]}
FabricSpec read_fabric(MapReader r, Provenance& provenance) {
  FabricSpec f;
  if (r.has("rail_optimized")) f.rail_optimized = r.boolean("rail_optimized");
  if (r.has("tiers")) {
    int index = 0, below = 1;
    for (const auto& item : r.sequence("tiers")) {
      const std::string path = r.field("tiers") + "[" + std::to_string(index++) + "]";
      if (index > 8) fail_at(r.where(item), path, "a fat tree of at most 8 tiers is supported");
      if (!item.IsMap()) fail_at(r.where(item), path, "each tier must be a mapping {nodes: N, oversubscription: R}");
      MapReader t(item, provenance, path);
      FabricTier tier;
      tier.nodes = t.whole("nodes", 1, limits::kMaxGpus);
      if (tier.nodes <= below || tier.nodes % below != 0)
        t.fail("nodes", "must be a multiple of the tier below's " + std::to_string(below) + " nodes, and larger");
      below = tier.nodes;
      if (t.has("oversubscription")) tier.oversubscription = t.real("oversubscription", 1, 1024);
      if (t.has("latency")) tier.latency_s = t.seconds("latency");
      t.finish();
      f.tiers.push_back(tier);
    }
  }
  if (f.rail_optimized && f.tiers.empty()) r.fail("rail_optimized", "needs tiers (the leaf switches each rail has)");
  r.finish();
  return f;
}

NicSpec read_nic(MapReader r) {
  NicSpec n;
  n.count = r.whole("count", 1, limits::kMaxNics);
  n.bandwidth_Bps = r.rate("bandwidth");
  if (n.bandwidth_Bps <= 0) r.fail("bandwidth", "must be positive");
  if (r.has("efficiency")) n.efficiency = r.real("efficiency", 0.05, 1.0);
  if (r.has("latency")) n.latency_s = r.seconds("latency");
  r.finish();
  return n;
}

NodeSpec read_node(MapReader r) {
  NodeSpec n;
  if (r.has("name")) n.name = r.text("name");
  n.gpus = r.whole("gpus", 1, limits::kMaxGpusPerNode);
  n.gpu = read_gpu(r.map("gpu"));
  n.host = read_host(r.map("host"));
  if (r.has("nvme")) n.nvme = read_nvme(r.map("nvme"));
  n.pcie = read_pcie(r.map("pcie"));
  if (r.has("nvlink")) n.nvlink = read_nvlink(r.map("nvlink"));
  if (r.has("nic")) n.nic = read_nic(r.map("nic"));
  if (r.has("power_watts")) n.power_watts = r.real("power_watts", 1, 1e8);
  if (n.pcie.gpus_per_root > n.gpus) r.fail("pcie", "gpus_per_root exceeds the node's GPUs");
  r.finish();
  return n;
}

// ---------------------------------------------------------------- emit helpers

// The shortest decimal text that reads back as exactly `value`.
std::string shortest_real(double value) {
  std::string text;
  for (int p = 1; p <= 17; ++p) {
    text = fmt::format("{:.{}g}", value, p);
    if (std::strtod(text.c_str(), nullptr) == value) break;
  }
  return text;
}

void emit_kv(YAML::Emitter& e, const char* key, const std::string& value) { e << YAML::Key << key << YAML::Value << value; }
template <typename T>
void emit_num(YAML::Emitter& e, const char* key, T value) {
  if constexpr (std::is_floating_point_v<T>) {
    e << YAML::Key << key << YAML::Value << shortest_real(value);
  } else {
    e << YAML::Key << key << YAML::Value << value;
  }
}

// gpu.elementwise, the kernels whose times are given (none on a GPU's profile).
void emit_elementwise(YAML::Emitter& e, const ElementwiseTimes& times) {
  if (!times.any()) return;
  e << YAML::Key << "elementwise" << YAML::Value << YAML::BeginMap;
  const std::pair<const char*, const PassTime*> kernels[] = {{"norm", &times.norm},       {"activation", &times.activation},
                                                             {"softmax", &times.softmax}, {"residual", &times.residual},
                                                             {"loss", &times.loss},       {"head_copy", &times.head_copy},
                                                             {"bias", &times.bias}};
  for (const auto& [key, t] : kernels) {
    if (*t == PassTime{}) continue;
    e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
    emit_kv(e, "forward", units::format_seconds(t->forward_s));
    emit_kv(e, "backward", units::format_seconds(t->backward_s));
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
}

}  // namespace

// ---------------------------------------------------------------- public: parse

Cluster parse_cluster(const YAML::Node& root, const std::string& file) {
  Cluster c;
  c.provenance.file = file;
  MapReader r(root, c.provenance, "");
  // load_cluster merges a profile's base in (and drops the key); text parsed apart cannot.
  if (r.has("base")) r.fail("base", "a base profile is read only from a file (load the profile by its path)");
  c.name = r.text("name");
  if (r.has("description")) c.description = r.text("description");
  c.nodes = r.whole("nodes", 1, limits::kMaxGpus);
  if (r.has("price_per_gpu_hour")) c.price_per_gpu_hour = r.real("price_per_gpu_hour", 0, 1e6);
  c.node = read_node(r.map("node"));
  if (!limits::checked_mul(c.nodes, c.node.gpus, limits::kMaxGpus))
    r.fail("nodes", std::to_string(c.nodes) + " nodes x " + std::to_string(c.node.gpus) + " GPUs is more than " +
                        std::to_string(limits::kMaxGpus) + " GPUs (Starfish's limit)");
  if (c.nodes > 1 && !c.node.nic) r.fail("nodes", "more than one node needs node.nic for the inter-node fabric");
  if (r.has("fabric")) {
    if (!c.node.nic) r.fail("fabric", "needs node.nic (the fabric joins the nodes' NICs)");
    c.fabric = read_fabric(r.map("fabric"), c.provenance);
  }
  r.finish();
  return c;
}

std::string sliding_window_full_every_problem(const SlidingWindow& w, int layers) {
  if (w.full_every == 1) return "1 makes every layer full attention: leave out sliding_window instead";
  if (w.full_every > layers)
    return std::to_string(w.full_every) + " is beyond the model's " + std::to_string(layers) +
           " layers: every layer would be windowed (leave out full_every for that)";
  return "";
}

namespace {
// The `moe:` map of a model (Model::Moe); the expert FFN defaults to the dense one.
Moe read_moe(MapReader r, const Model& m) {
  Moe e;
  e.experts = r.whole("experts", 1, limits::kMaxExperts);
  e.top_k = r.whole("top_k", 1, limits::kMaxExperts);
  if (e.top_k > e.experts)
    r.fail("top_k", "routes each token to " + std::to_string(e.top_k) + " of only " + std::to_string(e.experts) + " experts");
  if (r.has("shared_experts")) e.shared_experts = r.whole("shared_experts", 0, limits::kMaxExperts);
  e.expert_ffn_hidden = r.has("expert_ffn_hidden") ? r.whole("expert_ffn_hidden", 1, limits::kMaxFfnHidden) : m.ffn_hidden;
  if (r.has("first_dense_layers")) e.first_dense_layers = r.whole("first_dense_layers", 0, limits::kMaxLayers);
  if (e.first_dense_layers >= m.layers)
    r.fail("first_dense_layers", std::to_string(e.first_dense_layers) + " dense layers leave no MoE layer of the " +
                                     std::to_string(m.layers));
  if (r.has("every")) e.every = r.whole("every", 1, limits::kMaxLayers);
  if (r.has("capacity_factor")) e.capacity_factor = r.real("capacity_factor", 0, 1e3);
  r.finish();
  return e;
}

// The `mla:` map of a model (Model::Mla).
Mla read_mla(MapReader r) {
  Mla a;
  if (r.has("q_lora_rank")) a.q_lora_rank = r.whole("q_lora_rank", 0, limits::kMaxHidden);
  a.kv_lora_rank = r.whole("kv_lora_rank", 1, limits::kMaxHidden);
  a.qk_nope_head_dim = r.whole("qk_nope_head_dim", 1, limits::kMaxHidden);
  a.qk_rope_head_dim = r.whole("qk_rope_head_dim", 1, limits::kMaxHidden);
  a.v_head_dim = r.whole("v_head_dim", 1, limits::kMaxHidden);
  r.finish();
  return a;
}

// The `sliding_window:` map of a model (Model::SlidingWindow).
SlidingWindow read_sliding_window(MapReader r, const Model& m) {
  SlidingWindow w;
  w.tokens = r.whole("tokens", 1, limits::kMaxSeqLen);
  if (r.has("full_every")) w.full_every = r.whole("full_every", 0, limits::kMaxLayers);
  if (const std::string why = sliding_window_full_every_problem(w, m.layers); !why.empty()) r.fail("full_every", why);
  r.finish();
  return w;
}

// The layer's variants on the GPT/LLaMA layer (Model: qkv_bias ... max_positions), each a
// field that is off unless given.
void read_layer_variants(MapReader& r, Model& m) {
  for (const LayerSwitch& v : kLayerSwitches)
    if (r.has(v.field)) m.*v.member = r.boolean(v.field);
  if (m.qkv_bias && m.bias) r.fail("qkv_bias", "applies with bias: false (bias: true already adds query/key/value biases)");
  if (m.shared_input_norm && m.post_norms)
    r.fail("shared_input_norm", "a parallel layer with one input norm has no post_norms in any model Starfish knows");
  if (r.has("max_positions")) {
    if (m.position != PositionEmbedding::learned) r.fail("max_positions", "applies only with position: learned");
    m.max_positions = r.whole("max_positions", 1, limits::kMaxSeqLen);
  }
}
}  // namespace

Model parse_model(const YAML::Node& root, const std::string& file) {
  Model m;
  m.provenance.file = file;
  MapReader r(root, m.provenance, "");
  m.name = r.text("name");
  if (r.has("family")) m.family = r.choice<std::string>("family", {{"gpt", "gpt"}, {"llama", "llama"}});
  m.layers = r.whole("layers", 1, limits::kMaxLayers);
  m.hidden = r.whole("hidden", 1, limits::kMaxHidden);
  m.heads = r.whole("heads", 1, limits::kMaxHeads);
  m.kv_heads = r.has("kv_heads") ? r.whole("kv_heads", 1, limits::kMaxHeads) : m.heads;
  m.seq_len = r.whole("seq_len", 1, limits::kMaxSeqLen);
  m.vocab = r.whole("vocab", 1, limits::kMaxVocab);
  if (r.has("activation"))
    m.activation = r.choice<Activation>("activation", {{"gelu", Activation::gelu}, {"swiglu", Activation::swiglu}});
  if (r.has("ffn_hidden")) {
    m.ffn_hidden = r.whole("ffn_hidden", 1, limits::kMaxFfnHidden);
  } else if (m.activation == Activation::gelu) {
    m.ffn_hidden = 4 * m.hidden;  // the GPT convention
  } else {
    r.fail("ffn_hidden", "required with activation swiglu (LLaMA sizes are not 4*hidden)");
  }
  if (r.has("norm")) m.norm = r.choice<Norm>("norm", {{"layernorm", Norm::layernorm}, {"rmsnorm", Norm::rmsnorm}});
  if (r.has("position"))
    m.position = r.choice<PositionEmbedding>("position", {{"learned", PositionEmbedding::learned}, {"rope", PositionEmbedding::rope}});
  if (r.has("rope_base")) {
    if (m.position != PositionEmbedding::rope) r.fail("rope_base", "applies only with position: rope");
    m.rope_base = r.real("rope_base", 1, 1e12);
  }
  if (r.has("tied_embeddings")) m.tied_embeddings = r.boolean("tied_embeddings");
  if (r.has("bias")) m.bias = r.boolean("bias");
  if (r.has("dropout")) m.dropout = r.boolean("dropout");
  read_layer_variants(r, m);
  if (r.has("head_dim")) {
    m.attention_head_dim = r.whole("head_dim", 1, limits::kMaxHidden);
    if (int64_t{m.heads} * m.attention_head_dim > limits::kMaxAttentionWidth)
      r.fail("head_dim", std::to_string(m.heads) + " heads x " + std::to_string(m.attention_head_dim) + " is above " +
                             std::to_string(limits::kMaxAttentionWidth) + ", the widest attention Starfish models");
  }
  if (r.has("moe")) m.moe = read_moe(r.map("moe"), m);
  if (r.has("sliding_window")) m.sliding_window = read_sliding_window(r.map("sliding_window"), m);
  if (r.has("mla")) {
    m.mla = read_mla(r.map("mla"));
    if (m.kv_heads != m.heads)
      r.fail("kv_heads", "multi-head latent attention projects keys and values for every head: kv_heads must be heads (" +
                             std::to_string(m.heads) + ")");
    if (m.attention_head_dim > 0) r.fail("head_dim", "with mla the head widths are mla's qk_nope/qk_rope/v_head_dim");
    if (m.bias) r.fail("bias", "multi-head latent attention is modelled without biases (DeepSeek's has none): set bias: false");
    if (m.qkv_bias) r.fail("qkv_bias", "multi-head latent attention has no query/key/value projection to bias");
    if (m.qk_norm) r.fail("qk_norm", "multi-head latent attention normalises its latents instead (mla)");
  }
  if (m.max_positions > 0 && m.max_positions < m.seq_len)
    r.fail("max_positions", "the learned positions end at " + std::to_string(m.max_positions) + " tokens, below seq_len " +
                                std::to_string(m.seq_len));
  if (m.attention_head_dim == 0 && !m.is_mla() && m.hidden % m.heads != 0)
    r.fail("heads", std::to_string(m.heads) + " heads do not divide hidden " + std::to_string(m.hidden) +
                        " (give head_dim when the heads have their own width)");
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    r.fail("kv_heads", std::to_string(m.kv_heads) + " must divide heads " + std::to_string(m.heads));
  r.finish();
  return m;
}

// Uneven pipeline stages: first_stage_layers / last_stage_layers, or stage_layers: [7, 8, ...],
// or the embedding and the loss counted as layers (embedding_in_pipeline_split / loss_in_pipeline_split).
// Whether they fit the model is make_job's check (check_stage_layout).
namespace {
// recompute_modules: [core_attn, moe_act, ...], Megatron-core's names (names.cpp).
uint8_t read_recompute_modules(MapReader& q) {
  const YAML::Node list = q.sequence("recompute_modules");
  const std::string choices = recompute_modules_text(recompute_module::all, ", ");  // names.cpp's, its order
  uint8_t modules = 0;
  for (const auto& item : list) {
    const SourceLoc at = q.where(item);
    if (!item.IsScalar())
      fail_at(at, q.field("recompute_modules"), "each entry is a module's name (expected one of: " + choices + ")");
    const std::string name = item.Scalar();
    uint8_t bit = 0;
    if (name == "moe")
      fail_at(at, q.field("recompute_modules"),
              "'moe' (the whole MoE layer, its all-to-alls again) is not modelled; list its parts instead: moe_act, "
              "layernorm, shared_experts");
    if (!parse_recompute_module(name, bit))
      fail_at(at, q.field("recompute_modules"), "unknown module '" + name + "' (expected one of: " + choices + ")");
    modules |= bit;
  }
  if (modules == 0) q.fail("recompute_modules", "lists no module (expected some of: " + choices + ")");
  return modules;
}

void read_stage_layers(MapReader& q, StageLayout& out) {
  if (q.has("first_stage_layers")) out.first = q.whole("first_stage_layers", 1, limits::kMaxLayers);
  if (q.has("last_stage_layers")) out.last = q.whole("last_stage_layers", 1, limits::kMaxLayers);
  if (q.has("embedding_in_pipeline_split")) out.embedding_slot = q.boolean("embedding_in_pipeline_split");
  if (q.has("loss_in_pipeline_split")) out.loss_slot = q.boolean("loss_in_pipeline_split");
  if (!q.has("stage_layers")) return;
  const YAML::Node list = q.sequence("stage_layers");
  if (list.size() > static_cast<size_t>(limits::kMaxLayers))
    q.fail("stage_layers", "lists more than " + std::to_string(limits::kMaxLayers) + " stages (Starfish's limit)");
  for (const auto& item : list) {
    const SourceLoc at = q.where(item);
    double n = 0;
    try {
      n = item.IsScalar() ? units::parse_number(item.Scalar()) : -1;
    } catch (const std::invalid_argument&) {
      n = -1;
    }
    if (n < 1 || n > static_cast<double>(limits::kMaxLayers) || n != static_cast<double>(static_cast<int64_t>(n)))
      fail_at(at, q.field("stage_layers"), "each stage's layer count must be a whole number from 1 to " +
                                               std::to_string(limits::kMaxLayers));
    out.per_stage.push_back(static_cast<int>(n));
  }
  if (out.per_stage.empty()) q.fail("stage_layers", "lists no stage");
}
}  // namespace

namespace {

// The plan file's training: section.
void read_training(MapReader& t, Training& tr) {
  tr.global_batch = t.integer("global_batch", 1, limits::kMaxGlobalBatch);
  if (t.has("dtype")) tr.dtype = t.choice<DType>("dtype", kDTypes);
  // FP8 training keeps its params, activations and gradients in bf16 and runs the GEMMs in
  // fp8 (TransformerEngine): a choice of the plan's kernels, not of the model's precision.
  if (tr.dtype == DType::fp8)
    t.fail("dtype", "fp8 training keeps bf16 params and activations and runs its GEMMs in fp8: set training.dtype: "
                    "bf16 and plan.fp8: hybrid");
  if (t.has("optimizer"))
    tr.optimizer = t.choice<Optimizer>("optimizer", {{"adam", Optimizer::adam}, {"adamw", Optimizer::adamw}, {"sgd", Optimizer::sgd}});
  if (t.has("learning_rate")) tr.learning_rate = t.real("learning_rate", 0, 10);
  if (t.has("weight_decay")) tr.weight_decay = t.real("weight_decay", 0, 10);
  if (t.has("grad_clip")) tr.grad_clip = t.real("grad_clip", 0, 1e9);
  if (t.has("iterations")) tr.iterations = t.integer("iterations", 1, limits::kMaxIterations);
  if (t.has("seed")) tr.seed = static_cast<uint64_t>(t.integer("seed", 0, limits::kMaxSeed));
}

// The plan: section's parallelism, schedule, recomputation and where the states live.
void read_plan_layout(MapReader& q, Plan& pl) {
  if (q.has("tensor_parallel")) pl.tp = q.whole("tensor_parallel", 1, limits::kMaxGpus);
  if (q.has("pipeline_parallel")) pl.pp = q.whole("pipeline_parallel", 1, limits::kMaxGpus);
  if (q.has("data_parallel")) pl.dp = q.whole("data_parallel", 1, limits::kMaxGpus);
  if (q.has("context_parallel")) pl.cp = q.whole("context_parallel", 1, limits::kMaxGpus);
  if (q.has("virtual_stages")) pl.virtual_stages = q.whole("virtual_stages", 1, limits::kMaxLayers);
  if (q.has("micro_batch")) pl.micro_batch = q.whole("micro_batch", 1, limits::kMaxMicroBatch);
  read_stage_layers(q, pl.stage_layers);
  if (q.has("expert_parallel")) pl.ep = q.whole("expert_parallel", 1, limits::kMaxExperts);
  if (q.has("expert_tensor_parallel")) pl.etp = q.whole("expert_tensor_parallel", 1, limits::kMaxGpus);
  if (q.has("moe_load_imbalance")) pl.moe_load_imbalance = q.real("moe_load_imbalance", 1, 1e3);
  if (q.has("sequence_parallel")) pl.sequence_parallel = q.boolean("sequence_parallel");
  if (q.has("overlap_grad_reduce")) pl.overlap_grad_reduce = q.boolean("overlap_grad_reduce");
  if (q.has("schedule"))
    pl.schedule = q.choice<Schedule>(
        "schedule", {{"gpipe", Schedule::gpipe}, {"1f1b", Schedule::one_f_one_b}, {"interleaved", Schedule::interleaved}});
  if (q.has("zero_stage")) {
    pl.zero_stage = q.whole("zero_stage", 0, INT32_MAX);
    if (pl.zero_stage > 3) q.fail("zero_stage", "ZeRO stages are 0, 1, 2 and 3, got " + std::to_string(pl.zero_stage));
  }
  if (q.has("recompute"))
    pl.recompute = q.choice<Recompute>(
        "recompute", {{"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}});
  if (q.has("recompute_layers")) pl.recompute_layers = static_cast<int>(q.whole("recompute_layers", 1, limits::kMaxLayers));
  if (q.has("recompute_modules")) pl.recompute_modules = read_recompute_modules(q);
  if (q.has("offload")) {
    MapReader o = q.map("offload");
    if (o.has("params")) pl.offload.params = o.choice<Tier>("params", kTiers);
    if (o.has("grads")) pl.offload.grads = o.choice<Tier>("grads", kTiers);
    if (o.has("optimizer")) pl.offload.optimizer = o.choice<Tier>("optimizer", kTiers);
    o.finish();
  }
  if (q.has("chunk_size")) pl.chunk_elements = q.count("chunk_size");
  if (q.has("cpu_embedding")) pl.cpu_embedding = q.boolean("cpu_embedding");
}

// The plan: section's framework and the kernels it runs.
void read_plan_kernels(MapReader& q, Plan& pl) {
  if (q.has("framework"))
    pl.framework = q.choice<Framework>("framework", {{"megatron-lm", Framework::megatron_lm},
                                                     {"megatron-core", Framework::megatron_core},
                                                     {"deepspeed", Framework::deepspeed},
                                                     {"fsdp", Framework::fsdp},
                                                     {"starfish", Framework::starfish}});
  if (q.has("attention"))
    pl.attention = q.choice<Attention>(
        "attention", {{"default", Attention::framework_default},
                      {"unfused", Attention::unfused},
                      {"flash", Attention::flash},
                      {"flash1", Attention::flash1}});
  if (q.has("loss"))
    pl.loss = q.choice<Loss>("loss", {{"default", Loss::framework_default},
                                      {"vocab-parallel", Loss::vocab_parallel},
                                      {"pytorch", Loss::pytorch},
                                      {"fused", Loss::fused},
                                      {"te", Loss::te}});
  if (q.has("fp8"))
    pl.fp8 = q.choice<Fp8>("fp8", {{"none", Fp8::none}, {"hybrid", Fp8::hybrid}, {"e4m3", Fp8::e4m3}});
  if (q.has("fp8_recipe"))
    pl.fp8_recipe = q.choice<Fp8Recipe>(
        "fp8_recipe", {{"delayed", Fp8Recipe::delayed}, {"tensorwise", Fp8Recipe::tensorwise}, {"mxfp8", Fp8Recipe::mxfp8}});
  if (q.has("fp4")) pl.fp4 = q.choice<Fp4>("fp4", {{"none", Fp4::none}, {"nvfp4", Fp4::nvfp4}});
  if (q.has("fp8_params")) pl.fp8_params = q.boolean("fp8_params");
  if (q.has("bf16_layers")) {
    MapReader b = q.map("bf16_layers");
    if (b.has("first")) pl.bf16_layers.first = static_cast<int>(b.whole("first", 0, limits::kMaxLayers));
    if (b.has("last")) pl.bf16_layers.last = static_cast<int>(b.whole("last", 0, limits::kMaxLayers));
    b.finish();
  }
  if (q.has("grad_reduce_dtype"))
    pl.grad_reduce = q.choice<GradReduce>(
        "grad_reduce_dtype",
        {{"default", GradReduce::framework_default}, {"fp32", GradReduce::fp32}, {"training", GradReduce::training}});
  if (q.has("train_metric_passes"))
    pl.train_metric_passes = static_cast<int>(q.whole("train_metric_passes", 0, limits::kMaxTrainMetricPasses));
}

}  // namespace

PlanFile parse_plan_file(const YAML::Node& root, const std::string& file) {
  PlanFile p;
  Provenance& prov = p.plan.provenance;
  prov.file = file;
  p.training.provenance.file = file;
  MapReader r(root, prov, "");
  p.model_path = r.text_or_none("model");
  p.hardware_path = r.text_or_none("hardware");
  if (r.has("nodes")) p.nodes = r.whole("nodes", 1, limits::kMaxGpus);
  {
    MapReader t(r.node("training"), p.training.provenance, "training");
    read_training(t, p.training);
    t.finish();
  }
  if (r.has("plan")) {
    MapReader q = r.map("plan");
    const bool framework_named = q.has("framework");
    read_plan_layout(q, p.plan);
    read_plan_kernels(q, p.plan);
    q.finish();
    // Left out, the framework is the one that runs the plan's placement (job.h
    // placement_framework): Megatron-LM, or Starfish's chunk runtime for chunks, DeepSpeed for
    // offloaded states. A named one that cannot is make_job's error, at the offending field.
    if (!framework_named)
      p.plan.framework = placement_framework(p.plan, Framework::megatron_lm).value_or(Framework::megatron_lm);
  }
  r.finish();
  return p;
}

namespace {

// A profile's `base:`: the profile it starts from, whose fields it keeps unless it gives them
// again. Maps merge key by key, so `node: {gpu: {memory: 6MiB}}` changes the GPU's memory and
// keeps the rest of its GPU; any other value (a scalar, a list: `matmul_efficiency`) replaces
// the base's whole. The merged nodes keep their own marks (inserted, never cloned).
void overlay(YAML::Node target, const YAML::Node& over) {
  for (const auto& kv : over) {
    const std::string key = kv.first.Scalar();
    if (key == "base") continue;
    YAML::Node existing = target[key];
    if (existing.IsMap() && kv.second.IsMap()) {
      overlay(existing, kv.second);
    } else {
      // The derived file's own key and value nodes, so that an error names their line.
      target.remove(key);
      target.force_insert(kv.first, kv.second);
    }
  }
}

// Profiles named by `base:` chains at most this deep: deeper is a cycle or a mistake.
constexpr int kMaxBaseDepth = 8;

// The profile at `path` with its base chain merged in. Each base is parsed on its own first, so
// an error in it names its own file; what the merge adds can only fail on the fields the
// derived profile gives (named with its file).
YAML::Node cluster_node(const std::string& path, int depth) {
  YAML::Node root = load_yaml_file(path);
  const YAML::Node base_field = root.IsMap() ? root["base"] : YAML::Node();
  if (!base_field) return root;
  Provenance provenance;
  provenance.file = input_name(path);
  const SourceLoc at = location(provenance, base_field);
  if (!base_field.IsScalar() || base_field.Scalar().empty())
    fail_at(at, "base", "expected the path of the hardware profile this one starts from");
  if (path == "-") fail_at(at, "base", "a profile read from standard input cannot name a base (no folder to find it in)");
  if (depth >= kMaxBaseDepth)
    fail_at(at, "base", "profiles name bases more than " + std::to_string(kMaxBaseDepth) + " deep (a cycle?)");
  const std::string base_path = path_named_in(path, base_field.Scalar());
  YAML::Node base;
  try {
    base = cluster_node(base_path, depth + 1);
  } catch (const InputFileError& e) {
    fail_at(at, "base", e.what());
  }
  (void)parse_cluster(base, input_name(base_path));  // a base must be a whole profile by itself
  overlay(base, root);
  return base;
}

}  // namespace

Cluster load_cluster(const std::string& path) { return parse_cluster(cluster_node(path, 0), input_name(path)); }
Model load_model(const std::string& path) { return parse_model(load_yaml_file(path), input_name(path)); }
PlanFile load_plan_file(const std::string& path) { return parse_plan_file(load_yaml_file(path), input_name(path)); }


Cluster parse_cluster_text(const std::string& yaml, const std::string& file) { return parse_cluster(parse_yaml_text(yaml, file), file); }
Model parse_model_text(const std::string& yaml, const std::string& file) { return parse_model(parse_yaml_text(yaml, file), file); }
PlanFile parse_plan_file_text(const std::string& yaml, const std::string& file) {
  return parse_plan_file(parse_yaml_text(yaml, file), file);
}

// ---------------------------------------------------------------- public: save

namespace {

// The hwprofile's node sections, in the order load_cluster reads them.
void emit_gpu(YAML::Emitter& e, const NodeSpec& n) {
  e << YAML::Key << "gpu" << YAML::Value << YAML::BeginMap;
  emit_kv(e, "name", n.gpu.name);
  emit_kv(e, "memory", units::format_bytes(n.gpu.memory_bytes));
  if (n.gpu.reserved_bytes) emit_kv(e, "reserved", units::format_bytes(n.gpu.reserved_bytes));
  const NcclCommunicatorBytes& nc = n.gpu.nccl_communicator;
  if (nc.pair > 0 || nc.group > 0) {
    e << YAML::Key << "nccl_communicator" << YAML::Value << YAML::Flow << YAML::BeginMap;
    emit_kv(e, "pair", units::format_bytes(nc.pair));
    emit_kv(e, "group", units::format_bytes(nc.group));
    e << YAML::EndMap;
  }
  emit_kv(e, "hbm_bandwidth", units::format_rate(n.gpu.hbm_bandwidth_Bps));
  emit_num(e, "hbm_efficiency", n.gpu.hbm_efficiency);
  e << YAML::Key << "peak" << YAML::Value << YAML::BeginMap;
  for (const auto& [t, v] : n.gpu.peak_flops) emit_kv(e, to_string(t), units::format_flops(v));
  if (n.gpu.mxfp8_peak_flops > 0) emit_kv(e, "mxfp8", units::format_flops(n.gpu.mxfp8_peak_flops));
  if (n.gpu.fp4_peak_flops > 0) emit_kv(e, "fp4", units::format_flops(n.gpu.fp4_peak_flops));
  e << YAML::EndMap;
  e << YAML::Key << "matmul_efficiency" << YAML::Value << YAML::BeginSeq;
  for (const auto& [flop, fraction] : n.gpu.matmul_efficiency.points) {
    e << YAML::Flow << YAML::BeginSeq << units::format_flop_count(flop) << shortest_real(fraction) << YAML::EndSeq;
  }
  e << YAML::EndSeq;
  const AttentionEfficiency& ae = n.gpu.attention_efficiency;
  if (ae.flash1 > 0 || ae.flash2 > 0 || ae.flash1_backward > 0 || ae.flash2_backward > 0) {
    e << YAML::Key << "attention_efficiency" << YAML::Value << YAML::Flow << YAML::BeginMap;
    if (ae.flash1 > 0) emit_num(e, "flash1", ae.flash1);
    if (ae.flash2 > 0) emit_num(e, "flash2", ae.flash2);
    if (ae.flash1_backward > 0) emit_num(e, "flash1_backward", ae.flash1_backward);
    if (ae.flash2_backward > 0) emit_num(e, "flash2_backward", ae.flash2_backward);
    e << YAML::EndMap;
  }
  emit_elementwise(e, n.gpu.elementwise);
  emit_num(e, "copy_engines", n.gpu.copy_engines);
  if (n.gpu.tdp_watts > 0) emit_num(e, "tdp_watts", n.gpu.tdp_watts);
  e << YAML::EndMap;
}

void emit_host(YAML::Emitter& e, const NodeSpec& n) {
  e << YAML::Key << "host" << YAML::Value << YAML::BeginMap;
  emit_kv(e, "memory", units::format_bytes(n.host.memory_bytes));
  if (n.host.reserved_bytes) emit_kv(e, "reserved", units::format_bytes(n.host.reserved_bytes));
  emit_kv(e, "memory_bandwidth", units::format_rate(n.host.memory_bandwidth_Bps));
  emit_num(e, "cpu_cores", n.host.cpu_cores);
  emit_num(e, "cpu_adam_params_per_s", n.host.cpu_adam_params_per_s);
  if (n.host.op_dispatch_s) emit_kv(e, "op_dispatch", units::format_seconds(n.host.op_dispatch_s));
  if (n.host.backward_op_dispatch_s) emit_kv(e, "backward_op_dispatch", units::format_seconds(n.host.backward_op_dispatch_s));
  e << YAML::EndMap;
}

void emit_node_links(YAML::Emitter& e, const NodeSpec& n) {
  if (n.nvme) {
    e << YAML::Key << "nvme" << YAML::Value << YAML::BeginMap;
    emit_kv(e, "capacity", units::format_bytes(n.nvme->capacity_bytes));
    emit_kv(e, "read", units::format_rate(n.nvme->read_Bps));
    emit_kv(e, "write", units::format_rate(n.nvme->write_Bps));
    if (n.nvme->latency_s) emit_kv(e, "latency", units::format_seconds(n.nvme->latency_s));
    e << YAML::EndMap;
  }
  e << YAML::Key << "pcie" << YAML::Value << YAML::BeginMap;
  emit_num(e, "generation", n.pcie.generation);
  emit_num(e, "lanes", n.pcie.lanes);
  emit_num(e, "efficiency", n.pcie.efficiency);
  emit_kv(e, "latency", units::format_seconds(n.pcie.latency_s));
  emit_num(e, "gpus_per_root", n.pcie.gpus_per_root);
  e << YAML::EndMap;
  if (n.nvlink) {
    e << YAML::Key << "nvlink" << YAML::Value << YAML::BeginMap;
    emit_kv(e, "bandwidth", units::format_rate(n.nvlink->bandwidth_Bps));
    emit_num(e, "efficiency", n.nvlink->efficiency);
    emit_kv(e, "latency", units::format_seconds(n.nvlink->latency_s));
    emit_kv(e, "topology", to_string(n.nvlink->topology));
    if (n.nvlink->domain_nodes > 1) emit_num(e, "domain_nodes", n.nvlink->domain_nodes);
    e << YAML::EndMap;
  }
  if (n.nic) {
    e << YAML::Key << "nic" << YAML::Value << YAML::BeginMap;
    emit_num(e, "count", n.nic->count);
    emit_kv(e, "bandwidth", units::format_rate(n.nic->bandwidth_Bps));
    emit_num(e, "efficiency", n.nic->efficiency);
    emit_kv(e, "latency", units::format_seconds(n.nic->latency_s));
    e << YAML::EndMap;
  }
}

void emit_fabric(YAML::Emitter& e, const Cluster& c) {
  if (c.fabric != FabricSpec{}) {
    e << YAML::Key << "fabric" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "rail_optimized" << YAML::Value << c.fabric.rail_optimized;
    e << YAML::Key << "tiers" << YAML::Value << YAML::BeginSeq;
    for (const FabricTier& t : c.fabric.tiers) {
      e << YAML::BeginMap;
      emit_num(e, "nodes", t.nodes);
      emit_num(e, "oversubscription", t.oversubscription);
      if (t.latency_s) emit_kv(e, "latency", units::format_seconds(t.latency_s));
      e << YAML::EndMap;
    }
    e << YAML::EndSeq << YAML::EndMap;
  }
}

}  // namespace

std::string to_yaml(const Cluster& c) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  emit_kv(e, "name", c.name);
  if (!c.description.empty()) emit_kv(e, "description", c.description);
  emit_num(e, "nodes", c.nodes);
  if (c.price_per_gpu_hour > 0) emit_num(e, "price_per_gpu_hour", c.price_per_gpu_hour);
  const NodeSpec& n = c.node;
  e << YAML::Key << "node" << YAML::Value << YAML::BeginMap;
  if (!n.name.empty()) emit_kv(e, "name", n.name);
  emit_num(e, "gpus", n.gpus);
  if (n.power_watts > 0) emit_num(e, "power_watts", n.power_watts);
  emit_gpu(e, n);
  emit_host(e, n);
  emit_node_links(e, n);
  e << YAML::EndMap;  // node
  emit_fabric(e, c);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

namespace {
void emit_layer_variants(YAML::Emitter& e, const Model& m) {
  for (const LayerSwitch& v : kLayerSwitches)
    if (m.*v.member) e << YAML::Key << v.field << YAML::Value << true;
  if (m.max_positions > 0) emit_num(e, "max_positions", m.max_positions);
  if (m.sliding_window.tokens > 0) {
    e << YAML::Key << "sliding_window" << YAML::Value << YAML::Flow << YAML::BeginMap;
    emit_num(e, "tokens", m.sliding_window.tokens);
    if (m.sliding_window.full_every > 0) emit_num(e, "full_every", m.sliding_window.full_every);
    e << YAML::EndMap;
  }
}
}  // namespace

std::string to_yaml(const Model& m) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  emit_kv(e, "name", m.name);
  emit_kv(e, "family", m.family);
  emit_num(e, "layers", m.layers);
  emit_num(e, "hidden", m.hidden);
  emit_num(e, "heads", m.heads);
  emit_num(e, "kv_heads", m.kv_heads);
  emit_num(e, "ffn_hidden", m.ffn_hidden);
  emit_num(e, "seq_len", m.seq_len);
  emit_num(e, "vocab", m.vocab);
  emit_kv(e, "activation", m.activation == Activation::gelu ? "gelu" : "swiglu");
  emit_kv(e, "norm", m.norm == Norm::layernorm ? "layernorm" : "rmsnorm");
  emit_kv(e, "position", m.position == PositionEmbedding::learned ? "learned" : "rope");
  if (m.position == PositionEmbedding::rope) emit_kv(e, "rope_base", units::format_number(m.rope_base));
  e << YAML::Key << "tied_embeddings" << YAML::Value << m.tied_embeddings;
  e << YAML::Key << "bias" << YAML::Value << m.bias;
  e << YAML::Key << "dropout" << YAML::Value << m.dropout;
  emit_layer_variants(e, m);
  if (m.attention_head_dim > 0) emit_num(e, "head_dim", m.attention_head_dim);
  if (m.is_moe()) {
    e << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
    emit_num(e, "experts", m.moe.experts);
    emit_num(e, "top_k", m.moe.top_k);
    emit_num(e, "shared_experts", m.moe.shared_experts);
    emit_num(e, "expert_ffn_hidden", m.moe.expert_ffn_hidden);
    emit_num(e, "first_dense_layers", m.moe.first_dense_layers);
    emit_num(e, "every", m.moe.every);
    emit_num(e, "capacity_factor", m.moe.capacity_factor);
    e << YAML::EndMap;
  }
  if (m.is_mla()) {
    e << YAML::Key << "mla" << YAML::Value << YAML::BeginMap;
    emit_num(e, "q_lora_rank", m.mla.q_lora_rank);
    emit_num(e, "kv_lora_rank", m.mla.kv_lora_rank);
    emit_num(e, "qk_nope_head_dim", m.mla.qk_nope_head_dim);
    emit_num(e, "qk_rope_head_dim", m.mla.qk_rope_head_dim);
    emit_num(e, "v_head_dim", m.mla.v_head_dim);
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

std::string to_yaml(const PlanFile& p) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  if (p.model_path) emit_kv(e, "model", *p.model_path);
  if (p.hardware_path) emit_kv(e, "hardware", *p.hardware_path);
  if (p.nodes) emit_num(e, "nodes", *p.nodes);
  const Training& t = p.training;
  e << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  emit_num(e, "global_batch", t.global_batch);
  emit_kv(e, "dtype", to_string(t.dtype));
  emit_kv(e, "optimizer", to_string(t.optimizer));
  emit_num(e, "learning_rate", t.learning_rate);
  emit_num(e, "weight_decay", t.weight_decay);
  emit_num(e, "grad_clip", t.grad_clip);
  emit_num(e, "iterations", t.iterations);
  emit_num(e, "seed", t.seed);
  e << YAML::EndMap;
  const Plan& q = p.plan;
  e << YAML::Key << "plan" << YAML::Value << YAML::BeginMap;
  emit_num(e, "tensor_parallel", q.tp);
  emit_num(e, "pipeline_parallel", q.pp);
  if (q.dp > 0) emit_num(e, "data_parallel", q.dp);
  if (q.cp != 1) emit_num(e, "context_parallel", q.cp);
  emit_num(e, "virtual_stages", q.virtual_stages);
  if (q.stage_layers.first > 0) emit_num(e, "first_stage_layers", q.stage_layers.first);
  if (q.stage_layers.last > 0) emit_num(e, "last_stage_layers", q.stage_layers.last);
  if (q.stage_layers.embedding_slot) e << YAML::Key << "embedding_in_pipeline_split" << YAML::Value << true;
  if (q.stage_layers.loss_slot) e << YAML::Key << "loss_in_pipeline_split" << YAML::Value << true;
  if (q.ep != 1) emit_num(e, "expert_parallel", q.ep);
  if (q.etp != 0) emit_num(e, "expert_tensor_parallel", q.etp);
  if (q.moe_load_imbalance != 1.0) emit_num(e, "moe_load_imbalance", q.moe_load_imbalance);
  if (!q.stage_layers.per_stage.empty()) {
    e << YAML::Key << "stage_layers" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int n : q.stage_layers.per_stage) e << n;
    e << YAML::EndSeq;
  }
  emit_num(e, "micro_batch", q.micro_batch);
  emit_kv(e, "schedule", to_string(q.schedule));
  e << YAML::Key << "sequence_parallel" << YAML::Value << q.sequence_parallel;
  e << YAML::Key << "overlap_grad_reduce" << YAML::Value << q.overlap_grad_reduce;
  emit_num(e, "zero_stage", q.zero_stage);
  emit_kv(e, "recompute", to_string(q.recompute));
  if (q.recompute_layers > 0) emit_num(e, "recompute_layers", q.recompute_layers);
  if (q.recompute_modules != recompute_module::core_attn) {
    e << YAML::Key << "recompute_modules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const std::string& name : recompute_module_names(q.recompute_modules)) e << name;
    e << YAML::EndSeq;
  }
  e << YAML::Key << "offload" << YAML::Value << YAML::Flow << YAML::BeginMap;
  emit_kv(e, "params", to_string(q.offload.params));
  emit_kv(e, "grads", to_string(q.offload.grads));
  emit_kv(e, "optimizer", to_string(q.offload.optimizer));
  e << YAML::EndMap;
  emit_kv(e, "chunk_size", units::format_count(q.chunk_elements));
  if (q.cpu_embedding) e << YAML::Key << "cpu_embedding" << YAML::Value << true;
  emit_kv(e, "framework", to_string(q.framework));
  emit_kv(e, "attention", to_string(q.attention));
  emit_kv(e, "loss", to_string(q.loss));
  if (q.fp8 != Fp8::none) {
    emit_kv(e, "fp8", to_string(q.fp8));
    emit_kv(e, "fp8_recipe", to_string(q.fp8_recipe));
  }
  if (q.fp4 != Fp4::none) emit_kv(e, "fp4", to_string(q.fp4));
  if (q.fp8_params) e << YAML::Key << "fp8_params" << YAML::Value << true;
  if (q.bf16_layers.any()) {
    e << YAML::Key << "bf16_layers" << YAML::Value << YAML::Flow << YAML::BeginMap;
    emit_num(e, "first", q.bf16_layers.first);
    emit_num(e, "last", q.bf16_layers.last);
    e << YAML::EndMap;
  }
  if (q.grad_reduce != GradReduce::framework_default) emit_kv(e, "grad_reduce_dtype", to_string(q.grad_reduce));
  if (q.train_metric_passes > 0) emit_num(e, "train_metric_passes", q.train_metric_passes);
  e << YAML::EndMap;
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

void save_text_file(const std::string& path, const std::string& text, bool overwrite) {
  namespace fs = std::filesystem;
  if (!overwrite && fs::exists(path)) throw SpecError(path + ": already exists (refusing to overwrite it)");
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw SpecError(path + ": cannot write file");
    out << text;
    out.flush();
    if (!out) throw SpecError(path + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw SpecError(path + ": cannot replace file: " + ec.message());
  }
}

}  // namespace starfish
