#include "sim/schedule/simulate.h"

#include "sim/cost/framework.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <fstream>

#include "sim/cost/capacity.h"
#include "sim/cost/flops.h"
#include "sim/cost/low_precision.h"
#include "sim/des/engine.h"
#include "sim/des/trace.h"
#include "sim/schedule/chunked_iteration.h"
#include "sim/schedule/iteration.h"
#include "sim/spec/json_writer.h"

namespace starfish::schedule {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

StageMemoryReport stage_memory(const StageInfo& st, int stage, const des::Results& r, int points) {
  StageMemoryReport out;
  out.stage = stage;
  out.gpu = st.lead_gpu;
  out.model_state_bytes = st.model_state_bytes;
  struct Change {
    double time_s, delta_bytes, transient_bytes;
  };
  std::vector<Change> ev;
  ev.reserve(st.memory.size());
  for (const MemoryEvent& e : st.memory) ev.push_back({r.end_s[e.task], e.delta_bytes, e.transient_bytes});
  // At one instant: a task's transient bytes against the level it ran at (before anything
  // ending then frees), then frees, then allocations: a peak is never an artefact of ordering.
  auto order = [](const Change& c) { return c.transient_bytes > 0 ? 0 : c.delta_bytes < 0 ? 1 : 2; };
  std::stable_sort(ev.begin(), ev.end(), [&](const Change& a, const Change& b) {
    if (a.time_s != b.time_s) return a.time_s < b.time_s;
    return order(a) != order(b) ? order(a) < order(b) : a.delta_bytes < b.delta_bytes;
  });
  double level = st.model_state_bytes;
  out.peak_bytes = level;
  const double span = std::max(r.makespan_s, 1e-30);
  const double step = span / std::max(1, points - 1);
  double next_sample = 0;
  out.timeline.push_back({0, level});
  double highest = level;  // since the last sample: a sample never hides a peak between samples
  for (const auto& [t, d, transient] : ev) {
    if (level + transient > out.peak_bytes) {
      out.peak_bytes = level + transient;
      out.peak_time_s = t;
    }
    highest = std::max(highest, level + transient);
    level += d;
    if (level > out.peak_bytes) {
      out.peak_bytes = level;
      out.peak_time_s = t;
    }
    highest = std::max(highest, level);
    if (t >= next_sample) {
      out.timeline.push_back({t, highest});
      highest = level;
      next_sample = t + step;
    }
  }
  out.timeline.push_back({r.makespan_s, highest});
  return out;
}

// The trace's rows (every GPU, or each stage's lead GPU) and its memory counter tracks: each
// stage's GPU bytes over the iteration (the report's timeline), and each drawn node's CPU and
// NVMe bytes (the chunk runtime's and the offloaded states' levels: constant over the iteration).
des::TraceOptions trace_options(const Job& job, const BuiltIteration& it, const SimReport& rep, bool every_rank) {
  des::TraceOptions t;
  const int per_node = job.cluster.node.gpus;
  std::vector<int> nodes;
  for (const StageMemoryReport& s : rep.memory) {
    if (!every_rank) t.gpus.push_back(s.gpu);
    des::CounterTrack track{s.gpu / per_node, "stage " + std::to_string(s.stage) + " GPU memory (gpu" + std::to_string(s.gpu) + ")", {}};
    for (const MemorySample& p : s.timeline) track.points.emplace_back(p.time_s, p.bytes);
    t.counters.push_back(std::move(track));
    if (std::find(nodes.begin(), nodes.end(), s.gpu / per_node) == nodes.end()) nodes.push_back(s.gpu / per_node);
  }
  const std::pair<const char*, double> node_tiers[] = {{"CPU memory", it.cpu_bytes_per_node}, {"NVMe", it.nvme_bytes_per_node}};
  for (int node : nodes)
    for (const auto& [tier, bytes] : node_tiers)
      if (bytes > 0)
        t.counters.push_back({node, "node " + std::to_string(node) + " " + tier, {{0, bytes}, {rep.iteration_s, bytes}}});
  return t;
}

using report::PhaseId;
using Interval = std::pair<double, double>;

// Wall time during which at least one of the intervals ran.
double union_s(std::vector<Interval>& spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, start = 0, end = -1;
  for (const auto& [a, b] : spans) {
    if (a > end) {
      total += std::max(0.0, end - start);
      start = a;
      end = b;
    } else {
      end = std::max(end, b);
    }
  }
  return total + std::max(0.0, end - start);
}

// The phase a task's category stands for (report::PhaseSeconds); `other` for none of them.
PhaseId phase_of(const BuiltIteration& it, des::CategoryId c) {
  if (c == it.fwd) return PhaseId::forward;
  if (c == it.bwd) return PhaseId::backward;
  if (c == it.recompute) return PhaseId::recompute;
  if (c == it.offload) return PhaseId::moves;
  if (c == it.optimizer) return PhaseId::optimizer;
  // Expert parallelism's all-to-alls are collectives too (they were booked as `other`).
  if (c == it.tp || c == it.pp || c == it.dp || c == it.cp || c == it.ep) return PhaseId::collectives;
  return PhaseId::other;
}

// Per phase, the wall time a task of it ran on a stage's lead GPU or on no GPU at all (the
// host's CPU Adam, NVMe I/O: they serve every stage), mean over stages; `other` is the time none
// ran. Each phase counts in full where phases overlap (a prefetch under a forward).
report::PhaseSeconds predicted_phases(const BuiltIteration& it, const des::Engine& engine, const des::Results& r) {
  std::vector<char> on_gpu(engine.task_count(), 0);
  for (des::TaskId t : r.gpu_tasks) on_gpu[t] = 1;
  std::array<std::vector<Interval>, report::kPhases.size()> host;
  for (des::TaskId t = 0; t < engine.task_count(); ++t)
    if (!on_gpu[t]) host[static_cast<size_t>(phase_of(it, r.category[t]))].emplace_back(r.start_s[t], r.end_s[t]);
  host[static_cast<size_t>(PhaseId::other)].clear();
  report::PhaseSeconds mean;
  for (const StageInfo& st : it.stages) {
    std::array<std::vector<Interval>, report::kPhases.size()> spans = host;
    for (des::TaskId t : r.tasks_on_gpu(st.lead_gpu)) {
      const PhaseId p = phase_of(it, r.category[t]);
      if (p != PhaseId::other) spans[static_cast<size_t>(p)].emplace_back(r.start_s[t], r.end_s[t]);
    }
    std::vector<Interval> any;
    for (PhaseId p : report::kPhases) {
      std::vector<Interval>& v = spans[static_cast<size_t>(p)];
      any.insert(any.end(), v.begin(), v.end());
      if (p != PhaseId::other) report::seconds(mean, p) += union_s(v);
    }
    mean.other_s += r.makespan_s - union_s(any);
  }
  for (PhaseId p : report::kPhases) report::seconds(mean, p) /= static_cast<double>(it.stages.size());
  return mean;
}

// A stage's bubble is the time in the pipeline window (0 to the last backward of any stage) its
// lead GPU neither computed nor ran its own communication; the fraction is their mean over the
// stages, of the iteration.
double bubble_fraction(const BuiltIteration& it, const des::Results& r) {
  double window = 0;
  for (const StageInfo& st : it.stages) window = std::max(window, r.end_s[st.last_backward]);
  const std::array<des::CategoryId, 10> everything{it.fwd, it.bwd, it.recompute, it.tp, it.pp, it.dp, it.optimizer, it.offload, it.ep, it.cp};
  double bubble = 0;
  for (const StageInfo& st : it.stages) bubble += window - r.busy_union_s(st.lead_gpu, everything, 0, window);
  return bubble / it.stages.size() / r.makespan_s;
}

// Per communication group, the time its tasks ran on a stage's lead GPU, how much of it no
// compute hid, and the compute beside it (means over the stages).
std::vector<CommGroupReport> communication(const Job& job, const BuiltIteration& it, const des::Results& r) {
  const std::array<des::CategoryId, 3> compute{it.fwd, it.bwd, it.recompute};
  std::vector<std::pair<const char*, des::CategoryId>> groups{{"tp", it.tp}, {"pp", it.pp}, {"dp", it.dp}, {"offload", it.offload}};
  if (job.model.is_moe()) groups.push_back({"ep", it.ep});  // MoE all-to-alls
  if (job.plan.cp > 1) groups.push_back({"cp", it.cp});     // ring attention's sends
  std::vector<CommGroupReport> out;
  for (const auto& [name, cat] : groups) {
    CommGroupReport g;
    g.group = name;
    const std::array<des::CategoryId, 1> c{cat};
    for (const StageInfo& st : it.stages) {
      g.comm_s += r.busy_union_s(st.lead_gpu, c, 0, r.makespan_s);
      g.exposed_s += r.exposed_s(st.lead_gpu, c, compute, 0, r.makespan_s);
      g.compute_s += r.busy_union_s(st.lead_gpu, compute, 0, r.makespan_s);
    }
    const double n = static_cast<double>(it.stages.size());
    g.comm_s /= n;
    g.exposed_s /= n;
    g.compute_s /= n;
    g.ratio = g.comm_s > 0 ? g.compute_s / g.comm_s : INFINITY;
    out.push_back(g);
  }
  return out;
}

// Per-stage memory timelines, the peaks per tier as the allocator reserves them, and the
// verdict against the usable capacities (the rule `estimate` applies too).
void fill_memory(SimReport& rep, const Job& job, const BuiltIteration& it, const des::Results& r, int timeline_points) {
  const Cluster& c = job.cluster;
  double gpu_tensor_bytes = 0;  // the most loaded stage's peak without the allocator's reserve
  for (size_t s = 0; s < it.stages.size(); ++s) {
    rep.memory.push_back(stage_memory(it.stages[s], static_cast<int>(s), r, timeline_points));
    // What the framework's allocator reserves at that peak (PyTorch's max_memory_reserved), and
    // NCCL's buffers beside it: the figure that must fit, as the analytic tier's.
    const double peak = rep.memory.back().peak_bytes;
    const double nccl = communicator_buffer_bytes(job.plan, c.node.gpu, static_cast<int>(s), job.model.tied_embeddings);
    const double reserved = allocator_reserved_bytes(job.plan, peak) + nccl;
    if (reserved > rep.peak_gpu_bytes) {
      rep.peak_gpu_bytes = reserved;
      gpu_tensor_bytes = peak + nccl;
    }
  }
  const TierBytes capacity = usable_capacity(c);
  rep.gpu_capacity_bytes = capacity.gpu;
  rep.cpu_bytes_per_node = it.cpu_bytes_per_node;
  rep.cpu_capacity_bytes = capacity.cpu;
  rep.nvme_bytes_per_node = it.nvme_bytes_per_node;
  rep.nvme_capacity_bytes = capacity.nvme;
  rep.memory_verdict = check_memory(TierBytes{rep.peak_gpu_bytes, rep.cpu_bytes_per_node, rep.nvme_bytes_per_node}, capacity,
                                    gpu_tensor_bytes);
  rep.cpu_bytes_per_gpu = rep.cpu_bytes_per_node / c.node.gpus;
  rep.nvme_bytes_per_gpu = rep.nvme_bytes_per_node / c.node.gpus;
}

// Bytes the lead GPUs copied each way and read from / wrote to NVMe.
void fill_byte_totals(SimReport& rep, const des::Engine& engine) {
  for (des::TaskId t = 0; t < engine.task_count(); ++t) {
    switch (engine.task_kind(t)) {
      case des::TaskKind::Copy:
        // By direction, not by engine: with one copy engine both directions share it.
        (engine.copy_direction(t) == des::CopyDir::H2D ? rep.h2d_bytes : rep.d2h_bytes) += engine.task_bytes(t);
        break;
      case des::TaskKind::NvmeRead: rep.nvme_read_bytes += engine.task_bytes(t); break;
      case des::TaskKind::NvmeWrite: rep.nvme_write_bytes += engine.task_bytes(t); break;
      default: break;
    }
  }
}

// The busiest links (ties by id), chosen before any is named: a large cluster has a million.
std::vector<LinkReport> busiest_links(const des::Topology& topo, const des::Engine& engine, const des::Results& r,
                                      size_t max_links, double iteration_s) {
  std::vector<des::LinkId> carried;
  for (des::LinkId l : r.used_links)
    if (r.link_bytes[l] > 0) carried.push_back(l);
  const auto busier = [&](des::LinkId a, des::LinkId b) {
    return r.link_bytes[a] != r.link_bytes[b] ? r.link_bytes[a] > r.link_bytes[b] : a < b;
  };
  const size_t listed = std::min(carried.size(), max_links);
  std::partial_sort(carried.begin(), carried.begin() + static_cast<std::ptrdiff_t>(listed), carried.end(), busier);
  carried.resize(listed);
  std::vector<LinkReport> out;
  for (des::LinkId l : carried) {
    const des::LinkInfo info = topo.link(l);
    LinkReport lr;
    lr.name = info.name;
    lr.kind = des::to_string(info.kind);
    lr.bytes = r.link_bytes[l];
    lr.busy_s = r.link_busy_s[l];
    lr.utilisation = lr.bytes / (engine.link_bandwidth(l) * iteration_s);
    out.push_back(std::move(lr));
  }
  return out;
}

// Every task as a span, with the stage whose lead GPU it occupies (a GUI's Gantt view).
std::vector<TaskSpan> task_spans(const BuiltIteration& it, const des::Engine& engine, const des::Results& r, int gpus) {
  std::vector<int> stage_of_gpu(static_cast<size_t>(gpus), -1);
  for (size_t s = 0; s < it.stages.size(); ++s) stage_of_gpu[static_cast<size_t>(it.stages[s].lead_gpu)] = static_cast<int>(s);
  std::vector<TaskSpan> spans;
  spans.reserve(engine.task_count());
  for (des::TaskId t = 0; t < engine.task_count(); ++t) {
    TaskSpan span;
    for (int g : engine.task_gpus(t))
      if (stage_of_gpu[static_cast<size_t>(g)] >= 0) {
        span.stage = stage_of_gpu[static_cast<size_t>(g)];
        break;
      }
    span.category = engine.category_name(engine.task_category(t));
    span.name = std::string(engine.task_name(t));
    span.start_s = r.start_s[t];
    span.end_s = r.end_s[t];
    spans.push_back(std::move(span));
  }
  return spans;
}

}  // namespace

