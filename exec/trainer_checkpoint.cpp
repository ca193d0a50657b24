#include "exec/trainer_checkpoint.h"

#include "exec/trainer.h"
#include "sim/spec/error.h"

namespace starfish::exec {

void save_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm, const CheckpointHooks& hooks) {
  CheckpointInfo info;
  info.steps = trainer.steps_done();
  if (const LossScaler* s = trainer.loss_scaler()) info.loss_scale = s->state();
  save_checkpoint(dir, info, trainer.store().save_state(), comm, hooks);
}

CheckpointInfo resume_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm) {
  const NamedTensors state = trainer.store().save_state();  // shapes to load into
  const CheckpointInfo info = load_checkpoint(dir, state, comm);
  LossScaler* scaler = trainer.loss_scaler();
  if (scaler && !info.loss_scale)
    throw SpecError(info.file + (info.format == 1
                                     ? ": checkpoint format 1 predates saved loss scales, so this loss-scaled (fp16) run cannot "
                                       "resume with the scale it had; start it again"
                                     : ": the checkpoint holds no loss scale (its run did not scale the loss), this run does (fp16)"));
  if (!scaler && info.loss_scale)
    throw SpecError(info.file + ": the checkpoint holds a loss scale (its run scaled the loss: fp16), this run does not");
  trainer.store().load_state(state);
  trainer.set_steps_done(info.steps);
  if (scaler) scaler->restore(*info.loss_scale);
  return info;
}

}  // namespace starfish::exec
