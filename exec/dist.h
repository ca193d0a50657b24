#pragma once
// Ranks and collectives. A rank learns who it is from the environment torchrun and Slurm set
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and joins c10d process groups over a
// TCPStore rendezvous: Gloo for CPU tensors, and NCCL for CUDA tensors where the executor's CUDA
// paths are built against a LibTorch with c10d NCCL (USE_C10D_NCCL, see exec/CMakeLists.txt) and
// every rank has a GPU of its own; otherwise CUDA tensors go through Gloo too. On a CUDA machine
// each rank's current device is cuda:LOCAL_RANK (round-robin when ranks outnumber devices). A
// single process without those variables is rank 0 of 1 and needs no group.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "sim/chunk/backend.h"  // Group

namespace starfish::exec {

struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // From the environment; throws SpecError naming the variable when one is malformed, or when
  // WORLD_SIZE > 1 comes without MASTER_ADDR / MASTER_PORT.
  static RankEnv from_environment();
};

class Comm {
 public:
  // World size 1: every collective is the identity, no group is made.
  explicit Comm(const RankEnv& env, std::chrono::seconds timeout = std::chrono::seconds(120));
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  // "nccl" (CUDA tensors over NCCL, CPU tensors over Gloo), "gloo" (everything over Gloo) or
  // "none" (one rank).
  const char* backend_name() const;

  // Collectives over `group` (nullptr = every rank). Roots and output positions are indices
  // into group->ranks; a subgroup's c10d group is made on first use, by its members only.
  void all_reduce_sum(at::Tensor& t, const Group* group = nullptr);
  // `outputs[j]` receives member j's `input` (all the same size).
  void all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input, const Group* group = nullptr);
  // `output` receives the sum over members of their `inputs[index]` (index: this rank's place in
  // the group); `inputs` are left as they were.
  void reduce_scatter_sum(const std::vector<at::Tensor>& inputs, at::Tensor& output, const Group* group = nullptr);
  // Sums every member's `t` into the root's `t` (the others' contents are unspecified after).
  void reduce_sum(at::Tensor& t, int root, const Group* group = nullptr);
  void broadcast(at::Tensor& t, int root, const Group* group = nullptr);
  void barrier();

  struct Impl;  // the c10d groups (exec/dist.cpp); public so that its helpers there can name it

 private:
  RankEnv env_;
  std::unique_ptr<Impl> group_;
};

}  // namespace starfish::exec
