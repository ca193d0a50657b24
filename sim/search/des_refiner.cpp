#include "sim/search/des_refiner.h"

#include "sim/schedule/simulate.h"
#include "sim/spec/units.h"

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
    if (r.peak_gpu_bytes > r.gpu_capacity_bytes)
      e.why_not = "GPU memory: simulated peak " + units::human_bytes(r.peak_gpu_bytes) + " of " +
                  units::human_bytes(r.gpu_capacity_bytes);
    else if (r.cpu_bytes_per_node > r.cpu_capacity_bytes)
      e.why_not = "CPU memory: simulated " + units::human_bytes(r.cpu_bytes_per_node) + " per node of " +
                  units::human_bytes(r.cpu_capacity_bytes);
    else if (r.nvme_bytes_per_node > r.nvme_capacity_bytes)
      e.why_not = "NVMe: simulated " + units::human_bytes(r.nvme_bytes_per_node) + " per node of " +
                  units::human_bytes(r.nvme_capacity_bytes);
  } catch (const SpecError& err) {
    e.why_not = err.what();
  }
  e.fits = e.why_not.empty();
  return e;
}

Refiner des_refiner(const std::atomic<bool>* cancel) {
  return [cancel](const Job& job) { return simulate_evaluation(job, cancel); };
}

}  // namespace starfish::search
