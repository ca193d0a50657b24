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
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/des/collective.h"
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
  int repeats = 1;             // run back to back this many times, bytes split evenly (collective.h)
  ResourceId stream = kNone;   // optional serial resource (e.g. a communicator's stream)
};

class Engine {
 public:
  explicit Engine(const Topology& topo);  // the topology must outlive the engine
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Topology& topology() const;

  // Categories are interned names; the same name always gives the same id.
  CategoryId category(std::string_view name);
  const std::string& category_name(CategoryId c) const;
  size_t category_count() const;

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
  size_t resource_count() const;
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
  void set_cancel(const std::atomic<bool>* cancel);
  // Called by run() on its thread every few thousand events with the tasks ended so far and the
  // total (a progress display; empty: none).
  void set_progress(std::function<void(size_t tasks_done, size_t tasks_total)> progress);
  const Results& results() const;
  // Link classes of the last run: the links its flows crossed, interchangeable ones merged
  // (flow_network.h). A ring over 512 replicas' NICs is a handful, not thousands.
  size_t link_classes() const;

  // Task metadata (valid for any created task).
  size_t task_count() const;
  TaskKind task_kind(TaskId t) const;
  CategoryId task_category(TaskId t) const;
  std::string_view task_name(TaskId t) const;
  ResourceId task_resource(TaskId t) const;
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
  // The engine's state and machinery (engine.cpp): includers see only this interface.
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace starfish::des
