#pragma once
// Checkpoints that survive a crash at any instant. Each rank writes its tensors to a temp file,
// fsyncs it and renames it into dir/step-<n>/rank-<r>.ckpt (then fsyncs the directory); once
// every rank has, rank 0 atomically replaces dir/latest with "step-<n>" and removes older steps.
// A run killed mid-save leaves `latest` naming the previous complete checkpoint, so a resume
// loses nothing but the iterations since it.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace starfish::exec {

class Comm;

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct CheckpointHooks {
  // Called after each piece is written to the temp file, with the bytes so far and in all.
  // Lets a test kill the process in the middle of a save.
  std::function<void(int64_t written_bytes, int64_t total_bytes)> after_write;
};

// One file: writes atomically (temp + fsync + rename + fsync of the folder).
void write_checkpoint_file(const std::string& path, int64_t steps, const NamedTensors& tensors,
                           const CheckpointHooks& hooks = {});
// Loads into `tensors` in place; returns the steps recorded. Throws SpecError naming the file
// when it is missing, truncated, corrupt or holds other tensors (names, dtypes, sizes).
int64_t read_checkpoint_file(const std::string& path, const NamedTensors& tensors);

// The collective protocol above, over every rank of `comm`.
void save_checkpoint(const std::string& dir, int64_t steps, const NamedTensors& tensors, Comm& comm,
                     const CheckpointHooks& hooks = {});
// Returns the steps of the latest complete checkpoint in `dir` after loading this rank's part;
// throws SpecError when there is none.
int64_t load_checkpoint(const std::string& dir, const NamedTensors& tensors, Comm& comm);
bool has_checkpoint(const std::string& dir);

}  // namespace starfish::exec
