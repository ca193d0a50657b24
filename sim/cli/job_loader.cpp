#include "sim/cli/job_loader.h"


#include "sim/cli/cli.h"
#include "sim/spec/input_file.h"
#include "sim/spec/limits.h"
#include "sim/spec/spec_io.h"

namespace starfish::cli {

Training default_training(const Cluster& cluster) {
  Training t;
  t.global_batch = cluster.total_gpus();
  t.dtype = cluster.node.gpu.peak_flops.count(DType::bf16) ? DType::bf16
            : cluster.node.gpu.peak_flops.count(DType::fp16) ? DType::fp16
                                                              : DType::fp32;
  return t;
}

Job load_job(const std::optional<std::string>& model, const std::optional<std::string>& hardware,
             const std::optional<std::string>& plan, const std::optional<std::string>& nodes) {
  std::optional<PlanFile> pf;
  if (plan) pf = load_plan_file(*plan);
  auto relative_to_plan = [&](const std::string& ref) { return path_named_in(*plan, ref); };
  std::string model_path, hw_path;
  if (model) model_path = resolve_model(*model);
  else if (pf && pf->model_path) model_path = relative_to_plan(*pf->model_path);
  else throw UsageError("missing --model (and no plan file naming one)");
  if (hardware) hw_path = resolve_hardware(*hardware);
  else if (pf && pf->hardware_path) hw_path = relative_to_plan(*pf->hardware_path);
  else throw UsageError("missing --hw (and no plan file naming one)");

  // A file the plan names but that cannot be read is the plan's error: say where it is named.
  auto referenced = [&](bool from_plan, const char* field, auto load) {
    try {
      return load();
    } catch (const InputFileError& e) {
      if (!from_plan) throw;
      pf->plan.provenance.fail(field, e.what());
    }
  };
  Model m = referenced(!model, "model", [&] { return load_model(model_path); });
  Cluster c = referenced(!hardware, "hardware", [&] { return load_cluster(hw_path); });
  if (pf && pf->nodes) {
    if (*pf->nodes > 1 && !c.node.nic)
      pf->plan.provenance.fail("nodes", std::to_string(*pf->nodes) + " nodes, but " + hw_path + " has no node.nic");
    if (!limits::checked_mul(*pf->nodes, c.node.gpus, limits::kMaxGpus))
      pf->plan.provenance.fail("nodes", std::to_string(*pf->nodes) + " nodes of " + std::to_string(c.node.gpus) +
                                            " GPUs is more than " + std::to_string(limits::kMaxGpus) + " GPUs (Starfish's limit)");
    c.nodes = *pf->nodes;
  }
  if (nodes) {
    int n = 0;
    try {
      n = std::stoi(*nodes);
    } catch (const std::exception&) {
      throw UsageError("--nodes expects a whole number, got '" + *nodes + "'");
    }
    if (n < 1) throw UsageError("--nodes must be at least 1");
    if (n > 1 && !c.node.nic) throw UsageError(hw_path + " has no node.nic, so it cannot span " + *nodes + " nodes");
    if (!limits::checked_mul(n, c.node.gpus, limits::kMaxGpus))
      throw UsageError("--nodes " + *nodes + " gives more than " + std::to_string(limits::kMaxGpus) + " GPUs (Starfish's limit)");
    c.nodes = n;
  }
  Training t = pf ? pf->training : default_training(c);
  Plan p = pf ? pf->plan : default_plan();
  return make_job(std::move(m), std::move(c), std::move(t), std::move(p));
}

}  // namespace starfish::cli
