#include "sim/search/des_refiner.h"

#include "sim/schedule/simulate.h"

namespace starfish::search {

Evaluation simulate_evaluation(const Job& job, const std::atomic<bool>* cancel) {
  Evaluation e;
  e.source = "des";
  try {
    schedule::SimOptions options;
    options.cancel = cancel;
    const schedule::SimReport r = schedule::simulate(job, options);
    e.iteration_s = r.iteration_s;
    e.tokens_per_s = r.tokens_per_s;
    e.mfu = r.mfu;
    e.tflops_per_gpu = r.tflops_per_gpu;
    e.bubble_fraction = r.bubble_fraction;
    e.gpu_peak_bytes = r.peak_gpu_bytes;
    e.cpu_peak_bytes = r.cpu_bytes_per_node;
    e.nvme_peak_bytes = r.nvme_bytes_per_node;
    if (!r.memory_verdict.fits) {
      e.constraint = r.memory_verdict.constraint();
      e.why_not = "simulated " + r.memory_verdict.text();
    }
  } catch (const SpecError& err) {
    e.constraint = Constraint::simulator;
    e.why_not = err.what();
  }
  e.fits = e.why_not.empty();
  return e;
}

Refiner des_refiner(const std::atomic<bool>* cancel) {
  return [cancel](const Job& job) { return simulate_evaluation(job, cancel); };
}

}  // namespace starfish::search
