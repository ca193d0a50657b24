// libFuzzer target: a model, hardware or plan file through the whole job path a user runs
// (`starfish check` + `estimate`, and `simulate` for small iterations): the input is loaded as
// whichever kind it parses as and paired with bundled files for the other two. Finds what a
// loader lets through but the cost model, the schedule or the simulator cannot take.
#include <filesystem>

#include "fuzz/fuzz_check.h"
#include "sim/cost/estimate.h"
#include "sim/schedule/simulate.h"
#include "sim/spec/job.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/yaml_reader.h"

namespace {
using namespace starfish;

const std::string kRoot = STARFISH_SOURCE_DIR;
const std::string kModel = kRoot + "/configs/models/gpt2-small.yaml";
const std::string kHardware = kRoot + "/hwprofiles/dgx-a100-80gb.yaml";

void run(const std::string& text) {
  const YAML::Node root = parse_yaml_text(text, "input.yaml");
  static const Model bundled_model = load_model(kModel);
  static const Cluster bundled_cluster = load_cluster(kHardware);
  Model model = bundled_model;
  Cluster cluster = bundled_cluster;
  Training training;
  training.global_batch = 16;
  Plan plan;
  if (root["node"]) {
    cluster = parse_cluster(root, "input.yaml");
    training.global_batch = std::max(1, cluster.total_gpus());
  } else if (root["layers"]) {
    model = parse_model(root, "input.yaml");
    training.global_batch = cluster.total_gpus();
  } else {
    const PlanFile p = parse_plan_file(root, "input.yaml");
    training = p.training;
    plan = p.plan;
    if (p.nodes) cluster.nodes = *p.nodes;
  }
  if (!root["training"]) {  // the CLI's default training: a dtype the GPU has (cli::default_training)
    const auto& peak = cluster.node.gpu.peak_flops;
    training.dtype = peak.count(DType::bf16) ? DType::bf16 : peak.count(DType::fp16) ? DType::fp16 : DType::fp32;
    if (!peak.count(training.dtype)) return;  // a GPU without fp32: the loader's business, not this target's
  }
  const Job job = make_job(model, cluster, training, plan);
  (void)estimate(job);
  // The simulator only for iterations a fuzzer can afford many of.
  if (job.micro_batches() * job.model.layers <= 2'000) (void)schedule::simulate(job);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::refuse_cleanly([&] { run(fuzz::text_of(data, size)); }, {"input.yaml", kModel.c_str(), kHardware.c_str()});
  return 0;
}
