#pragma once
// The discrete-event engine: a DAG of tasks on the resources and links of a Topology.
//
// Build: create tasks (compute, copy, NVMe read/write, transfer, collective, delay), each with a
// Label (category + name), then dependencies with depends(after, before). Run: run() simulates
// and returns the Results; it may be called again (e.g. after set_link_bandwidth) and starts
// from scratch. Task ids are dense, 0.. in creation order, so a caller can keep side tables.
//
// Semantics:
// - A task is ready when all its dependencies have ended. A task on a serial resource (a GPU's
//   compute stream, its H2D or D2H copy engine, a node's NVMe read or write queue, or a stream
//   made with add_stream) waits until the resource is free; waiting tasks start in the order
//   they became ready, ties by task id. Tasks without a resource start when ready.
// - compute/delay take their duration. copy, NVMe and transfer tasks are one flow of their bytes
//   over the route; collectives are steps of flow bundles (collective.h). A flow shares every
//   link max-min fairly with the others (flow_network.h) and ends when its last byte has crossed
//   and its route's latency has passed (the link is free again once the last byte is sent).
// - Determinism: the same DAG gives bit-identical times; times depend only on the tasks that
//   interact with a task (through dependencies, resources or shared links), not on the ids or
//   the presence of unrelated ones.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/des/collective.h"
#include "sim/des/event_queue.h"
#include "sim/des/flow_network.h"
#include "sim/des/results.h"
#include "sim/des/topology.h"

namespace starfish::des {

enum class CopyDir : uint8_t { H2D, D2H };

struct Label {
  CategoryId category = 0;  // from Engine::category(); 0 is "other"
  std::string_view name;    // copied; free text for traces ("fwd s3 mb7 L12")
};

// Thrown by Engine::run when its cancel flag is raised (Ctrl-C, a GUI's Cancel).
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("simulation cancelled") {}
};

struct CollectiveOptions {
  CollectiveAlgo algo = CollectiveAlgo::Ring;
  bool merge_steps = true;     // false: one bundle per ring step (see collective.h)
  int pipeline_chunks = 0;     // broadcast/reduce; 0 = automatic
  ResourceId stream = kNone;   // optional serial resource (e.g. a communicator's stream)
};

class Engine {
 public:
  explicit Engine(const Topology& topo);  // the topology must outlive the engine
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Topology& topology() const { return topo_; }

  // Categories are interned names; the same name always gives the same id.
  CategoryId category(std::string_view name);
  const std::string& category_name(CategoryId c) const;
  size_t category_count() const { return categories_.size(); }

  // Groups of GPUs for collectives (global GPU indices, ring order). Interned: the same list
  // gives the same id, so the collective's routes are computed once per group.
  GroupId group(std::vector<int> gpus);
  std::span<const int> group_gpus(GroupId g) const;

  // Resources.
  ResourceId compute_stream(int gpu) const;
  ResourceId copy_engine(int gpu, CopyDir dir) const;
  ResourceId nvme_queue(int node, bool write) const;
  ResourceId add_stream(std::string name, int node, int gpu = -1);  // a serial resource of your own
  // Every GPU has its compute stream and copy engines and every node its NVMe queues (ids in
  // that order, then the streams), but only those a task uses are stored: the rest are numbers.
  size_t resource_count() const { return fixed_resources_ + streams_.size(); }
  ResourceInfo resource(ResourceId r) const;  // by value: names are made on demand
  // The resources some task uses, in order of first use.
  std::vector<ResourceId> used_resources() const;

  // Tasks. Each throws SpecError for input that cannot be simulated (a GPU or node that does not
  // exist, a negative or non-finite duration or size, a missing NVMe).
  TaskId compute(int gpu, double duration_s, Label label);
  TaskId copy(int gpu, CopyDir dir, double bytes, Label label);          // GPU <-> its host memory
  TaskId nvme_read(int node, double bytes, Label label);                 // NVMe -> host memory
  TaskId nvme_write(int node, double bytes, Label label);                // host memory -> NVMe
  TaskId transfer(DeviceId src, DeviceId dst, double bytes, Label label, ResourceId stream = kNone);
  TaskId collective(CollectiveKind kind, GroupId group, double bytes, Label label, CollectiveOptions options = {});
  TaskId delay(double duration_s, Label label, ResourceId stream = kNone);

