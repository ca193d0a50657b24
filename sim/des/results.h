#pragma once
// What a run produced: per task ready/start/end, per resource busy time, per directed link the
// bytes carried and the time it carried any, the makespan, and per GPU which tasks occupied it,
// with interval queries for bubble and compute/communication analyses.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "sim/des/types.h"

namespace starfish::des {

struct Results {
  double makespan_s = 0;
  std::vector<double> ready_s, start_s, end_s;  // per task
  std::vector<CategoryId> category;             // per task (copied for the queries below)
  std::vector<double> resource_busy_s;          // per resource: summed task durations
  std::vector<double> link_bytes;               // per directed link: bytes carried
  std::vector<double> link_busy_s;              // per directed link: time with >= 1 flow
  std::vector<LinkId> used_links;               // links some task's route crosses (the rest carry nothing)
  // Per GPU: the tasks occupying it (Engine::task_gpus), sorted by start time, then id.
  std::vector<uint32_t> gpu_task_begin;         // size gpus + 1
  std::vector<TaskId> gpu_tasks;
  // Per GPU and category: summed task durations (a GPU's row has category_count entries).
  std::vector<double> gpu_category_s;
  size_t category_count = 0;
  // Engine statistics.
  uint64_t events = 0;         // events handled (stale flow events excluded)
  uint64_t flows = 0;          // flows (bundles) started
  uint64_t rate_updates = 0;   // flow rates recomputed (sum of component sizes)

  double duration_s(TaskId t) const { return end_s[t] - start_s[t]; }
  std::span<const TaskId> tasks_on_gpu(int gpu) const;
  // Sum of the durations of the GPU's tasks of one category (overlaps counted twice; use
  // busy_union_s for wall time).
  double category_busy_s(int gpu, CategoryId c) const;
  // Tasks running at some time in [t0_s, t1_s): start < t1 and end > t0 (zero-length tasks:
  // start in [t0, t1)). Sorted by id.
  std::vector<TaskId> tasks_running(double t0_s, double t1_s) const;
  // Wall time within [t0_s, t1_s) during which at least one of the GPU's tasks with a category in
  // `cats` was running.
  double busy_union_s(int gpu, std::span<const CategoryId> cats, double t0_s, double t1_s) const;
  // Wall time within [t0_s, t1_s) during which a task in `cats` ran on the GPU but none in
  // `hidden_by` did (e.g. exposed communication: cats = {tp, dp}, hidden_by = {fwd, bwd}).
  double exposed_s(int gpu, std::span<const CategoryId> cats, std::span<const CategoryId> hidden_by, double t0_s,
                   double t1_s) const;
  // The same with braced lists: busy_union_s(g, {fwd, bwd}, 0, makespan_s).
  double busy_union_s(int gpu, std::initializer_list<CategoryId> cats, double t0_s, double t1_s) const {
    return busy_union_s(gpu, std::span<const CategoryId>(cats.begin(), cats.size()), t0_s, t1_s);
  }
  double exposed_s(int gpu, std::initializer_list<CategoryId> cats, std::initializer_list<CategoryId> hidden_by,
                   double t0_s, double t1_s) const {
    return exposed_s(gpu, std::span<const CategoryId>(cats.begin(), cats.size()),
                     std::span<const CategoryId>(hidden_by.begin(), hidden_by.size()), t0_s, t1_s);
  }
};

}  // namespace starfish::des
