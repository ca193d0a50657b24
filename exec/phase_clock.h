#pragma once
// Where a real iteration's time goes: exclusive wall time per phase (forward, backward,
// recompute, chunk moves, optimizer, collectives; report::PhaseSeconds), charged by PhaseScope
// objects that the trainer, the segment functions and the Torch backend open around their work.
// Scopes nest: a move inside a forward is charged to moves and paused forward, so the phases add
// up to the iteration (what no scope covered is `other`).
//
// One clock is active per process, for the iteration being measured; without one a scope costs
// a pointer test. The scopes run on the thread that trains: LibTorch runs CPU autograd on the
// calling thread. On CUDA, backward runs on the device's autograd thread while the caller waits,
// and the times are host-side (kernels are asynchronous): the CPU figures are the ones to read.
#include <chrono>
#include <vector>

#include "sim/report/report.h"

namespace starfish::exec {

class PhaseClock {
 public:
  void start();                                   // resets and starts the iteration
  report::PhaseSeconds stop(double iteration_s);  // other = iteration_s less every phase
  // The same split in the calling thread's CPU time (other: the rest of `cpu_s`); after stop().
  report::PhaseSeconds cpu_split(double cpu_s) const;
  void enter(report::PhaseId p);
  void leave();

 private:
  using clock = std::chrono::steady_clock;
  void charge();
  report::PhaseSeconds seconds_, cpu_seconds_;
  std::vector<report::PhaseId> open_;
  clock::time_point since_{};
  double cpu_since_ = 0;
};

// The clock scopes charge; nullptr (the default) turns them off.
void set_active_phase_clock(PhaseClock* clock);

class PhaseScope {
 public:
  explicit PhaseScope(report::PhaseId p);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseClock* clock_;
};

}  // namespace starfish::exec
