// The simulator against every published measurement in ../shared/data it can express, with ONE
// hardware profile per machine and each framework's own mechanisms (sim/cost/framework.h), no
// constant fitted to a row. Per source it prints published vs predicted and the mean / worst
// absolute error; memory rows also say whether the measured peak is ever above the prediction
// and whether every measured OOM is predicted not to fit. Rows it cannot express are listed
// with the reason.
//
// usage: accuracy [shared/data directory]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <array>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "megatron_rows.h"
#include "sim/cost/collectives.h"
#include "sim/cost/estimate.h"
#include "sim/cost/flops.h"
#include "sim/cost/framework.h"
#include "sim/cost/op_time.h"
#include "sim/cost/params.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

namespace {

using namespace starfish;

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) {
      out.push_back(cell);
      cell.clear();
    } else cell += ch;
  }
  out.push_back(cell);
  return out;
}

// A CSV with a header row; cells by column name.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string at(const std::vector<std::string>& row, const std::string& column) const {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == column) return i < row.size() ? row[i] : "";
    throw std::runtime_error("no column " + column);
  }
};

Table read_table(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  Table t;
  std::string line;
  // Some tables have CRLF line ends: the last cell of a row must not keep the CR.
  const auto next_line = [&in, &line] {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
  };
  next_line();
  t.header = split_csv(line);
  while (next_line())
    if (!line.empty()) t.rows.push_back(split_csv(line));
  return t;
}

// Errors of one quantity of one source.
struct ErrorStats {
  double sum = 0, worst = 0;
  int rows = 0;
  void add(double predicted, double published) {
    const double e = std::fabs(predicted - published) / published;
    sum += e;
    worst = std::max(worst, e);
    ++rows;
  }
  double mean() const { return rows ? sum / rows : 0; }
};

struct Summary {
  std::map<std::string, ErrorStats> time;  // per source, iteration time (or its inverse)
  ErrorStats all_time;
  std::vector<std::string> not_expressed;
  int memory_below = 0, memory_rows = 0, oom_missed = 0, fit_missed = 0;
  double memory_worst_over = 0;
};