SimReport simulate(const Job& job, const SimOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const des::Topology topo(job.cluster);
  des::Engine engine(topo);
  engine.set_cancel(options.cancel);
  auto stop_if_cancelled = [&] {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw des::Cancelled();
  };
  stop_if_cancelled();
  if (options.progress) {
    options.progress("building", 0);
    engine.set_progress([&](size_t done, size_t total) {
      options.progress("simulating", static_cast<double>(done) / static_cast<double>(std::max<size_t>(1, total)));
    });
  }
  BuildOptions build;
  build.fixed_non_model_bytes = options.fixed_non_model_bytes;
  const BuiltIteration it = build_iteration(job, engine, build);
  stop_if_cancelled();
  SimReport rep;
  rep.build_wall_s = seconds_since(t0);
  const auto t1 = std::chrono::steady_clock::now();
  const des::Results& r = engine.run();
  rep.run_wall_s = seconds_since(t1);

  rep.model = job.model.name;
  rep.hardware = job.cluster.name;
  rep.gpus = job.cluster.total_gpus();
  rep.tasks = engine.task_count();
  rep.events = r.events;
  rep.used_links = r.used_links.size();
  rep.link_classes = engine.link_classes();
  rep.iteration_s = r.makespan_s;
  const IterationFlops fl = plan_iteration_flops(job.model, job.training.global_batch, job.plan);
  rep.tokens_per_s = tokens_per_s(job.model, job.training.global_batch, rep.iteration_s);
  rep.tflops_per_gpu = fl.hardware / rep.iteration_s / rep.gpus / 1e12;
  rep.mfu = fl.model / rep.iteration_s / rep.gpus / mfu_peak_flops(job.cluster.node.gpu, job.training.dtype, job.plan);
  rep.bubble_fraction = bubble_fraction(it, r);
  rep.phases = predicted_phases(it, engine, r);
  rep.comm = communication(job, it, r);
  fill_memory(rep, job, it, r, options.timeline_points);
  rep.moves = static_cast<int64_t>(it.moves.size());
  if (!options.moves_path.empty()) {
    std::ofstream out(options.moves_path);
    write_move_log(out, it.moves);
    if (!out) throw SpecError(options.moves_path + ": cannot write the move log");
  }
  fill_byte_totals(rep, engine);
  rep.links = busiest_links(topo, engine, r, options.max_links, rep.iteration_s);
  if (options.keep_spans) rep.spans = task_spans(it, engine, r, rep.gpus);
  if (!options.trace_path.empty())
    des::write_chrome_trace_file(options.trace_path, engine, r, trace_options(job, it, rep, options.trace_every_rank));
  return rep;
}

