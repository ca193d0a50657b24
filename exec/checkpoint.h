#pragma once
// Checkpoints that survive a crash at any instant. Each rank writes its tensors to a temp file,
// fsyncs it and renames it into dir/step-<n>/rank-<r>.ckpt (then fsyncs the directory); once
// every rank has, rank 0 atomically replaces dir/latest with "step-<n>" and removes older steps.
// A run killed mid-save leaves `latest` naming the previous complete checkpoint, so a resume
// loses nothing but the iterations since it.
//
// File format 3 (format 2 lacked the identity lines, format 1 also the loss_scale line; both
// are still read):
//   STARFISH-CHECKPOINT 3 / steps N / loss_scale none | loss_scale SCALE GOOD_STEPS /
//   identity J / J lines "key value" / tensors K / K lines "name dtype elements" / end /
//   the tensors' bytes / FNV-1a checksum of them.
// The identity says what run wrote the file (model shape, plan, dtype, world size): resuming
// with another is refused, naming what differs. A file is verified before any of it is used:
// its size against the header's (truncation), then the checksum (corruption).
// A save that fails (a full disk) removes its partial file; `latest` still names the previous
// complete checkpoint.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "exec/loss_scaler.h"

namespace starfish::exec {

class Comm;

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
using CheckpointIdentity = std::vector<std::pair<std::string, std::string>>;

// What a checkpoint records besides the tensors.
struct CheckpointInfo {
  explicit CheckpointInfo(int64_t steps_done = 0) : steps(steps_done) {}
  int64_t steps = 0;                          // iterations done
  std::optional<LossScalerState> loss_scale;  // a loss-scaled (fp16) run's scaler; none otherwise
  // What run wrote it ("model.hidden" -> "64", "world_size" -> "2", ...); empty: not recorded
  // (format 1 and 2, or a caller that does not check). Values hold no whitespace.
  CheckpointIdentity identity;
  // Filled when read: the file's format (1: written before checkpoints kept the loss scale) and path.
  int format = 3;
  std::string file;
};

struct CheckpointHooks {
  // Called after each piece is written to the temp file, with the bytes so far and in all.
  // Lets a test kill the process in the middle of a save.
  std::function<void(int64_t written_bytes, int64_t total_bytes)> after_write;
};

// One file: writes atomically (temp + fsync + rename + fsync of the folder).
void write_checkpoint_file(const std::string& path, const CheckpointInfo& info, const NamedTensors& tensors,
                           const CheckpointHooks& hooks = {});
// Loads into `tensors` in place; returns what the file recorded. Throws SpecError naming the
// file when it is missing, truncated, corrupt or holds other tensors (names, dtypes, sizes).
CheckpointInfo read_checkpoint_file(const std::string& path, const NamedTensors& tensors);
// Only what a file's header records (steps, loss scale, identity), without its tensors.
CheckpointInfo read_checkpoint_header(const std::string& path);

// The collective protocol above, over every rank of `comm`.
void save_checkpoint(const std::string& dir, const CheckpointInfo& info, const NamedTensors& tensors, Comm& comm,
                     const CheckpointHooks& hooks = {});
// The latest complete checkpoint in `dir`, after loading this rank's part; throws SpecError
// when there is none, when it was written by another number of ranks or (with `identity`) by
// another run, or when the ranks' files record different steps or loss scales.
CheckpointInfo load_checkpoint(const std::string& dir, const NamedTensors& tensors, Comm& comm,
                               const CheckpointIdentity& identity = {});

// "key: A in the checkpoint, B in this run; ..." for the keys whose values differ; "" when none
// (a key only one side has counts as differing).
std::string identity_difference(const CheckpointIdentity& saved, const CheckpointIdentity& current);
bool has_checkpoint(const std::string& dir);

}  // namespace starfish::exec