  // `after` starts only once `before` has ended.
  void depends(TaskId after, TaskId before);
  void depends(TaskId after, std::span<const TaskId> before);

  // Changes a link's capacity for the next run (what-if); bandwidth_Bps > 0.
  void set_link_bandwidth(LinkId link, double bandwidth_Bps);
  double link_bandwidth(LinkId link) const;

  // Simulates. Throws SpecError naming the tasks of a dependency cycle, Cancelled when the
  // cancel flag is raised (polled every few thousand events: a large iteration stops within
  // milliseconds, not at its end).
  const Results& run();
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }
  const Results& results() const { return results_; }
  // Link classes of the last run: the links its flows crossed, interchangeable ones merged
  // (flow_network.h). A ring over 512 replicas' NICs is a handful, not thousands.
  size_t link_classes() const { return net_->link_class_count(); }

  // Task metadata (valid for any created task).
  size_t task_count() const { return tasks_.size(); }
  TaskKind task_kind(TaskId t) const { return tasks_.at(t).kind; }
  CategoryId task_category(TaskId t) const { return tasks_.at(t).category; }
  std::string_view task_name(TaskId t) const;
  ResourceId task_resource(TaskId t) const {
    const uint32_t slot = tasks_.at(t).resource;
    return slot == kNone ? kNone : resources_[slot].id;
  }
  double task_bytes(TaskId t) const;       // 0 for compute and delay
  double task_duration_s(TaskId t) const;  // the given duration for compute and delay, else 0
  // The GPUs a task occupies: its GPU, a transfer's GPU endpoints, a collective's group.
  std::vector<int> task_gpus(TaskId t) const;
  // The node a task belongs to: its resource's node, a transfer's source node, a collective's
  // first GPU's node; 0 for a delay without a stream.
  int task_node(TaskId t) const;
  // A copy's direction (throws for other tasks; with one copy engine both share a resource).
  CopyDir copy_direction(TaskId t) const;
  // A collective's kind and group (throws for other tasks).
  CollectiveKind collective_kind(TaskId t) const;
  GroupId collective_group(TaskId t) const;

 private:
  struct Task {
    double duration_s = 0;        // compute, delay
    double bytes = 0;             // copy, NVMe, transfer, collective
    double latency_s = 0;         // flows: the route's latency
    uint32_t resource = kNone;    // a slot of resources_ (the id is in it)
    uint32_t gpu = kNone;         // compute, copy
    uint32_t node = kNone;        // NVMe read/write
    DeviceId src = kNone, dst = kNone;  // copy, NVMe, transfer: the flow's ends
    uint32_t route = kNone;       // flows: the route's pattern in the flow network (kNone: no link)
    uint32_t collective = kNone;  // collectives: index into collectives_
    uint32_t name_begin = 0, name_len = 0;
    CategoryId category = 0;
    TaskKind kind = TaskKind::Compute;
    CopyDir dir = CopyDir::H2D;   // copy
  };
  struct Collective {
    GroupId group = 0;
    CollectiveKind kind = CollectiveKind::all_reduce;
    CollectiveOptions options;
    uint32_t schedule = 0;  // its resolved CollectiveSchedule
  };
  struct Resource {  // a resource some task uses; Task::resource indexes these
    Resource(ResourceId i, ResourceInfo in) : id(i), info(std::move(in)) {}
    ResourceId id;
    ResourceInfo info;
    // Run state.
    std::vector<TaskId> queue;  // waiting, in (ready time, id) order from `head`
    size_t head = 0;
    bool busy = false;
    bool dirty = false;
    double busy_s = 0;
  };
  struct CollectiveSchedule {  // a collective's resolved phases: flow patterns in the network
    uint32_t first_phase = 0, phases = 0;
  };
  struct SchedulePhase {
    PatternId pattern = 0;
    uint32_t steps = 0;
    double fraction = 0;
    double latency_s = 0;
  };

  TaskId add_task(Task t, Label label);
  // The one way a task is made: its kind, checked duration or bytes, and for flows the route.
  Task timed_task(TaskKind kind, double duration_s, Label label, ResourceId resource);
  Task flow_task(TaskKind kind, DeviceId src, DeviceId dst, double bytes, Label label, ResourceId resource);
  uint32_t resource_slot(ResourceId r);  // its run state, made on first use
  void check_task(TaskId t, const char* what) const;
  void check_bytes(double bytes, const char* what, Label label) const;
  std::string describe(TaskId t) const;  // "task 12 'fwd s0 mb3'"
  uint32_t route_pattern(DeviceId src, DeviceId dst, double& latency_s);
  uint32_t collective_schedule(const Collective& c, double bytes);
  const SchedulePhase& current_phase(const Task& k) const;
  template <class F>
  void for_each_gpu(TaskId t, F&& f) const;
  void build_successors();
  [[noreturn]] void throw_cycle() const;

  // Simulation.
  void make_ready(TaskId t);
  void start(TaskId t);
  void start_flow(TaskId owner, uint32_t pattern, double bytes, double latency_s);
  void start_collective_step(TaskId t);
  void on_delivered(TaskId t);
  void complete(TaskId t);
  void dispatch(ResourceId r);
  void collect_results();

  const Topology& topo_;
  std::vector<std::string> categories_;
  std::unordered_map<std::string, CategoryId> category_ids_;
  std::vector<int> group_gpus_;
  std::vector<uint32_t> group_begin_;  // group g: group_gpus_[group_begin_[g] .. group_begin_[g+1])
  std::unordered_map<std::string, GroupId> group_ids_;
  uint32_t per_gpu_resources_ = 3;       // compute, H2D, D2H (2 when one copy engine serves both)
  ResourceId fixed_resources_ = 0;       // GPU and NVMe resources; streams follow
  std::vector<ResourceInfo> streams_;
  std::vector<Resource> resources_;      // used ones (slots)
  std::unordered_map<ResourceId, uint32_t> slot_of_resource_;

  std::vector<Task> tasks_;
  std::string names_;
  std::vector<Collective> collectives_;
  std::vector<std::pair<TaskId, TaskId>> edges_;  // (before, after)
  std::unordered_map<LinkId, double> capacity_override_Bps_;  // set_link_bandwidth

  // Routes and collective schedules are resolved when a task is created, as patterns of the
  // network, and cached: a pair of devices or a (group, collective) is planned once.
  std::unique_ptr<FlowNetwork> net_;
  std::unordered_map<uint64_t, std::pair<uint32_t, double>> route_cache_;  // (src,dst) -> pattern, latency
  struct ScheduleKey {
    GroupId group;
    CollectiveKind kind;
    CollectiveAlgo algo;
    bool merge;
    int chunks;
    double bytes;  // only for automatic pipeline chunks, else 0
    bool operator==(const ScheduleKey&) const = default;
  };
  struct ScheduleKeyHash {
    size_t operator()(const ScheduleKey& k) const;
  };
  std::unordered_map<ScheduleKey, uint32_t, ScheduleKeyHash> schedule_cache_;
  std::vector<CollectiveSchedule> schedules_;
  std::vector<SchedulePhase> schedule_phases_;
  std::vector<LinkUse> scratch_uses_;
  std::vector<uint32_t> succ_begin_, succ_;
  std::vector<uint32_t> pending_;
  std::vector<uint32_t> coll_phase_, coll_step_;  // per collective: progress
  std::vector<uint8_t> done_;
  EventQueue events_;
  std::vector<ResourceId> dirty_resources_, dispatching_;
  double now_ = 0;
  uint64_t events_processed_ = 0;
  const std::atomic<bool>* cancel_ = nullptr;
  Results results_;
};

}  // namespace starfish::des
