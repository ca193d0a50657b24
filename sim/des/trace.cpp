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

}  // namespace

void write_chrome_trace(std::ostream& out, const Engine& engine, const Results& results, TraceOptions options) {
  const Topology& topo = engine.topology();
  const size_t n = engine.task_count();
  if (results.start_s.size() != n) throw SpecError("write_chrome_trace: the results are not from this engine's last run");
  const int nodes = topo.nodes();
  const int gpus = topo.total_gpus();
  const int unplaced_pid = nodes;  // delays without a resource
  const bool every_gpu = options.gpus.empty();
  std::vector<char> drawn_gpu(static_cast<size_t>(gpus), every_gpu), drawn_node(static_cast<size_t>(nodes), every_gpu);
  for (int g : options.gpus) {
    if (g < 0 || g >= gpus) throw SpecError("write_chrome_trace: GPU " + std::to_string(g) + " is not in the topology");
    drawn_gpu[static_cast<size_t>(g)] = 1;
    drawn_node[static_cast<size_t>(g / topo.gpus_per_node())] = 1;
  }
  const auto resource_drawn = [&](ResourceId r) {
    const ResourceInfo info = engine.resource(r);
    return info.gpu >= 0 ? drawn_gpu[static_cast<size_t>(info.gpu)] != 0 : drawn_node[static_cast<size_t>(info.node)] != 0;
  };

  // Resource-less tasks, in start order, get lanes; each (task, lane) becomes one event.
  std::vector<TaskId> order;
  for (TaskId t = 0; t < n; ++t)
    if (engine.task_resource(t) == kNone) order.push_back(t);
  std::stable_sort(order.begin(), order.end(),
                   [&](TaskId a, TaskId b) { return results.start_s[a] < results.start_s[b]; });
  Lanes lanes;
  std::vector<std::pair<TaskId, size_t>> lane_events;
  for (TaskId t : order) {
    const double a = results.start_s[t], b = results.end_s[t];
    std::vector<int> on = engine.task_gpus(t);
    if (!every_gpu) {
      const bool had_gpus = !on.empty();
      std::erase_if(on, [&](int g) { return !drawn_gpu[static_cast<size_t>(g)]; });
      if (had_gpus && on.empty()) continue;  // runs on none of the drawn GPUs
    }
    if (engine.task_kind(t) == TaskKind::Collective && !options.collectives_on_every_gpu && !on.empty()) on.resize(1);
    if (engine.task_kind(t) == TaskKind::Transfer && !on.empty()) on.resize(1);  // drawn at its source GPU
    if (!on.empty()) {
      for (int g : on)
        lane_events.emplace_back(t, lanes.place(static_cast<size_t>(g), g / topo.gpus_per_node(),
                                                "gpu" + std::to_string(g) + " comm", a, b));
    } else if (engine.task_kind(t) == TaskKind::Transfer) {
      // A transfer between non-GPU devices (host, NVMe): drawn on its source's node.
      const int node = engine.task_node(t);
      if (!drawn_node[static_cast<size_t>(node)]) continue;
      lane_events.emplace_back(t, lanes.place(static_cast<size_t>(gpus + 1 + node), node,
                                              "node" + std::to_string(node) + " transfers", a, b));
    } else if (every_gpu) {  // a delay of no GPU: drawn with every rank only
      lane_events.emplace_back(t, lanes.place(static_cast<size_t>(gpus), unplaced_pid, "delays", a, b));
    }
  }
  const size_t lane_tid0 = engine.resource_count() + 1;

  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  auto meta = [&](const char* what, int pid, size_t tid, const std::string& name) {
    sep();
    out << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid << ",\"args\":{\"name\":";
    put_string(out, name);
    out << "}}";
  };
  for (int k = 0; k < nodes; ++k)
    if (drawn_node[static_cast<size_t>(k)]) meta("process_name", k, 0, "node " + std::to_string(k));
  if (lanes.by_owner.size() > static_cast<size_t>(gpus) && !lanes.by_owner[gpus].empty())
    meta("process_name", unplaced_pid, 0, "unplaced");
  for (ResourceId r : engine.used_resources()) {
    if (!resource_drawn(r)) continue;
    const ResourceInfo info = engine.resource(r);
    meta("thread_name", info.node, r + 1, info.name);
  }
  for (size_t li = 0; li < lanes.lanes.size(); ++li)
    meta("thread_name", lanes.lanes[li].pid, lane_tid0 + li, lanes.lanes[li].name);

  auto event = [&](TaskId t, int pid, size_t tid) {
    sep();
    out << "{\"name\":";
    put_string(out, engine.task_name(t));
    out << ",\"cat\":";
    put_string(out, engine.category_name(engine.task_category(t)));
    out << ",\"ph\":\"X\",\"ts\":";
    put_number(out, results.start_s[t] * 1e6);
    out << ",\"dur\":";
    put_number(out, (results.end_s[t] - results.start_s[t]) * 1e6);
    out << ",\"pid\":" << pid << ",\"tid\":" << tid << ",\"args\":{\"task\":" << t << ",\"kind\":\""
        << to_string(engine.task_kind(t)) << "\"";
    if (engine.task_kind(t) != TaskKind::Compute && engine.task_kind(t) != TaskKind::Delay) {
      out << ",\"bytes\":";
      put_number(out, engine.task_bytes(t));
    }
    if (engine.task_kind(t) == TaskKind::Collective) {
      out << ",\"collective\":\"" << to_string(engine.collective_kind(t))
          << "\",\"group_size\":" << engine.group_gpus(engine.collective_group(t)).size();
    }
    out << ",\"ready_us\":";
    put_number(out, results.ready_s[t] * 1e6);
    out << "}}";
  };
  for (TaskId t = 0; t < n; ++t) {
    const ResourceId r = engine.task_resource(t);
    if (r != kNone && resource_drawn(r)) event(t, engine.resource(r).node, r + 1);
  }
  for (const auto& [t, li] : lane_events) event(t, lanes.lanes[li].pid, lane_tid0 + li);
  for (const CounterTrack& track : options.counters) {
    for (const auto& [time_s, value] : track.points) {
      sep();
      out << "{\"name\":";
      put_string(out, track.name);
      out << ",\"ph\":\"C\",\"ts\":";
      put_number(out, time_s * 1e6);
      out << ",\"pid\":" << track.pid << ",\"args\":{\"bytes\":";
      put_number(out, value);
      out << "}}";
    }
  }
  out << "\n]}\n";
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
