#include "exec/phase_clock.h"

#include <algorithm>
#include <atomic>

#include <time.h>

namespace starfish::exec {
namespace {
std::atomic<PhaseClock*> active{nullptr};

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double covered_s(const report::PhaseSeconds& s) {
  double covered = 0;
  for (report::PhaseId p : report::kPhases)
    if (p != report::PhaseId::other) covered += report::seconds(s, p);
  return covered;
}
}  // namespace

void PhaseClock::start() {
  seconds_ = {};
  cpu_seconds_ = {};
  open_.clear();
  since_ = clock::now();
  cpu_since_ = thread_cpu_s();
}

void PhaseClock::charge() {
  const clock::time_point now = clock::now();
  const double cpu = thread_cpu_s();
  if (!open_.empty()) {
    report::seconds(seconds_, open_.back()) += std::chrono::duration<double>(now - since_).count();
    report::seconds(cpu_seconds_, open_.back()) += cpu - cpu_since_;
  }
  since_ = now;
  cpu_since_ = cpu;
}

void PhaseClock::enter(report::PhaseId p) {
  charge();
  open_.push_back(p);
}

void PhaseClock::leave() {
  charge();
  if (!open_.empty()) open_.pop_back();
}

report::PhaseSeconds PhaseClock::stop(double iteration_s) {
  charge();
  open_.clear();
  seconds_.other_s = std::max(0.0, iteration_s - covered_s(seconds_));
  return seconds_;
}

report::PhaseSeconds PhaseClock::cpu_split(double cpu_s) const {
  report::PhaseSeconds s = cpu_seconds_;
  s.other_s = std::max(0.0, cpu_s - covered_s(s));
  return s;
}

void set_active_phase_clock(PhaseClock* clock) { active.store(clock, std::memory_order_release); }

PhaseScope::PhaseScope(report::PhaseId p) : clock_(active.load(std::memory_order_acquire)) {
  if (clock_) clock_->enter(p);
}

PhaseScope::~PhaseScope() {
  if (clock_) clock_->leave();
}

}  // namespace starfish::exec
