// The Backend contract over the simulator's backends: the counting ReferenceBackend (the chunk
// runtime's oracle) and the SimBackend the chunked iteration walks, before recording (the
// warm-up: buffers only) and while recording (every move a task). The executor's TorchBackend
// runs the same suite in tests/exec/test_torch_backend.cpp.
#include <memory>
#include <string>

#include "sim/chunk/reference_backend.h"
#include "sim/des/engine.h"
#include "sim/des/topology.h"
#include "sim/schedule/sim_backend.h"
#include "sim/spec/spec_io.h"
#include "support/backend_conformance.h"

namespace starfish::schedule {
namespace {

using testing::BackendCapacityConformance;
using testing::BackendConformance;
using testing::BackendMaker;

// A SimBackend with the engine and topology it adds tasks to (one DGX A100 node: it has NVMe).
struct SimBackendOwner {
  des::Topology topology;
  des::Engine engine;
  SimBackend backend;
  explicit SimBackendOwner(bool recording)
      : topology(load_cluster(std::string(STARFISH_SOURCE_DIR) + "/hwprofiles/dgx-a100-80gb.yaml")),
        engine(topology),
        backend(engine, 0, 0, SimBackendCategories{engine.category("offload"), engine.category("dp")}) {
    if (recording) backend.start_recording();
  }
};

BackendMaker sim_backend(bool recording) {
  return {recording ? "SimBackendRecording" : "SimBackendWarmUp", [recording](int64_t) {
            auto owner = std::make_shared<SimBackendOwner>(recording);
            return std::shared_ptr<Backend>(owner, &owner->backend);
          }};
}

BackendMaker reference_backend() {
  return {"ReferenceBackend", [](int64_t gpu_bytes) { return std::shared_ptr<Backend>(std::make_shared<ReferenceBackend>(gpu_bytes)); }};
}

INSTANTIATE_TEST_SUITE_P(SimulatorBackends, BackendConformance,
                         ::testing::Values(reference_backend(), sim_backend(false), sim_backend(true)), testing::backend_maker_name);
// The SimBackend keeps no capacity: the chunk runtime keeps within its budgets, and the
// simulator reports the levels it reached (SimReport's memory timeline).
INSTANTIATE_TEST_SUITE_P(SimulatorBackends, BackendCapacityConformance, ::testing::Values(reference_backend()),
                         testing::backend_maker_name);

}  // namespace
}  // namespace starfish::schedule
