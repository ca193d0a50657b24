#include "sim/des/trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <ostream>
#include <vector>

#include "sim/spec/error.h"
#include "sim/spec/json_writer.h"

namespace starfish::des {

namespace {

// JSON string escaping is the spec's JsonWriter's (one escaper for every JSON Starfish writes).
void put_string(std::ostream& out, std::string_view s) {
  std::string quoted;
  JsonWriter::escape_into(quoted, s);
  out << quoted;
}

void put_number(std::ostream& out, double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.write(buf, end - buf);
}

// Lanes for tasks without a resource, keyed by an owner (a GPU, or a node for other devices):
// greedy interval partitioning, so no two events of one lane overlap.
struct Lanes {
  struct Lane {
    int pid = 0;
    std::string name;
    double end_s = 0;
  };
  std::vector<Lane> lanes;
  std::vector<std::vector<size_t>> by_owner;  // owner -> lane indices

  size_t place(size_t owner, int pid, const std::string& base, double start_s, double end_s) {
    if (by_owner.size() <= owner) by_owner.resize(owner + 1);
    for (size_t li : by_owner[owner]) {
      if (lanes[li].end_s <= start_s) {
        lanes[li].end_s = end_s;
        return li;
      }
    }
    const size_t k = by_owner[owner].size();
    lanes.push_back(Lane{pid, k == 0 ? base : base + " " + std::to_string(k + 1), end_s});
    by_owner[owner].push_back(lanes.size() - 1);
    return lanes.size() - 1;
  }
};

// The GPUs and nodes whose rows the trace draws: every one when TraceOptions::gpus is empty,
// else the listed GPUs and their nodes.
struct Drawn {
  bool every_gpu = true;
  std::vector<char> gpu, node;

  Drawn(const Topology& topo, const std::vector<int>& gpus)
      : every_gpu(gpus.empty()),
        gpu(static_cast<size_t>(topo.total_gpus()), every_gpu),
        node(static_cast<size_t>(topo.nodes()), every_gpu) {
    for (int g : gpus) {
      if (g < 0 || g >= topo.total_gpus())
        throw SpecError("write_chrome_trace: GPU " + std::to_string(g) + " is not in the topology");
      gpu[static_cast<size_t>(g)] = 1;
      node[static_cast<size_t>(g / topo.gpus_per_node())] = 1;
    }
  }
  bool resource(const Engine& engine, ResourceId r) const {
    const ResourceInfo info = engine.resource(r);
    return info.gpu >= 0 ? gpu[static_cast<size_t>(info.gpu)] != 0 : node[static_cast<size_t>(info.node)] != 0;
  }
};

// Resource-less tasks (transfers, collectives, delays) placed on lanes, in start order: each
// (task, lane) becomes one event.
struct LaneEvents {
  Lanes lanes;
  std::vector<std::pair<TaskId, size_t>> events;
};

LaneEvents place_unresourced_tasks(const Engine& engine, const Results& results, const TraceOptions& options,
                                   const Drawn& drawn) {
  const Topology& topo = engine.topology();
  const int gpus = topo.total_gpus();
  const int unplaced_pid = topo.nodes();  // delays without a resource
  std::vector<TaskId> order;
  for (TaskId t = 0; t < engine.task_count(); ++t)
    if (engine.task_resource(t) == kNone) order.push_back(t);
  std::stable_sort(order.begin(), order.end(),
                   [&](TaskId a, TaskId b) { return results.start_s[a] < results.start_s[b]; });
  LaneEvents out;
  for (TaskId t : order) {
    const double a = results.start_s[t], b = results.end_s[t];
    std::vector<int> on = engine.task_gpus(t);
    if (!drawn.every_gpu) {
      const bool had_gpus = !on.empty();
      std::erase_if(on, [&](int g) { return !drawn.gpu[static_cast<size_t>(g)]; });
      if (had_gpus && on.empty()) continue;  // runs on none of the drawn GPUs
    }
    if (engine.task_kind(t) == TaskKind::Collective && !options.collectives_on_every_gpu && !on.empty()) on.resize(1);
    if (engine.task_kind(t) == TaskKind::Transfer && !on.empty()) on.resize(1);  // drawn at its source GPU
    if (!on.empty()) {
      for (int g : on)
        out.events.emplace_back(t, out.lanes.place(static_cast<size_t>(g), g / topo.gpus_per_node(),
                                                   "gpu" + std::to_string(g) + " comm", a, b));
    } else if (engine.task_kind(t) == TaskKind::Transfer) {
      // A transfer between non-GPU devices (host, NVMe): drawn on its source's node.
      const int node = engine.task_node(t);
      if (!drawn.node[static_cast<size_t>(node)]) continue;
      out.events.emplace_back(t, out.lanes.place(static_cast<size_t>(gpus + 1 + node), node,
                                                 "node" + std::to_string(node) + " transfers", a, b));
    } else if (drawn.every_gpu) {  // a delay of no GPU: drawn with every rank only
      out.events.emplace_back(t, out.lanes.place(static_cast<size_t>(gpus), unplaced_pid, "delays", a, b));
    }
  }
  return out;
}

// The trace's JSON, one event after another: metadata (process and thread names), tasks as
// complete events, counter samples.
class TraceJson {
 public:
  TraceJson(std::ostream& out, const Engine& engine, const Results& results)
      : out_(out), engine_(engine), results_(results) {
    out_ << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  }
  void close() { out_ << "\n]}\n"; }

