// One truth between the tiers on plans the search enumerates: for plans spread over the spaces of
// three models (dense and MoE, Megatron-core and FSDP, pipelines of every schedule, offload,
// recomputation, chunked plans), the estimate's GPU memory is never below the simulator's peak and
// the two say the same of whether it fits (bench/tier_agreement samples more; docs/benchmarks.md,
// One truth).
#include <gtest/gtest.h>

#include <string>

#include "sim/cost/estimate.h"
#include "sim/schedule/simulate.h"
#include "sim/search/plan_space.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

namespace starfish::search {
namespace {

// Returns how many of the plans compared were chunked.
int expect_estimate_holds_the_simulated_peak(const std::string& model, const std::string& hardware, int nodes,
                                             int64_t global_batch, Framework framework) {
  const std::string root = STARFISH_SOURCE_DIR;
  const Model m = load_model(root + "/configs/models/" + model + ".yaml");
  Cluster c = load_cluster(root + "/hwprofiles/" + hardware + ".yaml");
  c.nodes = nodes;
  Training t;
  t.global_batch = global_batch;
  SearchSpace space;
  space.framework = framework;
  const std::vector<Candidate> plans = enumerate_plans(m, c, t, space);
  const size_t stride = plans.size() / 40 + 1;  // about 40 plans spread over the space
  int compared = 0, chunked = 0;
  for (size_t i = stride / 2; i < plans.size(); i += stride) {
    const Job job = make_job(m, c, t, plans[i].to_plan());
    const Estimate e = estimate(job);
    if (e.gpu.total() > 3 * e.gpu.capacity_bytes) continue;  // far over: no verdict in doubt
    ++compared;
    chunked += job.plan.chunked();
    schedule::SimReport r;
    try {
      r = schedule::simulate(job);
    } catch (const SpecError& refused) {  // the chunk runtime cannot place it: it does not fit
      EXPECT_FALSE(e.fits) << model << ": " << short_label(plans[i]) << ": " << refused.what();
      continue;
    }
    EXPECT_GE(e.gpu.total(), r.peak_gpu_bytes * (1 - 1e-9)) << model << ": " << short_label(plans[i]);
    // The same verdict both ways: the loss and a layer's backward are two moments in both tiers,
    // and a chunked plan's states are placed by the runtime's rule in both.
    EXPECT_EQ(e.fits, r.memory_verdict.fits) << model << ": " << short_label(plans[i]) << ": " << e.gpu.total() / 1073741824.0
                                             << " GiB estimated, " << r.peak_gpu_bytes / 1073741824.0 << " simulated";
  }
  EXPECT_GE(compared, 10) << model;
  return chunked;
}

TEST(TierAgreement, Llama3On8DgxH100UnderMegatronCore) {
  expect_estimate_holds_the_simulated_peak("llama3-70b", "dgx-h100", 8, 256, Framework::megatron_core);
}

TEST(TierAgreement, Mixtral8x7bOn4DgxH100UnderMegatronCore) {
  expect_estimate_holds_the_simulated_peak("mixtral-8x7b", "dgx-h100", 4, 256, Framework::megatron_core);
}

TEST(TierAgreement, Llama2On2DgxA100UnderFsdp) {
  expect_estimate_holds_the_simulated_peak("llama2-7b", "dgx-a100-40gb", 2, 256, Framework::fsdp);
}

// DeepSpeed's space holds Starfish's chunked plans too (ZeRO groups of chunks, offload tiers the
// runtime may use): the chunk placement's one truth.
TEST(TierAgreement, Gpt2XlOnADgxA100WithChunkedPlans) {
  EXPECT_GE(expect_estimate_holds_the_simulated_peak("gpt2-xl", "dgx-a100-80gb", 1, 64, Framework::deepspeed), 5);
}

}  // namespace
}  // namespace starfish::search
