#pragma once
// The executor's Backend of the chunk runtime (sim/chunk/backend.h): buffers are flat byte
// tensors (GPU and CPU tiers) or files in a scratch directory (NVMe tier, pread/pwrite),
// collectives go through c10d. Without CUDA the "GPU" tier is a pool of CPU memory limited to the
// given capacity, and everything says so ("gpu tier: CPU pool (no CUDA)"); copies and
// collectives then complete before they return. With CUDA (STARFISH_WITH_CUDA and a device at
// run time) the GPU tier is device memory, CPU buffers are pinned, copy-queue moves run on a
// separate stream and completions are CUDA events.
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "sim/chunk/backend.h"

namespace starfish::exec {

class Comm;
struct CudaQueues;

// The LibTorch type of a training dtype (tf32 computes in fp32 tensors); throws for fp8.
at::ScalarType torch_scalar_type(DType dtype);

struct TierCapacity {
  int64_t gpu_bytes = 0;   // required: the budget of the GPU tier (a real limit on the CPU pool)
  int64_t cpu_bytes = 0;   // 0 = unlimited (host memory)
  int64_t nvme_bytes = 0;  // 0 = unlimited (the scratch file system)
};

struct TierUsage {
  int64_t in_use_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t buffers = 0;
};

class TorchBackend : public Backend {
 public:
  // `scratch_root`: where the NVMe tier's directory is made (a fresh one per backend, removed
  // with it). `comm` serves collectives (may be a world of 1).
  TorchBackend(TierCapacity capacity, const std::string& scratch_root, Comm& comm);
  ~TorchBackend() override;

  Buffer allocate(Tier tier, int64_t bytes) override;
  void release(const Buffer& buffer) override;
  Completion copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) override;
  Completion collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                        const std::vector<Buffer>& outputs, DType dtype, const MoveTag& tag) override;
  void wait(Completion done) override;
  double now_s() const override;

  // The bytes of a GPU- or CPU-tier buffer as a uint8 tensor, for compute (views of chunks).
  // Throws for NVMe buffers, which compute never touches.
  at::Tensor bytes(const Buffer& buffer) const;
  // Host <-> buffer transfers outside the runtime's moves (initial values, checkpoints, reports):
  // `host` is a CPU tensor of at least `bytes` bytes; `offset_bytes` is into the buffer.
  void write_host(const Buffer& buffer, int64_t offset_bytes, const at::Tensor& host);
  void read_host(const Buffer& buffer, int64_t offset_bytes, at::Tensor& host);
  // "gpu tier: CPU pool (no CUDA)" or "gpu tier: cuda:<index>".
  std::string gpu_tier_description() const;
  bool uses_cuda() const { return cuda_; }
  // Where the GPU tier's buffers live and compute runs: the CUDA device current when the backend
  // was made (cuda:LOCAL_RANK, chosen by Comm), or the CPU.
  at::Device compute_device() const {
    return cuda_ ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index_)) : at::Device(at::kCPU);
  }
  const std::string& scratch_dir() const { return scratch_dir_; }

  const TierUsage& usage(Tier t) const { return usage_[static_cast<int>(t)]; }
  // Bytes copied from tier `from` to tier `to` (3 x 3), and moved by collectives (sent + received).
  int64_t copied_bytes(Tier from, Tier to) const { return copied_[static_cast<int>(from)][static_cast<int>(to)]; }
  int64_t collective_bytes() const { return collective_bytes_; }
  int64_t copies() const { return copies_; }

 private:
  struct Slot;
  Slot& slot(const Buffer& b);
  const Slot& slot(const Buffer& b) const;
  void read_nvme(const Slot& s, at::Tensor& into, int64_t bytes);
  void write_nvme(const Slot& s, const at::Tensor& from, int64_t bytes);

  TierCapacity capacity_;
  Comm& comm_;
  bool cuda_ = false;
  int device_index_ = 0;
  std::string scratch_dir_;
  std::map<uint64_t, std::unique_ptr<Slot>> slots_;
  uint64_t next_id_ = 1;
  std::array<TierUsage, 3> usage_{};
  std::array<std::array<int64_t, 3>, 3> copied_{};
  int64_t collective_bytes_ = 0;
  int64_t copies_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::shared_ptr<CudaQueues> cuda_queues_;  // CUDA only: copy stream and pending events
};

}  // namespace starfish::exec