report::Report shared_report(const SimReport& r) {
  report::Report out;
  out.kind = report::kSimulationKind;
  out.model = r.model;
  out.hardware = r.hardware;
  out.gpus = r.gpus;
  out.iteration_s = r.iteration_s;
  out.tokens_per_s = r.tokens_per_s;
  out.phases = r.phases;
  out.memory.peak_gpu_bytes = r.peak_gpu_bytes;
  out.memory.cpu_bytes_per_gpu = r.cpu_bytes_per_gpu;
  out.memory.nvme_bytes_per_gpu = r.nvme_bytes_per_gpu;
  out.bytes = report::ByteFigures{r.h2d_bytes, r.d2h_bytes, r.nvme_read_bytes, r.nvme_write_bytes, std::nullopt};
  out.moves = r.moves;
  if (r.moves > 0) out.move_log_iterations = kChunkedIterations;
  return out;
}

std::string to_json(const SimReport& r) {
  report::Extras extras;
  extras.memory = [&](JsonWriter& w) {
    w.field("gpu_capacity_bytes", r.gpu_capacity_bytes);
    w.field("cpu_bytes_per_node", r.cpu_bytes_per_node).field("cpu_capacity_bytes", r.cpu_capacity_bytes);
    w.field("nvme_bytes_per_node", r.nvme_bytes_per_node).field("nvme_capacity_bytes", r.nvme_capacity_bytes);
    w.field("fits", r.memory_verdict.fits);
    w.field("within_allocator_reserve", r.memory_verdict.within_allocator_reserve);
    if (!r.memory_verdict.fits) w.field("why_not", r.memory_verdict.text());
    w.key("stages").begin_array();
    for (const auto& s : r.memory) {
      w.begin_object().field("stage", s.stage).field("gpu", s.gpu).field("model_state_bytes", s.model_state_bytes);
      w.field("peak_bytes", s.peak_bytes).field("peak_time_s", s.peak_time_s);
      w.key("timeline").begin_array();
      for (const auto& p : s.timeline) w.begin_array().value(p.time_s).value(p.bytes).end_array();
      w.end_array().end_object();
    }
    w.end_array();
  };
  extras.more = [&](JsonWriter& w) {
    w.field("tflops_per_gpu", r.tflops_per_gpu).field("mfu", r.mfu).field("bubble_fraction", r.bubble_fraction);
    w.key("communication").begin_array();
    for (const auto& g : r.comm) {
      w.begin_object().field("group", g.group).field("comm_s", g.comm_s).field("exposed_s", g.exposed_s);
      w.field("compute_s", g.compute_s).key("compute_to_comm");
      if (std::isfinite(g.ratio)) w.value(g.ratio);
      else w.null();
      w.end_object();
    }
    w.end_array();
    w.key("links").begin_array();
    for (const auto& l : r.links)
      w.begin_object().field("name", l.name).field("kind", l.kind).field("bytes", l.bytes).field("busy_s", l.busy_s)
          .field("utilisation", l.utilisation).end_object();
    w.end_array();
    w.key("simulator").begin_object();
    w.field("tasks", static_cast<int64_t>(r.tasks)).field("events", static_cast<int64_t>(r.events));
    w.field("used_links", static_cast<int64_t>(r.used_links)).field("link_classes", static_cast<int64_t>(r.link_classes));
    w.field("build_wall_s", r.build_wall_s).field("run_wall_s", r.run_wall_s);
    w.end_object();
  };
  return report::to_json(shared_report(r), extras);
}

}  // namespace starfish::schedule