  void meta(const char* what, int pid, size_t tid, const std::string& name) {
    sep();
    out_ << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"args\":{\"name\":";
    put_string(out_, name);
    out_ << "}}";
  }

  void task(TaskId t, int pid, size_t tid) {
    sep();
    out_ << "{\"name\":";
    put_string(out_, engine_.task_name(t));
    out_ << ",\"cat\":";
    put_string(out_, engine_.category_name(engine_.task_category(t)));
    out_ << ",\"ph\":\"X\",\"ts\":";
    put_number(out_, results_.start_s[t] * 1e6);
    out_ << ",\"dur\":";
    put_number(out_, (results_.end_s[t] - results_.start_s[t]) * 1e6);
    out_ << ",\"pid\":" << pid << ",\"tid\":" << tid << ",\"args\":{\"task\":" << t << ",\"kind\":\""
         << to_string(engine_.task_kind(t)) << "\"";
    if (engine_.task_kind(t) != TaskKind::Compute && engine_.task_kind(t) != TaskKind::Delay) {
      out_ << ",\"bytes\":";
      put_number(out_, engine_.task_bytes(t));
    }
    if (engine_.task_kind(t) == TaskKind::Collective) {
      out_ << ",\"collective\":\"" << to_string(engine_.collective_kind(t))
           << "\",\"group_size\":" << engine_.group_gpus(engine_.collective_group(t)).size();
    }
    out_ << ",\"ready_us\":";
    put_number(out_, results_.ready_s[t] * 1e6);
    out_ << "}}";
  }

  void counter(const CounterTrack& track, double time_s, double value) {
    sep();
    out_ << "{\"name\":";
    put_string(out_, track.name);
    out_ << ",\"ph\":\"C\",\"ts\":";
    put_number(out_, time_s * 1e6);
    out_ << ",\"pid\":" << track.pid << ",\"args\":{\"bytes\":";
    put_number(out_, value);
    out_ << "}}";
  }

 private:
  void sep() {
    if (!first_) out_ << ",\n";
    first_ = false;
  }
  std::ostream& out_;
  const Engine& engine_;
  const Results& results_;
  bool first_ = true;
};

}  // namespace

void write_chrome_trace(std::ostream& out, const Engine& engine, const Results& results, TraceOptions options) {
  const Topology& topo = engine.topology();
  if (results.start_s.size() != engine.task_count())
    throw SpecError("write_chrome_trace: the results are not from this engine's last run");
  const Drawn drawn(topo, options.gpus);
  const LaneEvents placed = place_unresourced_tasks(engine, results, options, drawn);
  const std::vector<Lanes::Lane>& lanes = placed.lanes.lanes;
  const size_t lane_tid0 = engine.resource_count() + 1;
  const int unplaced_pid = topo.nodes();

  TraceJson json(out, engine, results);
  for (int k = 0; k < topo.nodes(); ++k)
    if (drawn.node[static_cast<size_t>(k)]) json.meta("process_name", k, 0, "node " + std::to_string(k));
  const std::vector<std::vector<size_t>>& by_owner = placed.lanes.by_owner;
  if (by_owner.size() > static_cast<size_t>(topo.total_gpus()) && !by_owner[static_cast<size_t>(topo.total_gpus())].empty())
    json.meta("process_name", unplaced_pid, 0, "unplaced");
  for (ResourceId r : engine.used_resources()) {
    if (!drawn.resource(engine, r)) continue;
    const ResourceInfo info = engine.resource(r);
    json.meta("thread_name", info.node, r + 1, info.name);
  }
  for (size_t li = 0; li < lanes.size(); ++li) json.meta("thread_name", lanes[li].pid, lane_tid0 + li, lanes[li].name);

  for (TaskId t = 0; t < engine.task_count(); ++t) {
    const ResourceId r = engine.task_resource(t);
    if (r != kNone && drawn.resource(engine, r)) json.task(t, engine.resource(r).node, r + 1);
  }
  for (const auto& [t, li] : placed.events) json.task(t, lanes[li].pid, lane_tid0 + li);
  for (const CounterTrack& track : options.counters)
    for (const auto& [time_s, value] : track.points) json.counter(track, time_s, value);
  json.close();
}

void write_chrome_trace_file(const std::string& path, const Engine& engine, const Results& results,
                             TraceOptions options) {
  std::ofstream f(path);
  if (!f) throw SpecError("cannot write trace file '" + path + "'");
  write_chrome_trace(f, engine, results, options);
  f.flush();
  if (!f) throw SpecError("error writing trace file '" + path + "'");
}

}  // namespace starfish::des
