#include "exec/trainer_checkpoint.h"

#include "exec/trainer.h"
#include "sim/spec/error.h"

namespace starfish::exec {

CheckpointIdentity checkpoint_identity(const Job& job, int world_size) {
  const Model& m = job.model;
  const Plan& p = job.plan;
  auto n = [](int64_t v) { return std::to_string(v); };
  std::string name = m.name.empty() ? "-" : one_line(m.name, 80);
  for (char& c : name)
    if (c == ' ') c = '_';  // the header's values are single words
  return {{"model.name", name},
          {"model.layers", n(m.layers)},
          {"model.hidden", n(m.hidden)},
          {"model.heads", n(m.heads)},
          {"model.kv_heads", n(m.kv_heads)},
          {"model.ffn_hidden", n(m.ffn_hidden)},
          {"model.seq_len", n(m.seq_len)},
          {"model.vocab", n(m.vocab)},
          {"training.dtype", to_string(job.training.dtype)},
          {"training.optimizer", to_string(job.training.optimizer)},
          {"plan.tensor_parallel", n(p.tp)},
          {"plan.pipeline_parallel", n(p.pp)},
          {"plan.data_parallel", n(p.dp)},
          {"plan.zero_stage", n(p.zero_stage)},
          {"plan.chunk_size", n(p.chunk_elements)},
          {"world_size", n(world_size)}};
}

void save_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm, const CheckpointHooks& hooks,
                  const CheckpointIdentity& identity) {
  CheckpointInfo info;
  info.identity = identity;
  info.steps = trainer.steps_done();
  if (const LossScaler* s = trainer.loss_scaler()) info.loss_scale = s->state();
  save_checkpoint(dir, info, trainer.store().save_state(), comm, hooks);
}

CheckpointInfo resume_trainer(const std::string& dir, StoreTrainer& trainer, Comm& comm, const CheckpointIdentity& identity) {
  const NamedTensors state = trainer.store().save_state();  // shapes to load into
  const CheckpointInfo info = load_checkpoint(dir, state, comm, identity);
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