Cluster profile(const std::string& name) { return load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/" + name + ".yaml"); }

Model gpt(const std::string& name, int layers, int hidden, int heads, int seq, int vocab) {
  Model m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.seq_len = seq;
  m.vocab = vocab;
  return m;
}

double pct(double x) { return 100 * x; }

// ---- Narayanan et al. 2021, Table 1: Megatron-LM on Selene, TFLOP/s per GPU with recompute.
void narayanan(const std::string& dir, Summary& sum) {
  std::printf("\n== Narayanan 2021 Table 1 (Megatron-LM, A100 80GB): TFLOP/s per GPU, with recompute ==\n");
  std::printf("%-8s %3s %3s %3s %5s | %9s %9s %9s | %7s %7s\n", "params", "TP", "PP", "DP", "GPUs", "published",
              "analytic", "simulated", "err an.", "err sim");
  for (const bench::MegatronRow& row : bench::load_megatron_rows(dir + "/narayanan2021_megatron_table1_weak_scaling.csv")) {
    const Job& job = row.job;
    const double published = row.published_tflops;
    const double analytic = estimate(job).tflops_per_gpu;
    const double simulated = schedule::simulate(job).tflops_per_gpu;
    // Time is the inverse of TFLOP/s at a fixed FLOP count: compare iteration times.
    sum.time["Narayanan 2021"].add(published / simulated, 1.0);
    sum.all_time.add(published / simulated, 1.0);
    std::printf("%-8s %3d %3d %3d %5d | %9.1f %9.1f %9.1f | %+6.1f%% %+6.1f%%\n", row.params.c_str(), job.plan.tp,
                job.plan.pp, job.dp(), job.cluster.total_gpus(), published, analytic, simulated,
                pct(analytic / published - 1), pct(simulated / published - 1));
  }
}

// ---- Korthikanti et al. 2022, Table 4: one 22B layer's forward and backward (TP collectives
// included, as measured), per recompute / SP setting.
void korthikanti_table4(const std::string& dir, Summary& sum) {
  const Table t = read_table(dir + "/korthikanti2022_table4_layer_time_22B.csv");
  const Cluster cl = profile("dgx-a100-80gb");
  std::printf("\n== Korthikanti 2022 Table 4 (one 22B layer, TP8, b=4, s=2048, A100 80GB): ms ==\n");
  std::printf("%-26s | %6s %6s %7s | %6s %6s %7s\n", "experiment", "fwd", "pred.", "err", "bwd", "pred.", "err");
  for (const auto& r : t.rows) {
    const std::string what = t.at(r, "experiment");
    Model m = gpt("22b", 48, std::stoi(t.at(r, "hidden_size")), std::stoi(t.at(r, "attention_heads")),
                  std::stoi(t.at(r, "seq_len_tokens")), 51200);
    const int tp = std::stoi(t.at(r, "tensor_parallel"));
    const int64_t b = std::stoll(t.at(r, "micro_batch_size"));
    const bool sp = what.find("Sequence") != std::string::npos;
    const Recompute rc = what.find("Selective") != std::string::npos ? Recompute::selective
                         : what == "Baseline with recompute"      ? Recompute::full
                                                                  : Recompute::none;
    LayerShape shape{b, tp, sp, Attention::unfused};
    shape.bias = framework_traits(Framework::megatron_lm).linear_bias;  // Megatron-LM's bias kernels
    // 2022's Megatron-LM ran h = 6144 through apex's persistent LayerNorm, whose backward is one
    // pass (Megatron-LM a2fdcdf061, 2021-10, persist_ln_hidden_sizes): no second read.
    shape.norm_backward_rereads = false;
    const LayerTime lt = layer_time(cl.node.gpu, DType::fp16, m, shape, rc);
    // Two TP collectives of the layer's hidden states per pass (all-reduce; with SP an
    // all-gather and a reduce-scatter, together the same ring volume); backward's as the tiers
    // count them (framework.h backward_tp_all_reduces: full recompute repeats the forward's two,
    // SP gathers the QKV and MLP-in inputs again).
    Plan plan;
    plan.framework = Framework::megatron_lm;
    plan.tp = tp;
    plan.sequence_parallel = sp;
    plan.recompute = rc;
    const double bytes = 2.0 * m.seq_len * b * m.hidden;
    const LinkParams link = link_for_group(cl, tp, 1);
    const double ar = collective_time_s(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, tp, bytes, link);
    const double fwd = lt.forward_s + 2 * ar;
    const double bwd = lt.backward_s + lt.recompute_s + backward_tp_all_reduces(plan, false) * ar;
    const double pf = std::stod(t.at(r, "forward_ms")) / 1e3, pb = std::stod(t.at(r, "backward_ms")) / 1e3;
    sum.time["Korthikanti 2022 Table 4 fwd"].add(fwd, pf);
    sum.time["Korthikanti 2022 Table 4 bwd"].add(bwd, pb);
    std::printf("%-26s | %6.2f %6.2f %+6.1f%% | %6.2f %6.2f %+6.1f%%\n", what.c_str(), 1e3 * pf, 1e3 * fwd,
                pct(fwd / pf - 1), 1e3 * pb, 1e3 * bwd, pct(bwd / pb - 1));
  }
}


// ---- BigScience BLOOM-176B sweeps (Megatron-DeepSpeed on Jean Zay): sec/iteration, peak memory, OOM.
using Row = std::vector<std::string>;

// A sweep row's job as Megatron-DeepSpeed ran it (ZeRO-1, bf16, full recompute); nullopt, with
// the reason in `sum`, when the row cannot be expressed or checked.
std::optional<Job> bloom_job(const Table& t, const Row& r, const Cluster& node, Summary& sum) {
  const std::string line = t.at(r, "md_line");
  const int heads = t.at(r, "attention_heads").empty() ? 64 : std::stoi(t.at(r, "attention_heads"));
  Model m = gpt("bloom-" + t.at(r, "size_label"), std::stoi(t.at(r, "num_layers")), std::stoi(t.at(r, "hidden_size")),
                heads, 2048, 250880);
  m.position = PositionEmbedding::rope;  // ALiBi: no position parameters (as RoPE)
  // A LayerNorm on the word embeddings' output: tr11's slurm script passes --embed-layernorm from
  // 2022-02-05 (bigscience train/tr11-200B-ml/tr11-200B-ml.slurm, 628b562), before every sweep.
  m.embedding_norm = true;
  Cluster cl = node;
  cl.nodes = std::stoi(t.at(r, "nodes"));
  Training tr;
  tr.dtype = DType::bf16;
  tr.global_batch = std::stoll(t.at(r, "gbs"));
  Plan p;
  p.framework = Framework::deepspeed;
  p.tp = std::stoi(t.at(r, "tp"));
  p.pp = std::stoi(t.at(r, "pp"));
  p.dp = t.at(r, "dp").empty() ? 1 : std::stoi(t.at(r, "dp"));
  p.micro_batch = std::stoi(t.at(r, "mbs"));
  p.zero_stage = t.at(r, "zero_stage").rfind("0", 0) == 0 ? 0 : 1;
  p.recompute = Recompute::full;
  if (p.tp * p.pp * p.dp != cl.total_gpus()) {
    sum.not_expressed.push_back("BLOOM line " + line + ": DP x TP x PP = " + std::to_string(p.tp * p.pp * p.dp) +
                                " GPUs, but " + std::to_string(cl.nodes) + " nodes have " +
                                std::to_string(cl.total_gpus()));
    return std::nullopt;
  }
  Job job;
  try {
    job = make_job(m, cl, tr, p);
  } catch (const SpecError& e) {
    sum.not_expressed.push_back("BLOOM line " + line + ": " + e.what());
    return std::nullopt;
  }
  // A row whose published TFLOP/s and sec/iteration disagree about the work done (they imply
  // another batch than the row's) cannot be checked: list it rather than guess which is right.
  if (!t.at(r, "sec_per_iter").empty() && !t.at(r, "hw_tflops_per_gpu").empty()) {
    const double work = iteration_flops(m, tr.global_batch, Recompute::full).hardware;
    const double published_work =
        std::stod(t.at(r, "hw_tflops_per_gpu")) * 1e12 * cl.total_gpus() * std::stod(t.at(r, "sec_per_iter"));
    if (std::fabs(published_work / work - 1) > 0.25) {
      char why[200];
      std::snprintf(why, sizeof why, "BLOOM line %s: its TFLOP/s x sec/iteration is %.0f%% of the work of a %lld-sequence batch",
                    line.c_str(), 100 * published_work / work, static_cast<long long>(tr.global_batch));
      sum.not_expressed.push_back(why);
      return std::nullopt;
    }
  }
  return job;
}

// The memory cells of a row: measured, predicted (with what nvidia-smi counts) and the error, or
// whether an OOM was predicted; counted into `sum`.
std::string bloom_memory_cells(const std::string& mem, double reserved, bool fits, Summary& sum) {
  char buf[96];
  if (mem == "OOM") {
    if (fits) ++sum.oom_missed;
    std::snprintf(buf, sizeof buf, "%7s %7.1f %7s", "OOM", reserved / 1073741824.0, fits ? "MISSED" : "ok");
  } else if (mem.size() > 2 && mem != "GB") {
    const double measured = std::stod(mem) * 1073741824.0;
    ++sum.memory_rows;
    if (reserved < measured) ++sum.memory_below;
    if (!fits) ++sum.fit_missed;
    sum.memory_worst_over = std::max(sum.memory_worst_over, reserved / measured - 1);
    std::snprintf(buf, sizeof buf, "%7.0f %7.1f %+6.1f%%", measured / 1073741824.0, reserved / 1073741824.0,
                  pct(reserved / measured - 1));
  } else {
    std::snprintf(buf, sizeof buf, "%7s %7.1f %7s", "-", reserved / 1073741824.0, "");
  }
  return buf;
}

void bloom(const std::string& dir, Summary& sum) {
  const Table t = read_table(dir + "/bloom176b_sweep_0221_0225.csv");
  const Cluster node = profile("jean-zay-a100-80gb");
  std::printf("\n== BLOOM-176B sweeps (Megatron-DeepSpeed, ZeRO-1, bf16, full recompute, Jean Zay A100 80GB) ==\n");
  std::printf("%-5s %5s %3s %3s %3s %3s %4s | %7s %7s %7s | %7s %7s %7s\n", "line", "size", "DP", "TP", "PP", "mbs", "gbs",
              "s/it", "pred.", "err", "mem GB", "pred.", "over");
  for (const auto& r : t.rows) {
    const std::optional<Job> job = bloom_job(t, r, node, sum);
    if (!job) continue;
    const schedule::SimReport rep = schedule::simulate(*job);
    // BigScience read these peaks off nvidia-smi (chronicles-prequel.md: "Checking the actual GPU
    // allocations (nvidia-smi) - also need to take into account the cuda kernels"), which counts
    // the CUDA context and NCCL's buffers beside what the allocator reserves: the profile's
    // `reserved` GPU bytes. Whether it fits is the one rule every verb applies
    // (sim/cost/capacity.h).
    const double reserved = rep.peak_gpu_bytes + static_cast<double>(node.node.gpu.reserved_bytes);
    const std::string mem = t.at(r, "max_mem");
    std::string time_cells = "      -       -       -";
    if (!t.at(r, "sec_per_iter").empty() && mem != "OOM") {
      const double published = std::stod(t.at(r, "sec_per_iter"));
      sum.time["BLOOM-176B"].add(rep.iteration_s, published);
      sum.all_time.add(rep.iteration_s, published);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%7.1f %7.1f %+6.1f%%", published, rep.iteration_s, pct(rep.iteration_s / published - 1));
      time_cells = buf;
    }
    const std::string mem_cells = bloom_memory_cells(mem, reserved, rep.memory_verdict.fits, sum);
    const Plan& p = job->plan;
    std::printf("%-5s %5s %3d %3d %3d %3d %4lld | %s | %s\n", t.at(r, "md_line").c_str(), t.at(r, "size_label").c_str(),
                p.dp, p.tp, p.pp, p.micro_batch, static_cast<long long>(job->training.global_batch), time_cells.c_str(),
                mem_cells.c_str());
  }
}

// MPT shapes of llm-foundry's benchmark table (scripts/train/benchmarking): d_model, heads,
// layers; vocabulary 50368, expansion 4, learned positions up to the run's sequence, and biases
// in every linear layer and norm: the runs (April 2023, mosaicml/examples' MosaicGPT) built
// nn.Linear and LayerNorm with their default biases, and the table's NumParams counts them (the
// bench checks each row's count against the model's).
bool mpt_shape(const std::string& size, int& hidden, int& heads, int& layers) {
  static const std::map<std::string, std::array<int, 3>> shapes = {
      {"125m", {768, 12, 12}},  {"350m", {1024, 16, 24}}, {"760m", {1536, 12, 24}},
      {"1b", {2048, 16, 24}},   {"3b", {2560, 20, 32}},   {"7b", {4096, 32, 32}},
      {"13b", {5120, 40, 40}},  {"30b", {7168, 64, 48}},  {"70b", {8192, 64, 80}}};
  const auto it = shapes.find(size);
  if (it == shapes.end()) return false;
  hidden = it->second[0];
  heads = it->second[1];
  layers = it->second[2];
  return true;
}

// ---- MosaicML llm-foundry MPT on A100 (FSDP, flash attention): tokens/s per GPU, and fit.
void mosaicml(const std::string& dir, Summary& sum) {
  const Table t = read_table(dir + "/mosaicml_mpt_a100.csv");
  std::printf("\n== MosaicML MPT (llm-foundry, FSDP, flash attention, bf16, A100): tokens/s per GPU ==\n");
  std::printf("%-5s %5s %6s %4s %3s %3s %3s %5s | %7s %7s %7s | %8s %s\n", "GB", "model", "seq", "GPUs", "mb", "acc", "ckp",
              "shard", "pub.", "pred.", "err", "peak GiB", "fits (all trained)");
  for (const auto& r : t.rows) {
    const std::string section = t.at(r, "hardware_section");
    const bool gb40 = section.find("40GB") != std::string::npos;
    int hidden = 0, heads = 0, layers = 0;
    const std::string size = t.at(r, "Model");
    if (!mpt_shape(size, hidden, heads, layers)) {
      sum.not_expressed.push_back("MosaicML " + size + ": shape unknown");
      continue;
    }
    const int seq = std::stoi(t.at(r, "SeqLen (T)"));
    Model m = gpt("mpt-" + size, layers, hidden, heads, seq, 50368);
    m.tied_embeddings = true;
    m.dropout = false;  // MPTConfig's attn_pdrop, resid_pdrop and emb_pdrop default to 0.0
    const int64_t published_params = std::stoll(t.at(r, "NumParams")), model_params = shard_parameters(m, Shard{});
    if (model_params != published_params) {
      sum.not_expressed.push_back("MosaicML line " + t.at(r, "md_line") + ": the model has " +
                                  std::to_string(model_params) + " parameters, the table " +
                                  std::to_string(published_params));
      continue;
    }
    Cluster cl = profile(gb40 ? "dgx-a100-40gb" : "dgx-a100-80gb");
    const int gpus = std::stoi(t.at(r, "# GPUs"));
    cl.nodes = gpus / cl.node.gpus;
    Training tr;
    tr.dtype = DType::bf16;
    const int mbs = std::stoi(t.at(r, "MicroBatchSize"));
    const int acc = std::stoi(t.at(r, "GradAccum"));
    tr.global_batch = int64_t{mbs} * acc * gpus;
    Plan p;
    p.framework = Framework::fsdp;
    // The benchmark's runs are llm-foundry's scripts/train/yamls/pretrain/mpt-*.yaml, which set
    // attn_impl: triton, the Triton port of FlashAttention (v1), not FlashAttention-2.
    p.attention = Attention::flash1;
    // ComposerMPTCausalLM's loss_fn defaults to fused_crossentropy (flash-attn's CrossEntropyLoss).
    p.loss = Loss::fused;
    // Its train metrics, LanguageCrossEntropy and LanguagePerplexity (llm-foundry's MPT before
    // use_train_metrics, 2024-02), which Composer updates after every micro-batch's backward.
    p.train_metric_passes = 2;
    p.dp = gpus;
    p.micro_batch = mbs;
    p.zero_stage = t.at(r, "Sharding Strategy") == "FULL_SHARD" ? 3 : 2;
    p.overlap_grad_reduce = true;  // FSDP reduce-scatters each unit's gradients during backward
    p.recompute = t.at(r, "Activation Checkpointing") == "True" ? Recompute::full : Recompute::none;
    // Composer's FSDP mixed precision (MP Mode): DEFAULT reduces gradients in fp32 (FSDP's
    // default here), PURE in bf16.
    const std::string mp_mode = t.at(r, "MP Mode");
    if (mp_mode == "PURE") p.grad_reduce = GradReduce::training;
    else if (mp_mode != "DEFAULT") {
      sum.not_expressed.push_back("MosaicML line " + t.at(r, "md_line") + ": MP Mode " + mp_mode);
      continue;
    }
    Job job;
    try {
      job = make_job(m, cl, tr, p);
    } catch (const SpecError& e) {
      sum.not_expressed.push_back("MosaicML line " + t.at(r, "md_line") + ": " + e.what());
      continue;
    }
    const schedule::SimReport rep = schedule::simulate(job);
    const double published = std::stod(t.at(r, "Throughput (T/s/GPU)"));
    const double predicted = rep.tokens_per_s / gpus;
    const bool fits = rep.memory_verdict.fits;
    if (!fits) ++sum.fit_missed;
    sum.time["MosaicML MPT"].add(published / predicted, 1.0);
    sum.all_time.add(published / predicted, 1.0);
    std::printf("%-5s %5s %6d %4d %3d %3d %3s %5s | %7.0f %7.0f %+6.1f%% | %8.1f %s\n", gb40 ? "40" : "80", size.c_str(), seq,
                gpus, mbs, acc, p.recompute == Recompute::full ? "yes" : "no", p.zero_stage == 3 ? "full" : "grad", published,
                predicted, pct(predicted / published - 1), rep.peak_gpu_bytes / 1073741824.0,
                fits ? "fits" : rep.memory_verdict.within_allocator_reserve ? "MISSED (in the allocator's reserve)" : "MISSED");
  }
}

// ---- Megatron-Bridge's DGX H100 performance summary: Llama 3 8B / 70B and Qwen3-30B-A3B, each
// with its published layout (TP, PP, VP, EP, micro-batch, FSDP) as Megatron-core runs it. The
// 25.11 rows are FP8 with current scaling ("FP8-CS": Megatron-Bridge's
// bf16_with_fp8_current_scaling_mixed, --fp8-format hybrid --fp8-recipe tensorwise); the 25.09
// table states no precision, so its rows are not expressed.
Plan bridge_plan(const Table& t, const std::vector<std::string>& r, int gpus) {
  auto whole = [&](const char* column, int fallback) {
    const std::string v = t.at(r, column);
    return v.empty() ? fallback : std::stoi(v);
  };
  Plan p;
  p.framework = Framework::megatron_core;
  p.fp8 = Fp8::hybrid;
  p.fp8_recipe = Fp8Recipe::tensorwise;
  p.tp = whole("tensor_parallel", 1);
  p.pp = whole("pipeline_parallel", 1);
  p.ep = whole("expert_parallel", 1);
  p.virtual_stages = whole("virtual_pipeline", 1);
  if (p.virtual_stages > 1) p.schedule = Schedule::interleaved;
  p.dp = gpus / (p.tp * p.pp);
  p.micro_batch = whole("micro_batch_size", 1);
  p.sequence_parallel = p.tp > 1;
  p.overlap_grad_reduce = true;  // Megatron-Bridge's performance recipes overlap grad reduce and param gather
  // Megatron FSDP shards params, grads and optimizer states over DP (ZeRO-3); otherwise the
  // distributed optimizer (ZeRO-1).
  p.zero_stage = t.at(r, "fsdp") == "1" ? 3 : 1;
  // The perf scripts (r0.2.0 scripts/performance/configs/{llama3,qwen3}/*_llm_pretrain.py) set
  // ddp.grad_reduce_in_fp32 = False: bf16 gradient buffers and reductions.
  p.grad_reduce = GradReduce::training;
  // bf16_with_fp8_current_scaling_mixed sets fp8_param_gather = True (training/mixed_precision.py):
  // fp8 params under the distributed optimizer. Under Megatron FSDP they are not modelled: those
  // rows keep 16-bit params and their fp8 copies (more memory, never less).
  p.fp8_params = p.zero_stage <= 2;
  // Every layer in fp8: the recipe keeps the first and last in bf16, but the performance scripts
  // that measured these rows switch that off (scripts/performance/utils/helpers.py,
  // get_precision_config: "Disable BF16 Transformer layers in the performance config"), so
  // p.bf16_layers stays {0, 0}.
  // The Llama and Qwen3 providers/recipes set cross_entropy_loss_fusion with
  // cross_entropy_fusion_impl "te" (models/llama/llama_provider.py, recipes/qwen/qwen3_moe.py).
  p.loss = Loss::te;
  return p;
}

void megatron_bridge(const std::string& dir, Summary& sum) {
  std::printf("\n== Megatron-Bridge, DGX H100 (Megatron-core, FP8 current scaling): tokens/s per GPU ==\n");
  std::printf("%-14s %4s %-22s | %9s %9s %9s | %7s %7s | %9s %9s | %8s %s\n", "model", "GPUs", "layout", "published",
              "analytic", "simulated", "err an.", "err sim", "TFLOP/s p", "TFLOP/s s", "GPU GiB", "memory");
  const Table t = read_table(dir + "/megatron_bridge_h100_llama3_qwen3_30b.csv");
  const std::map<std::string, std::string> models = {
      {"LLAMA3_8B", "llama3-8b"}, {"LLAMA3_70B", "llama3-70b"}, {"Qwen3_30B_a3B (MoE)", "qwen3-30b-a3b"}};
  for (const auto& r : t.rows) {
    const std::string name = t.at(r, "model"), release = t.at(r, "container_release");
    if (t.at(r, "precision") != "FP8-CS" || !models.count(name)) {
      sum.not_expressed.push_back("Megatron-Bridge " + release + " " + name + ": precision '" + t.at(r, "precision") +
                                  "' (only the rows stating FP8-CS are predicted)");
      continue;
    }
    const int gpus = std::stoi(t.at(r, "num_gpus"));
    Model m = load_model(std::string(STARFISH_SOURCE_DIR) + "/configs/models/" + models.at(name) + ".yaml");
    m.seq_len = std::stoi(t.at(r, "seq_len_tokens"));
    Cluster cl = profile("dgx-h100");
    cl.nodes = gpus / cl.node.gpus;
    Training tr;
    tr.global_batch = std::stoll(t.at(r, "global_batch_size_seqs"));
    const Plan p = bridge_plan(t, r, gpus);
    Job job;
    try {
      job = make_job(m, cl, tr, p);
    } catch (const SpecError& e) {
      sum.not_expressed.push_back("Megatron-Bridge " + release + " " + name + ": " + e.what());
      continue;
    }
    const double published = std::stod(t.at(r, "tokens_per_sec_per_gpu"));
    const Estimate e = estimate(job);
    const schedule::SimReport rep = schedule::simulate(job);
    const double analytic = e.tokens_per_s / gpus, simulated = rep.tokens_per_s / gpus;
    // Model TFLOP/s per GPU at the published speed: Starfish's model FLOPs per token against
    // Megatron-Bridge's (both count active parameters; a gap is a FLOP-counting difference).
    const double flops_per_token = e.model_flops / (static_cast<double>(tr.global_batch) * m.seq_len);
    sum.time["Megatron-Bridge H100"].add(published / simulated, 1.0);
    sum.all_time.add(published / simulated, 1.0);
    if (!rep.memory_verdict.fits) ++sum.fit_missed;
    char layout[64];
    std::snprintf(layout, sizeof layout, "TP%d PP%d VP%d EP%d mb%d %s", p.tp, p.pp, p.virtual_stages, p.ep, p.micro_batch,
                  p.zero_stage == 3 ? "FSDP" : "DO");
    std::printf("%-14s %4d %-22s | %9.0f %9.0f %9.0f | %+6.1f%% %+6.1f%% | %9s %9.0f | %8.1f %s\n", models.at(name).c_str(),
                gpus, layout, published, analytic, simulated, pct(analytic / published - 1), pct(simulated / published - 1),
                t.at(r, "model_tflops_per_gpu").c_str(), flops_per_token * published / 1e12, rep.peak_gpu_bytes / 1073741824.0,
                rep.memory_verdict.fits ? "fits" : "MISSED (it ran)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : std::string(STARFISH_SHARED_DATA_DIR);
  Summary sum;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    narayanan(dir, sum);
    korthikanti_table4(dir, sum);
    bloom(dir, sum);
    mosaicml(dir, sum);
    megatron_bridge(dir, sum);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "accuracy: %s\n", e.what());
    return 1;
  }
  std::printf("\n== Summary: iteration-time error (|predicted - published| / published) ==\n");
  for (const auto& [source, s] : sum.time)
    std::printf("%-32s mean %5.1f%%  worst %5.1f%%  (%d rows)\n", source.c_str(), pct(s.mean()), pct(s.worst), s.rows);
  std::printf("%-32s mean %5.1f%%  worst %5.1f%%  (%d rows)\n", "all iteration times", pct(sum.all_time.mean()),
              pct(sum.all_time.worst), sum.all_time.rows);
  std::printf("memory: %d of %d measured peaks above the prediction; worst over-prediction %+.1f%%; "
              "%d measured OOMs predicted to fit; %d runs that trained predicted not to fit\n",
              sum.memory_below, sum.memory_rows, pct(sum.memory_worst_over), sum.oom_missed, sum.fit_missed);
  for (const std::string& why : sum.not_expressed) std::printf("not expressed: %s\n", why.c_str());
  std::printf("(%.1f s)\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
