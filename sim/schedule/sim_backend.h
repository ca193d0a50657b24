#pragma once
// The chunk runtime's Backend for the simulator: every copy and collective the runtime decides
// becomes a task of the discrete-event engine on the rank's lead GPU, ordered as the executor
// would order it: moves on the compute queue follow the compute stream's last task and block
// it; moves on the copy queue follow the compute issued before them and block only whoever
// waits on them. Before recording starts (the warm-up iteration) it only hands out buffers.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/chunk/backend.h"
#include "sim/des/engine.h"

namespace starfish::schedule {

struct SimBackendCategories {
  des::CategoryId offload = 0, dp = 0;
};

class SimBackend final : public Backend {
 public:
  SimBackend(des::Engine& engine, int gpu, int node, SimBackendCategories categories);

  // From now on, moves become tasks (the warm-up iteration runs before).
  void start_recording() { recording_ = true; }
  bool recording() const { return recording_; }

  // The compute stream's tasks, appended by the iteration builder: each runs after the previous
  // one and after every completion waited on since.
  void append_compute(des::TaskId t);
  // A further task of the same step (a layer's backward after its recompute): it runs after the
  // last one, and moves issued for the next step still overlap the whole step, as if it were
  // one task.
  void continue_compute(des::TaskId t);
  des::TaskId last_compute() const { return last_compute_; }

  Buffer allocate(Tier tier, int64_t bytes) override;
  void release(const Buffer& buffer) override;
  Completion copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) override;
  Completion collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                        const std::vector<Buffer>& outputs, DType dtype, const MoveTag& tag) override;
  void wait(Completion done) override;
  double now_s() const override { return 0; }

  double bytes_moved(Tier from, Tier to) const { return moved_[static_cast<int>(from)][static_cast<int>(to)]; }

 private:
  Completion issue(des::TaskId first, des::TaskId last, Queue queue);

  des::Engine& engine_;
  int gpu_, node_;
  SimBackendCategories cat_;
  bool recording_ = false;
  uint64_t next_buffer_ = 0;
  des::TaskId last_compute_ = des::kNone;
  des::TaskId previous_compute_ = des::kNone;  // the one before last_compute_
  des::TaskId last_copy_queue_ = des::kNone;
  std::vector<des::TaskId> waited_;                    // completions the next compute waits for
  std::vector<des::TaskId> completion_task_{des::kNone};  // Completion id -> its last task
  double moved_[3][3] = {};
};

}  // namespace starfish::schedule
