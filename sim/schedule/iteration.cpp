#include "sim/schedule/iteration.h"

#include "sim/schedule/chunked_iteration.h"
#include "sim/schedule/static_iteration.h"

namespace starfish::schedule {

void intern_categories(des::Engine& eng, BuiltIteration& out) {
  out.fwd = eng.category(category::forward);
  out.bwd = eng.category(category::backward);
  out.recompute = eng.category(category::recompute);
  out.tp = eng.category(category::tp);
  out.pp = eng.category(category::pp);
  out.dp = eng.category(category::dp);
  out.optimizer = eng.category(category::optimizer);
  out.offload = eng.category(category::offload);
  out.ep = eng.category(category::ep);
  out.cp = eng.category(category::cp);
}

IterationBuilder iteration_builder_for(const Plan& plan) {
  return plan.chunked() ? &build_chunked_iteration : &build_static_iteration;
}

BuiltIteration build_iteration(const Job& job, des::Engine& engine, const BuildOptions& options) {
  return iteration_builder_for(job.plan)(job, engine, options);
}

}  // namespace starfish::schedule
