// The simulator's predictions, exactly: one line per job with the simulated iteration time and
// peak GPU bytes printed with 17 significant digits (every bit of a double), the task count,
// and the bytes that crossed the busiest link. A change meant to make the simulator faster, not
// different (docs/benchmarks.md, "Simulator speed"), must print the same lines before and
// after it:
//   build-before/bench/simulate_fingerprint > before.txt
//   build/bench/simulate_fingerprint > after.txt && diff before.txt after.txt
// Jobs: the bundled plans (configs/plans), every row of the Megatron-LM accuracy benchmark, the
// speed benchmark's jobs (GPT-3 175B on 1,024 to 131,072 GPUs and on a fat tree, Llama 3 405B
// on 16,384), and
// plans that take the other paths of the iteration builder: ZeRO-1/2/3, hierarchical and ring DP
// collectives, overlapped reductions, CPU and NVMe optimizer offload, interleaving, PCIe-only
// nodes, a DGX-2 and a DGX H100.
//
// usage: simulate_fingerprint [--quick]   (--quick: without the 65,536-GPU and larger jobs)
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "megatron_rows.h"
#include "scale_jobs.h"
#include "sim/schedule/simulate.h"

namespace {

using namespace starfish;

Job plan_file_job(const std::string& path) {
  const PlanFile f = load_plan_file(path);
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  Cluster c = load_cluster((dir / *f.hardware_path).string());
  if (f.nodes) c.nodes = *f.nodes;
  return make_job(load_model((dir / *f.model_path).string()), c, f.training, f.plan);
}

// A variant plan of `model` on `nodes` nodes of `hw`, shaped by `edit`.
Job variant(const std::string& model, const std::string& hw, int nodes, int64_t global_batch,
            const std::function<void(Plan&)>& edit) {
  Cluster c = load_cluster(bench::source_path("hwprofiles/" + hw + ".yaml"));
  c.nodes = nodes;
  Training t;
  t.global_batch = global_batch;
  t.dtype = c.node.gpu.peak_flops.count(DType::bf16) ? DType::bf16 : DType::fp16;  // V100: fp16
  Plan p;
  p.recompute = Recompute::full;
  edit(p);
  return make_job(load_model(bench::source_path("configs/models/" + model + ".yaml")), c, t, p);
}

void print(const std::string& name, const std::function<Job()>& make) {
  try {
    const schedule::SimReport r = schedule::simulate(make());
    const double busiest = r.links.empty() ? 0.0 : r.links.front().bytes;
    std::printf("%-40s iteration_s %.17g  peak_gpu_bytes %.17g  tasks %zu  busiest_link_bytes %.17g\n", name.c_str(),
                r.iteration_s, r.peak_gpu_bytes, r.tasks, busiest);
  } catch (const std::exception& e) {
    std::printf("%-40s error: %s\n", name.c_str(), e.what());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  for (const char* plan : {"consumer-gpt2-xl-zero3-offload", "megatron-175b-1f1b", "patrickstar-12b-v100-chunks", "tiny-cpu"})
    print(std::string("plan ") + plan, [&] { return plan_file_job(bench::source_path(std::string("configs/plans/") + plan + ".yaml")); });
  for (const bench::MegatronRow& row : bench::load_megatron_rows(bench::megatron_csv_path()))
    print("megatron " + row.params + "B", [&] { return row.job; });

  const std::string m = "megatron-7.5b";
  print("zero1 tp4 pp2 overlap (hier dp)", [&] { return variant(m, "dgx-a100-80gb", 8, 64, [](Plan& p) { p.tp = 4; p.pp = 2; p.zero_stage = 1; p.overlap_grad_reduce = true; }); });
  print("zero2 tp2 pp2 (per-mb reduce)", [&] { return variant(m, "dgx-a100-80gb", 8, 64, [](Plan& p) { p.tp = 2; p.pp = 2; p.zero_stage = 2; }); });
  print("zero3 tp8 dp8", [&] { return variant(m, "dgx-a100-80gb", 8, 32, [](Plan& p) { p.tp = 8; p.zero_stage = 3; }); });
  print("dp64 tp1 (hier 8 per node)", [&] { return variant(m, "dgx-a100-80gb", 8, 128, [](Plan& p) { p.zero_stage = 1; }); });
  print("cpu adam tp1 pp4 zero1", [&] { return variant(m, "dgx-a100-80gb", 4, 64, [](Plan& p) { p.pp = 4; p.zero_stage = 1; p.offload.optimizer = Tier::cpu; }); });
  // Offload as the frameworks that run it: Megatron's interleaved pipeline with --optimizer-cpu-offload,
  // DeepSpeed's ZeRO-Infinity (optimizer and grad partitions on NVMe) and ZeRO-3 with offload_param.
  print("cpu adam tp2 pp2 interleaved", [&] { return variant(m, "dgx-a100-80gb", 2, 32, [](Plan& p) { p.tp = 2; p.pp = 2; p.schedule = Schedule::interleaved; p.virtual_stages = 2; p.zero_stage = 1; p.offload.optimizer = Tier::cpu; }); });
  print("nvme adam tp2 zero3 deepspeed", [&] { return variant(m, "dgx-a100-80gb", 2, 32, [](Plan& p) { p.framework = Framework::deepspeed; p.tp = 2; p.zero_stage = 3; p.offload.grads = Tier::nvme; p.offload.optimizer = Tier::nvme; }); });
  print("params offload zero3 tp2 deepspeed", [&] { return variant(m, "dgx-a100-80gb", 2, 32, [](Plan& p) { p.framework = Framework::deepspeed; p.tp = 2; p.zero_stage = 3; p.offload = Offload{Tier::cpu, Tier::cpu, Tier::cpu}; }); });
  print("dgx2 v100 tp4 pp2 dp4", [&] { return variant("gpt2-large", "dgx2-v100-32gb", 2, 64, [](Plan& p) { p.tp = 4; p.pp = 2; p.overlap_grad_reduce = true; }); });
  print("v100 pcie tp2 pp2 dp2", [&] { return variant("gpt2-large", "v100-pcie-8x-240gb", 1, 16, [](Plan& p) { p.tp = 2; p.pp = 2; }); });
  print("h100 tp8 pp4 dp4 gpipe", [&] { return variant("megatron-18.4b", "dgx-h100", 16, 64, [](Plan& p) { p.tp = 8; p.pp = 4; p.schedule = Schedule::gpipe; }); });

  for (int gpus : {1024, 8192})
    print("gpt3-175b " + std::to_string(gpus) + " GPUs", [&] { return bench::gpt3_175b_job(gpus); });
  if (quick) return 0;
  for (int gpus : {65536, 131072})
    print("gpt3-175b " + std::to_string(gpus) + " GPUs", [&] { return bench::gpt3_175b_job(gpus); });
  print("llama3-405b 16384 GPUs m=512", [] { return bench::llama3_405b_job(); });
  print("gpt3-175b 65536 GPUs fat tree", [] { return bench::gpt3_175b_fat_tree_job(65536); });
  return 0;
}
