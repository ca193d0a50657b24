#pragma once
// Everything a StoreTrainer needs to resume exactly, through the checkpoint protocol of
// checkpoint.h: its store's state (parameters, masters, optimizer moments), the iterations done
// and, for a loss-scaled (fp16) run, the scaler's scale and good-step count, so that a resumed
// run continues the same scale schedule instead of restarting at 2^16.
#include <cstdint>
#include <string>

#include "exec/checkpoint.h"
#include "sim/spec/job.h"

namespace starfish::exec {

class StoreTrainer;

// What a checkpoint of this job on `world_size` ranks records as its identity: the model's
// shape, the plan, the training dtype and optimizer, the world size. Resuming with a job that
// differs in any of them is refused, naming the keys (checkpoint.h).
CheckpointIdentity checkpoint_identity(const Job& job, int world_size);

void save_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm, const CheckpointHooks& hooks = {},
                  const CheckpointIdentity& identity = {});

// Loads the latest checkpoint in `dir` into the trainer; returns what it recorded. Throws
// SpecError naming the file when it cannot resume this trainer: a loss-scaled run from a
// checkpoint without a loss scale (format 1, or a run without scaling), or the reverse.
// With an identity, a checkpoint written by another run (another identity) is refused too.
CheckpointInfo resume_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm, const CheckpointIdentity& identity = {});

}  // namespace starfish::exec
