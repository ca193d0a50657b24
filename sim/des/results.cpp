#include "sim/des/results.h"

#include <algorithm>
#include <utility>

#include "sim/spec/error.h"

namespace starfish::des {

namespace {

using Intervals = std::vector<std::pair<double, double>>;

// The union of the GPU's tasks with a category in `cats`, clipped to [t0, t1), as disjoint
// intervals in time order (the GPU's tasks are sorted by start, so one pass merges them).
Intervals merged(const Results& r, int gpu, std::span<const CategoryId> cats, double t0, double t1) {
  Intervals out;
  for (TaskId t : r.tasks_on_gpu(gpu)) {
    if (std::find(cats.begin(), cats.end(), r.category[t]) == cats.end()) continue;
    const double a = std::max(r.start_s[t], t0), b = std::min(r.end_s[t], t1);
    if (!(b > a)) continue;
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, b);
    else out.emplace_back(a, b);
  }
  return out;
}

double length(const Intervals& v) {
  double s = 0;
  for (const auto& [a, b] : v) s += b - a;
  return s;
}

}  // namespace

std::span<const TaskId> Results::tasks_on_gpu(int gpu) const {
  if (gpu < 0 || static_cast<size_t>(gpu) + 1 >= gpu_task_begin.size())
    throw SpecError("results: GPU " + std::to_string(gpu) + " does not exist");
  return {gpu_tasks.data() + gpu_task_begin[gpu], gpu_task_begin[gpu + 1] - gpu_task_begin[gpu]};
}

double Results::category_busy_s(int gpu, CategoryId c) const {
  tasks_on_gpu(gpu);  // range check
  if (c >= category_count) throw SpecError("results: category " + std::to_string(c) + " does not exist");
  return gpu_category_s[static_cast<size_t>(gpu) * category_count + c];
}

std::vector<TaskId> Results::tasks_running(double t0_s, double t1_s) const {
  std::vector<TaskId> out;
  for (TaskId t = 0; t < start_s.size(); ++t) {
    const double a = start_s[t], b = end_s[t];
    if (b > a ? (a < t1_s && b > t0_s) : (a >= t0_s && a < t1_s)) out.push_back(t);
  }
  return out;
}

double Results::busy_union_s(int gpu, std::span<const CategoryId> cats, double t0_s, double t1_s) const {
  return length(merged(*this, gpu, cats, t0_s, t1_s));
}

double Results::exposed_s(int gpu, std::span<const CategoryId> cats, std::span<const CategoryId> hidden_by,
                          double t0_s, double t1_s) const {
  const Intervals a = merged(*this, gpu, cats, t0_s, t1_s);
  const Intervals b = merged(*this, gpu, hidden_by, t0_s, t1_s);
  double overlap = 0;
  size_t j = 0;
  for (const auto& [a0, a1] : a) {
    while (j < b.size() && b[j].second <= a0) ++j;
    for (size_t k = j; k < b.size() && b[k].first < a1; ++k)
      overlap += std::min(a1, b[k].second) - std::max(a0, b[k].first);
  }
  return length(a) - overlap;
}

}  // namespace starfish::des
