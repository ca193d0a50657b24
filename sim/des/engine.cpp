#include "sim/des/engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/spec/error.h"
#include <unordered_map>

#include "sim/des/event_queue.h"
#include "sim/des/flow_network.h"

namespace starfish::des {

struct Engine::Impl {
  // The interface of engine.h (documented there), then the machinery.
  explicit Impl(const Topology& topo);

  const Topology& topology() const { return topo_; }

  CategoryId category(std::string_view name);
  const std::string& category_name(CategoryId c) const;
  size_t category_count() const { return categories_.size(); }

  GroupId group(std::vector<int> gpus);
  std::span<const int> group_gpus(GroupId g) const;

  ResourceId compute_stream(int gpu) const;
  ResourceId copy_engine(int gpu, CopyDir dir) const;
  ResourceId nvme_queue(int node, bool write) const;
  ResourceId add_stream(std::string name, int node, int gpu = -1);
  size_t resource_count() const { return fixed_resources_ + streams_.size(); }
  ResourceInfo resource(ResourceId r) const;
  std::vector<ResourceId> used_resources() const;

  TaskId compute(int gpu, double duration_s, Label label);
  TaskId copy(int gpu, CopyDir dir, double bytes, Label label);
  TaskId nvme_read(int node, double bytes, Label label);
  TaskId nvme_write(int node, double bytes, Label label);
  TaskId transfer(DeviceId src, DeviceId dst, double bytes, Label label, ResourceId stream = kNone);
  TaskId collective(CollectiveKind kind, GroupId group, double bytes, Label label, CollectiveOptions options = {});
  TaskId delay(double duration_s, Label label, ResourceId stream = kNone);

  void depends(TaskId after, TaskId before);
  void depends(TaskId after, std::span<const TaskId> before);

  void set_link_bandwidth(LinkId link, double bandwidth_Bps);
  double link_bandwidth(LinkId link) const;

  const Results& run();
  void set_cancel(const std::atomic<bool>* cancel) { cancel_ = cancel; }
  void set_progress(std::function<void(size_t, size_t)> progress) { progress_ = std::move(progress); }
  const Results& results() const { return results_; }
  size_t link_classes() const { return net_->link_class_count(); }

  size_t task_count() const { return tasks_.size(); }
  TaskKind task_kind(TaskId t) const { return tasks_.at(t).kind; }
  CategoryId task_category(TaskId t) const { return tasks_.at(t).category; }
  std::string_view task_name(TaskId t) const;
  ResourceId task_resource(TaskId t) const {
    const uint32_t slot = tasks_.at(t).resource;
    return slot == kNone ? kNone : resources_[slot].id;
  }
  double task_bytes(TaskId t) const;
  double task_duration_s(TaskId t) const;
  std::vector<int> task_gpus(TaskId t) const;
  int task_node(TaskId t) const;
  CopyDir copy_direction(TaskId t) const;
  CollectiveKind collective_kind(TaskId t) const;
  GroupId collective_group(TaskId t) const;

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
  void reset_run_state();
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
    int repeats;
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
  std::function<void(size_t, size_t)> progress_;
  size_t tasks_done_ = 0;
  Results results_;
};

const char* to_string(TaskKind k) {
  switch (k) {
    case TaskKind::Compute: return "compute";
    case TaskKind::Copy: return "copy";
    case TaskKind::NvmeRead: return "nvme-read";
    case TaskKind::NvmeWrite: return "nvme-write";
    case TaskKind::Transfer: return "transfer";
    case TaskKind::Collective: return "collective";
    case TaskKind::Delay: return "delay";
  }
  return "?";
}

const char* to_string(ResourceKind k) {
  switch (k) {
    case ResourceKind::ComputeStream: return "compute";
    case ResourceKind::CopyH2D: return "H2D";
    case ResourceKind::CopyD2H: return "D2H";
    case ResourceKind::NvmeRead: return "nvme read";
    case ResourceKind::NvmeWrite: return "nvme write";
    case ResourceKind::Stream: return "stream";
  }
  return "?";
}

namespace {

// Prefixes an error with the task being created: "compute 'fwd s0': GPU 9 does not exist ...".
[[noreturn]] void fail(const char* what, Label label, const std::string& message) {
  throw SpecError(std::string(what) + " '" + std::string(label.name) + "': " + message);
}

template <class F>
auto guarded(const char* what, Label label, F&& f) {
  try {
    return f();
  } catch (const SpecError& e) {
    fail(what, label, e.what());
  }
}

}  // namespace

Engine::Impl::Impl(const Topology& topo) : topo_(topo) {
  categories_.push_back("other");
  category_ids_.emplace("other", 0);
  per_gpu_resources_ = topo_.cluster().node.gpu.copy_engines >= 2 ? 3 : 2;
  fixed_resources_ = per_gpu_resources_ * static_cast<ResourceId>(topo_.total_gpus()) +
                     (topo_.has_nvme() ? 2 * static_cast<ResourceId>(topo_.nodes()) : 0);
  net_ = std::make_unique<FlowNetwork>(topo_.link_count(), topo_.links_per_node(),
                                       [this](LinkId l) { return link_bandwidth(l); });
  group_begin_.push_back(0);
}


CategoryId Engine::Impl::category(std::string_view name) {
  auto it = category_ids_.find(std::string(name));
  if (it != category_ids_.end()) return it->second;
  if (categories_.size() >= 0xffff) throw SpecError("too many task categories (65535)");
  const CategoryId id = static_cast<CategoryId>(categories_.size());
  categories_.emplace_back(name);
  category_ids_.emplace(std::string(name), id);
  return id;
}

const std::string& Engine::Impl::category_name(CategoryId c) const {
  if (c >= categories_.size()) throw SpecError("category " + std::to_string(c) + " does not exist");
  return categories_[c];
}

GroupId Engine::Impl::group(std::vector<int> gpus) {
  if (gpus.empty()) throw SpecError("a GPU group must have at least one GPU");
  std::string key(gpus.size() * sizeof(int), '\0');
  std::memcpy(key.data(), gpus.data(), key.size());
  if (auto it = group_ids_.find(key); it != group_ids_.end()) return it->second;
  std::vector<int> sorted = gpus;
  for (int g : gpus) topo_.gpu(g);  // throws for a GPU that does not exist
  std::sort(sorted.begin(), sorted.end());
  if (auto d = std::adjacent_find(sorted.begin(), sorted.end()); d != sorted.end())
    throw SpecError("GPU " + std::to_string(*d) + " appears twice in a GPU group");
  const GroupId id = static_cast<GroupId>(group_begin_.size() - 1);
  group_gpus_.insert(group_gpus_.end(), gpus.begin(), gpus.end());
  group_begin_.push_back(static_cast<uint32_t>(group_gpus_.size()));
  group_ids_.emplace(std::move(key), id);
  return id;
}

std::span<const int> Engine::Impl::group_gpus(GroupId g) const {
  if (g + 1 >= group_begin_.size()) throw SpecError("GPU group " + std::to_string(g) + " does not exist");
  return {group_gpus_.data() + group_begin_[g], group_begin_[g + 1] - group_begin_[g]};
}

ResourceId Engine::Impl::compute_stream(int gpu) const {
  topo_.gpu(gpu);
  return per_gpu_resources_ * static_cast<ResourceId>(gpu);
}

ResourceId Engine::Impl::copy_engine(int gpu, CopyDir dir) const {
  topo_.gpu(gpu);
  // With one copy engine, H2D and D2H are the same resource.
  const ResourceId first = per_gpu_resources_ * static_cast<ResourceId>(gpu) + 1;
  return dir == CopyDir::D2H && per_gpu_resources_ == 3 ? first + 1 : first;
}

ResourceId Engine::Impl::nvme_queue(int node, bool write) const {
  topo_.nvme(node);  // throws when the node or its NVMe does not exist
  return per_gpu_resources_ * static_cast<ResourceId>(topo_.total_gpus()) + 2 * static_cast<ResourceId>(node) + write;
}

ResourceId Engine::Impl::add_stream(std::string name, int node, int gpu) {
  if (node < 0 || node >= topo_.nodes())
    throw SpecError("stream '" + name + "': node " + std::to_string(node) + " does not exist (the cluster has " +
                    std::to_string(topo_.nodes()) + " nodes)");
  if (gpu != -1) {
    topo_.gpu(gpu);
    if (gpu / topo_.gpus_per_node() != node)
      throw SpecError("stream '" + name + "': GPU " + std::to_string(gpu) + " is not on node " + std::to_string(node));
  }
  streams_.push_back(ResourceInfo{ResourceKind::Stream, std::move(name), node, gpu});
  return fixed_resources_ + static_cast<ResourceId>(streams_.size() - 1);
}

ResourceInfo Engine::Impl::resource(ResourceId r) const {
  if (r >= resource_count())
    throw SpecError("resource " + std::to_string(r) + " does not exist (there are " +
                    std::to_string(resource_count()) + ")");
  if (r >= fixed_resources_) return streams_[r - fixed_resources_];
  const ResourceId gpu_resources = per_gpu_resources_ * static_cast<ResourceId>(topo_.total_gpus());
  if (r >= gpu_resources) {
    const int node = static_cast<int>((r - gpu_resources) / 2);
    const bool write = (r - gpu_resources) % 2 == 1;
    return ResourceInfo{write ? ResourceKind::NvmeWrite : ResourceKind::NvmeRead,
                        "node" + std::to_string(node) + (write ? " nvme write" : " nvme read"), node, -1};
  }
  const int gpu = static_cast<int>(r / per_gpu_resources_), node = gpu / topo_.gpus_per_node();
  const std::string p = "gpu" + std::to_string(gpu) + " ";
  switch (r % per_gpu_resources_) {
    case 0: return ResourceInfo{ResourceKind::ComputeStream, p + "compute", node, gpu};
    case 1: return per_gpu_resources_ == 3 ? ResourceInfo{ResourceKind::CopyH2D, p + "H2D", node, gpu}
                                           : ResourceInfo{ResourceKind::CopyH2D, p + "copy", node, gpu};
    default: return ResourceInfo{ResourceKind::CopyD2H, p + "D2H", node, gpu};
  }
}

std::vector<ResourceId> Engine::Impl::used_resources() const {
  std::vector<ResourceId> out;
  for (const Resource& r : resources_) out.push_back(r.id);
  return out;
}

uint32_t Engine::Impl::resource_slot(ResourceId r) {
  auto [it, added] = slot_of_resource_.try_emplace(r, static_cast<uint32_t>(resources_.size()));
  if (added) resources_.emplace_back(r, resource(r));
  return it->second;
}

TaskId Engine::Impl::add_task(Task t, Label label) {
  if (label.category >= categories_.size())
    fail(to_string(t.kind), label, "category " + std::to_string(label.category) + " does not exist");
  if (tasks_.size() >= kNone - 1) fail(to_string(t.kind), label, "too many tasks");
  t.category = label.category;
  if (t.resource != kNone) t.resource = resource_slot(t.resource);
  t.name_begin = static_cast<uint32_t>(names_.size());
  t.name_len = static_cast<uint32_t>(label.name.size());
  names_.append(label.name);
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

void Engine::Impl::check_bytes(double bytes, const char* what, Label label) const {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    fail(what, label, "bytes must be a finite number >= 0, got " + std::to_string(bytes));
}

uint32_t Engine::Impl::route_pattern(DeviceId src, DeviceId dst, double& latency_s) {
  const uint64_t key = (static_cast<uint64_t>(src) << 32) | dst;
  if (auto it = route_cache_.find(key); it != route_cache_.end()) {
    latency_s = it->second.second;
    return it->second.first;
  }
  const Route r = topo_.route(src, dst);
  scratch_uses_.clear();
  for (LinkId l : r.links) scratch_uses_.push_back(LinkUse{l, 1});
  const uint32_t p = r.links.empty() ? kNone : net_->add_pattern(scratch_uses_);
  route_cache_.emplace(key, std::make_pair(p, r.latency_s));
  latency_s = r.latency_s;
  return p;
}

Engine::Impl::Task Engine::Impl::timed_task(TaskKind kind, double duration_s, Label label, ResourceId resource) {
  if (!(duration_s >= 0) || !std::isfinite(duration_s))
    fail(to_string(kind), label, "duration must be a finite number >= 0 s, got " + std::to_string(duration_s));
  Task t;
  t.kind = kind;
  t.duration_s = duration_s;
  t.resource = resource;
  return t;
}

Engine::Impl::Task Engine::Impl::flow_task(TaskKind kind, DeviceId src, DeviceId dst, double bytes, Label label, ResourceId resource) {
  check_bytes(bytes, to_string(kind), label);
  Task t;
  t.kind = kind;
  t.bytes = bytes;
  t.resource = resource;
  t.src = src;
  t.dst = dst;
  t.route = guarded(to_string(kind), label, [&] { return route_pattern(src, dst, t.latency_s); });
  return t;
}

TaskId Engine::Impl::compute(int gpu, double duration_s, Label label) {
  guarded("compute", label, [&] { return topo_.gpu(gpu); });
  Task t = timed_task(TaskKind::Compute, duration_s, label, compute_stream(gpu));
  t.gpu = static_cast<uint32_t>(gpu);
  return add_task(t, label);
}

TaskId Engine::Impl::copy(int gpu, CopyDir dir, double bytes, Label label) {
  const DeviceId g = guarded("copy", label, [&] { return topo_.gpu(gpu); });
  const DeviceId h = topo_.host(gpu / topo_.gpus_per_node());
  Task t = dir == CopyDir::H2D ? flow_task(TaskKind::Copy, h, g, bytes, label, copy_engine(gpu, dir))
                               : flow_task(TaskKind::Copy, g, h, bytes, label, copy_engine(gpu, dir));
  t.gpu = static_cast<uint32_t>(gpu);
  t.dir = dir;
  return add_task(t, label);
}

CopyDir Engine::Impl::copy_direction(TaskId t) const {
  check_task(t, "copy_direction");
  if (tasks_[t].kind != TaskKind::Copy) throw SpecError(describe(t) + " is not a copy");
  return tasks_[t].dir;
}

TaskId Engine::Impl::nvme_read(int node, double bytes, Label label) {
  const DeviceId n = guarded("nvme-read", label, [&] { return topo_.nvme(node); });
  Task t = flow_task(TaskKind::NvmeRead, n, topo_.host(node), bytes, label, nvme_queue(node, false));
  t.node = static_cast<uint32_t>(node);
  return add_task(t, label);
}

TaskId Engine::Impl::nvme_write(int node, double bytes, Label label) {
  const DeviceId n = guarded("nvme-write", label, [&] { return topo_.nvme(node); });
  Task t = flow_task(TaskKind::NvmeWrite, topo_.host(node), n, bytes, label, nvme_queue(node, true));
  t.node = static_cast<uint32_t>(node);
  return add_task(t, label);
}

TaskId Engine::Impl::transfer(DeviceId src, DeviceId dst, double bytes, Label label, ResourceId stream) {
  check_bytes(bytes, "transfer", label);
  if (stream != kNone) guarded("transfer", label, [&] { return resource(stream).node; });
  return add_task(flow_task(TaskKind::Transfer, src, dst, bytes, label, stream), label);
}

size_t Engine::Impl::ScheduleKeyHash::operator()(const ScheduleKey& k) const {
  uint64_t h = k.group;
  h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(k.kind);
  h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(k.algo);
  h = h * 0x9e3779b97f4a7c15ULL + k.merge;
  h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(k.chunks);
  h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(k.repeats);
  h = h * 0x9e3779b97f4a7c15ULL + std::hash<double>{}(k.bytes);
  return static_cast<size_t>(h ^ (h >> 29));
}

uint32_t Engine::Impl::collective_schedule(const Collective& c, double bytes) {
  const bool auto_chunks = (c.kind == CollectiveKind::broadcast || c.kind == CollectiveKind::reduce) &&
                           c.options.pipeline_chunks <= 0;
  const ScheduleKey key{c.group,
                        c.kind,
                        c.options.algo,
                        c.options.merge_steps,
                        auto_chunks ? 0 : c.options.pipeline_chunks,
                        c.options.repeats,
                        auto_chunks ? bytes : 0.0};
  if (auto it = schedule_cache_.find(key); it != schedule_cache_.end()) return it->second;
  CollectivePlanRequest req;
  req.gpus = group_gpus(c.group);
  req.kind = c.kind;
  req.algo = c.options.algo;
  req.bytes = bytes;
  req.pipeline_chunks = c.options.pipeline_chunks;
  req.merge_steps = c.options.merge_steps;
  req.repeats = c.options.repeats;
  const std::vector<CollectivePhase> phases = plan_collective(topo_, req, [this](LinkId l) { return link_bandwidth(l); });
  CollectiveSchedule schedule;
  schedule.first_phase = static_cast<uint32_t>(schedule_phases_.size());
  for (const CollectivePhase& p : phases) {
    SchedulePhase q;
    q.pattern = p.nodes.empty() ? net_->add_pattern(p.links) : net_->add_stamped_pattern(p.links, p.nodes, p.shared_links);
    q.steps = p.steps;
    q.fraction = p.fraction;
    q.latency_s = p.latency_s;
    schedule_phases_.push_back(q);
  }
  schedule.phases = static_cast<uint32_t>(phases.size());
  schedules_.push_back(schedule);
  const uint32_t id = static_cast<uint32_t>(schedules_.size() - 1);
  schedule_cache_.emplace(key, id);
  return id;
}

const Engine::Impl::SchedulePhase& Engine::Impl::current_phase(const Task& k) const {
  const Collective& c = collectives_[k.collective];
  return schedule_phases_[schedules_[c.schedule].first_phase + coll_phase_[k.collective]];
}

TaskId Engine::Impl::collective(CollectiveKind kind, GroupId group, double bytes, Label label, CollectiveOptions options) {
  const char* what = to_string(kind);
  if (kind == CollectiveKind::send_recv)
    throw SpecError(std::string("collective '") + std::string(label.name) + "': send-recv is a point-to-point transfer (use transfer())");
  check_bytes(bytes, what, label);
  guarded(what, label, [&] { return group_gpus(group).size(); });
  if (options.stream != kNone) guarded(what, label, [&] { return resource(options.stream).node; });
  Collective c{group, kind, options};
  c.schedule = guarded(what, label, [&] { return collective_schedule(c, bytes); });
  Task t;
  t.kind = TaskKind::Collective;
  t.bytes = bytes;
  t.resource = options.stream;
  t.collective = static_cast<uint32_t>(collectives_.size());
  collectives_.push_back(c);
  return add_task(t, label);
}

TaskId Engine::Impl::delay(double duration_s, Label label, ResourceId stream) {
  Task t = timed_task(TaskKind::Delay, duration_s, label, stream);
  if (stream != kNone) guarded("delay", label, [&] { return resource(stream).node; });
  return add_task(t, label);
}

void Engine::Impl::check_task(TaskId t, const char* what) const {
  if (t >= tasks_.size())
    throw SpecError(std::string(what) + ": task " + std::to_string(t) + " does not exist (there are " +
                    std::to_string(tasks_.size()) + " tasks)");
}

void Engine::Impl::depends(TaskId after, TaskId before) {
  check_task(after, "depends");
  check_task(before, "depends");
  if (after == before) throw SpecError("depends: " + describe(after) + " cannot depend on itself");
  edges_.emplace_back(before, after);
}

void Engine::Impl::depends(TaskId after, std::span<const TaskId> before) {
  for (TaskId b : before) depends(after, b);
}

void Engine::Impl::set_link_bandwidth(LinkId link, double bandwidth_Bps) {
  topo_.link_kind(link);  // range check
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps))
    throw SpecError("set_link_bandwidth: " + topo_.link(link).name + ": bandwidth must be positive, got " +
                    std::to_string(bandwidth_Bps));
  capacity_override_Bps_[link] = bandwidth_Bps;
  net_->set_capacity_Bps(link, bandwidth_Bps);
}

double Engine::Impl::link_bandwidth(LinkId link) const {
  const double rated_Bps = topo_.link_bandwidth_Bps(link);  // range check
  if (capacity_override_Bps_.empty()) return rated_Bps;
  auto it = capacity_override_Bps_.find(link);
  return it == capacity_override_Bps_.end() ? rated_Bps : it->second;
}

std::string_view Engine::Impl::task_name(TaskId t) const {
  const Task& k = tasks_.at(t);
  return std::string_view(names_).substr(k.name_begin, k.name_len);
}

double Engine::Impl::task_bytes(TaskId t) const { return tasks_.at(t).bytes; }

double Engine::Impl::task_duration_s(TaskId t) const { return tasks_.at(t).duration_s; }

CollectiveKind Engine::Impl::collective_kind(TaskId t) const {
  const Task& k = tasks_.at(t);
  if (k.kind != TaskKind::Collective) throw SpecError(describe(t) + " is not a collective");
  return collectives_[k.collective].kind;
}

GroupId Engine::Impl::collective_group(TaskId t) const {
  const Task& k = tasks_.at(t);
  if (k.kind != TaskKind::Collective) throw SpecError(describe(t) + " is not a collective");
  return collectives_[k.collective].group;
}

template <class F>
void Engine::Impl::for_each_gpu(TaskId t, F&& f) const {
  const Task& k = tasks_[t];
  switch (k.kind) {
    case TaskKind::Compute:
    case TaskKind::Copy: f(static_cast<int>(k.gpu)); break;
    case TaskKind::Transfer: {
      const int s = topo_.gpu_index(k.src), d = topo_.gpu_index(k.dst);
      if (s >= 0) f(s);
      if (d >= 0 && d != s) f(d);
      break;
    }
    case TaskKind::Collective: {
      const GroupId grp = collectives_[k.collective].group;
      for (uint32_t i = group_begin_[grp]; i < group_begin_[grp + 1]; ++i) f(group_gpus_[i]);
      break;
    }
    case TaskKind::Delay:
      if (k.resource != kNone && resources_[k.resource].info.gpu >= 0) f(resources_[k.resource].info.gpu);
      break;
    case TaskKind::NvmeRead:
    case TaskKind::NvmeWrite: break;
  }
}

std::vector<int> Engine::Impl::task_gpus(TaskId t) const {
  check_task(t, "task_gpus");
  std::vector<int> out;
  for_each_gpu(t, [&](int g) { out.push_back(g); });
  return out;
}

int Engine::Impl::task_node(TaskId t) const {
  check_task(t, "task_node");
  const Task& k = tasks_[t];
  if (k.resource != kNone) return resources_[k.resource].info.node;
  if (k.kind == TaskKind::Transfer) return topo_.node_of(k.src);
  if (k.kind == TaskKind::Collective) return group_gpus(collectives_[k.collective].group)[0] / topo_.gpus_per_node();
  return 0;
}

std::string Engine::Impl::describe(TaskId t) const {
  return "task " + std::to_string(t) + " '" + std::string(task_name(t)) + "'";
}

void Engine::Impl::build_successors() {
  const size_t n = tasks_.size();
  succ_begin_.assign(n + 1, 0);
  pending_.assign(n, 0);
  for (const auto& [before, after] : edges_) {
    ++succ_begin_[before + 1];
    ++pending_[after];
  }
  for (size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
  succ_.resize(edges_.size());
  std::vector<uint32_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
  for (const auto& [before, after] : edges_) succ_[fill[before]++] = after;
}

void Engine::Impl::throw_cycle() const {
  // Every unfinished task waits on an unfinished predecessor: walk predecessors until one repeats.
  std::vector<std::vector<TaskId>> preds(tasks_.size());
  for (const auto& [before, after] : edges_)
    if (!done_[before] && !done_[after]) preds[after].push_back(before);
  TaskId start = 0;
  while (done_[start]) ++start;
  std::vector<int64_t> seen_at(tasks_.size(), -1);
  std::vector<TaskId> walk;
  TaskId t = start;
  while (seen_at[t] < 0) {
    seen_at[t] = static_cast<int64_t>(walk.size());
    walk.push_back(t);
    t = *std::min_element(preds[t].begin(), preds[t].end());
  }
  // walk[seen_at[t]..] is the cycle in predecessor order; print it in execution order.
  std::vector<TaskId> cycle(walk.begin() + seen_at[t], walk.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // from its lowest id
  std::string msg = "dependency cycle: ";
  for (TaskId c : cycle) msg += describe(c) + " -> ";
  msg += describe(cycle.front());
  throw SpecError(msg);
}

// Every task pending again, every resource idle, the clock at 0: a run starts from the built DAG.
void Engine::Impl::reset_run_state() {
  const size_t n = tasks_.size();
  done_.assign(n, 0);
  coll_phase_.assign(collectives_.size(), 0);
  coll_step_.assign(collectives_.size(), 0);
  for (Resource& r : resources_) {
    r.queue.clear();
    r.head = 0;
    r.busy = false;
    r.dirty = false;
    r.busy_s = 0;
  }
  net_->reset();
  events_.clear();
  dirty_resources_.clear();
  now_ = 0;
  events_processed_ = 0;
  tasks_done_ = 0;
  results_ = Results{};
  results_.ready_s.assign(n, 0);
  results_.start_s.assign(n, 0);
  results_.end_s.assign(n, 0);
}

const Results& Engine::Impl::run() {
  const size_t n = tasks_.size();
  build_successors();
  reset_run_state();
  for (TaskId t = 0; t < n; ++t)
    if (pending_[t] == 0) make_ready(t);

  constexpr uint64_t kCancelPoll = 4096;  // iterations of the loop between looks at the flag
  uint64_t steps = 0;
  const bool polled = cancel_ || progress_;
  for (;;) {
    if (polled && ++steps % kCancelPoll == 0) {
      if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
      if (progress_) progress_(tasks_done_, n);
    }
    if (!events_.empty() && events_.top().time_s() <= now_) {
      const Event e = events_.pop();
      switch (e.kind()) {
        case EventKind::TaskEnd:
          ++events_processed_;
          complete(e.target);
          break;
        case EventKind::FlowTxEnd: {
          if (net_->version(e.target) != e.version) break;  // rescheduled since
          ++events_processed_;
          const TaskId t = net_->owner(e.target);
          net_->finish(e.target, now_);
          const Task& k = tasks_[t];
          const double latency_s = k.kind == TaskKind::Collective ? current_phase(k).latency_s : k.latency_s;
          if (latency_s > 0) events_.push(now_ + latency_s, EventKind::Delivered, t);
          else on_delivered(t);
          break;
        }
        case EventKind::Delivered:
          ++events_processed_;
          on_delivered(e.target);
          break;
      }
      continue;
    }
    if (!dirty_resources_.empty()) {
      // All events of this instant are in: now the waiting tasks can be ordered and started.
      dispatching_.swap(dirty_resources_);
      for (ResourceId r : dispatching_) dispatch(r);
      dispatching_.clear();
      continue;
    }
    if (net_->dirty()) {
      for (const FlowNetwork::Change& c : net_->recompute(now_))
        events_.push(c.end_s, EventKind::FlowTxEnd, c.flow, c.version);
      continue;
    }
    if (events_.empty()) break;
    now_ = events_.top().time_s();
  }

  for (TaskId t = 0; t < n; ++t)
    if (!done_[t]) throw_cycle();
  collect_results();
  return results_;
}

void Engine::Impl::make_ready(TaskId t) {
  results_.ready_s[t] = now_;
  const ResourceId rid = tasks_[t].resource;
  if (rid == kNone) {
    start(t);
    return;
  }
  Resource& r = resources_[rid];
  // Ready times never decrease, so the queue stays in (ready, id) order by inserting from the
  // back past the tasks that became ready at this same instant with a larger id.
  r.queue.push_back(t);
  for (size_t i = r.queue.size() - 1; i > r.head; --i) {
    const TaskId prev = r.queue[i - 1];
    if (results_.ready_s[prev] != now_ || prev < t) break;
    std::swap(r.queue[i - 1], r.queue[i]);
  }
  if (!r.busy && !r.dirty) {
    r.dirty = true;
    dirty_resources_.push_back(rid);
  }
}

void Engine::Impl::dispatch(ResourceId rid) {
  Resource& r = resources_[rid];
  r.dirty = false;
  if (r.busy || r.head >= r.queue.size()) return;
  const TaskId t = r.queue[r.head++];
  if (r.head == r.queue.size()) {
    r.queue.clear();
    r.head = 0;
  } else if (r.head >= 1024 && 2 * r.head >= r.queue.size()) {
    r.queue.erase(r.queue.begin(), r.queue.begin() + static_cast<std::ptrdiff_t>(r.head));
    r.head = 0;
  }
  r.busy = true;
  start(t);
}

void Engine::Impl::start(TaskId t) {
  results_.start_s[t] = now_;
  const Task& k = tasks_[t];
  switch (k.kind) {
    case TaskKind::Compute:
    case TaskKind::Delay: events_.push(now_ + k.duration_s, EventKind::TaskEnd, t); break;
    case TaskKind::Copy:
    case TaskKind::NvmeRead:
    case TaskKind::NvmeWrite:
    case TaskKind::Transfer: start_flow(t, k.route, k.bytes, k.latency_s); break;
    case TaskKind::Collective:
      coll_phase_[k.collective] = 0;
      coll_step_[k.collective] = 0;
      if (schedules_[collectives_[k.collective].schedule].phases == 0) events_.push(now_, EventKind::TaskEnd, t);  // a group of one
      else start_collective_step(t);
      break;
  }
}

void Engine::Impl::start_flow(TaskId owner, uint32_t pattern, double bytes, double latency_s) {
  if (pattern == kNone || bytes == 0) {  // nothing crosses a link: only the latency remains
    events_.push(now_ + latency_s, EventKind::Delivered, owner);
    return;
  }
  net_->start(pattern, bytes, owner, now_);
  ++results_.flows;
}

void Engine::Impl::start_collective_step(TaskId t) {
  const Task& k = tasks_[t];
  const SchedulePhase& p = current_phase(k);
  start_flow(t, p.pattern, k.bytes * p.fraction, p.latency_s);
}

void Engine::Impl::on_delivered(TaskId t) {
  const Task& k = tasks_[t];
  if (k.kind != TaskKind::Collective) {
    complete(t);
    return;
  }
  const uint32_t c = k.collective;
  if (++coll_step_[c] == current_phase(k).steps) {
    coll_step_[c] = 0;
    if (++coll_phase_[c] == schedules_[collectives_[c].schedule].phases) {
      complete(t);
      return;
    }
  }
  start_collective_step(t);
}

void Engine::Impl::complete(TaskId t) {
  results_.end_s[t] = now_;
  done_[t] = 1;
  ++tasks_done_;
  const ResourceId rid = tasks_[t].resource;
  if (rid != kNone) {
    Resource& r = resources_[rid];
    r.busy = false;
    r.busy_s += now_ - results_.start_s[t];
    if (r.head < r.queue.size() && !r.dirty) {
      r.dirty = true;
      dirty_resources_.push_back(rid);
    }
  }
  for (uint32_t i = succ_begin_[t]; i < succ_begin_[t + 1]; ++i)
    if (--pending_[succ_[i]] == 0) make_ready(succ_[i]);
}

void Engine::Impl::collect_results() {
  Results& r = results_;
  const size_t n = tasks_.size();
  r.events = events_processed_;
  r.rate_updates = net_->recomputed_flows();
  r.makespan_s = 0;
  for (TaskId t = 0; t < n; ++t) r.makespan_s = std::max(r.makespan_s, r.end_s[t]);
  r.category.resize(n);
  for (TaskId t = 0; t < n; ++t) r.category[t] = tasks_[t].category;
  r.resource_busy_s.assign(resource_count(), 0.0);
  for (const Resource& res : resources_) r.resource_busy_s[res.id] = res.busy_s;
  r.link_bytes.assign(topo_.link_count(), 0.0);
  r.link_busy_s.assign(topo_.link_count(), 0.0);
  r.used_links.clear();
  net_->for_each_used_link([&](LinkId l, double bytes, double busy_s) {
    r.used_links.push_back(l);
    r.link_bytes[l] = bytes;
    r.link_busy_s[l] = busy_s;
  });
  const int gpus = topo_.total_gpus();
  r.category_count = categories_.size();
  r.gpu_category_s.assign(static_cast<size_t>(gpus) * r.category_count, 0.0);
  r.gpu_task_begin.assign(static_cast<size_t>(gpus) + 1, 0);
  for (TaskId t = 0; t < n; ++t) for_each_gpu(t, [&](int g) { ++r.gpu_task_begin[g + 1]; });
  for (int g = 0; g < gpus; ++g) r.gpu_task_begin[g + 1] += r.gpu_task_begin[g];
  r.gpu_tasks.resize(r.gpu_task_begin[gpus]);
  for (TaskId t = 0; t < n; ++t) {  // summed in id order
    const double d = r.end_s[t] - r.start_s[t];
    for_each_gpu(t, [&](int g) { r.gpu_category_s[static_cast<size_t>(g) * r.category_count + tasks_[t].category] += d; });
  }
  // Each GPU's tasks by start time, ties by id: one sort of all tasks, then dealt out to their
  // GPUs in that order (sorting each GPU's list on its own cost a TP group's GPUs n log n each).
  std::vector<std::pair<double, TaskId>> order(n);
  for (TaskId t = 0; t < n; ++t) order[t] = {r.start_s[t], t};
  std::sort(order.begin(), order.end());
  std::vector<uint32_t> fill(r.gpu_task_begin.begin(), r.gpu_task_begin.end() - 1);
  for (const auto& entry : order) {
    const TaskId t = entry.second;  // a named copy: clang 14 cannot capture a structured binding
    for_each_gpu(t, [&](int g) { r.gpu_tasks[fill[g]++] = t; });
  }
}

// ---------------------------------------------------------------- Engine: the interface

Engine::Engine(const Topology& topo) : impl_(std::make_unique<Impl>(topo)) {}
Engine::~Engine() = default;

const Topology& Engine::topology() const { return impl_->topology(); }
CategoryId Engine::category(std::string_view name) { return impl_->category(name); }
const std::string& Engine::category_name(CategoryId c) const { return impl_->category_name(c); }
size_t Engine::category_count() const { return impl_->category_count(); }
GroupId Engine::group(std::vector<int> gpus) { return impl_->group(std::move(gpus)); }
std::span<const int> Engine::group_gpus(GroupId g) const { return impl_->group_gpus(g); }
ResourceId Engine::compute_stream(int gpu) const { return impl_->compute_stream(gpu); }
ResourceId Engine::copy_engine(int gpu, CopyDir dir) const { return impl_->copy_engine(gpu, dir); }
ResourceId Engine::nvme_queue(int node, bool write) const { return impl_->nvme_queue(node, write); }
ResourceId Engine::add_stream(std::string name, int node, int gpu) { return impl_->add_stream(std::move(name), node, gpu); }
size_t Engine::resource_count() const { return impl_->resource_count(); }
ResourceInfo Engine::resource(ResourceId r) const { return impl_->resource(r); }
std::vector<ResourceId> Engine::used_resources() const { return impl_->used_resources(); }
TaskId Engine::compute(int gpu, double duration_s, Label label) { return impl_->compute(gpu, duration_s, label); }
TaskId Engine::copy(int gpu, CopyDir dir, double bytes, Label label) { return impl_->copy(gpu, dir, bytes, label); }
TaskId Engine::nvme_read(int node, double bytes, Label label) { return impl_->nvme_read(node, bytes, label); }
TaskId Engine::nvme_write(int node, double bytes, Label label) { return impl_->nvme_write(node, bytes, label); }
TaskId Engine::transfer(DeviceId src, DeviceId dst, double bytes, Label label, ResourceId stream) {
  return impl_->transfer(src, dst, bytes, label, stream);
}
TaskId Engine::collective(CollectiveKind kind, GroupId group, double bytes, Label label, CollectiveOptions options) {
  return impl_->collective(kind, group, bytes, label, options);
}
TaskId Engine::delay(double duration_s, Label label, ResourceId stream) { return impl_->delay(duration_s, label, stream); }
void Engine::depends(TaskId after, TaskId before) { impl_->depends(after, before); }
void Engine::depends(TaskId after, std::span<const TaskId> before) { impl_->depends(after, before); }
void Engine::set_link_bandwidth(LinkId link, double bandwidth_Bps) { impl_->set_link_bandwidth(link, bandwidth_Bps); }
double Engine::link_bandwidth(LinkId link) const { return impl_->link_bandwidth(link); }
const Results& Engine::run() { return impl_->run(); }
void Engine::set_cancel(const std::atomic<bool>* cancel) { impl_->set_cancel(cancel); }
void Engine::set_progress(std::function<void(size_t, size_t)> progress) { impl_->set_progress(std::move(progress)); }
const Results& Engine::results() const { return impl_->results(); }
size_t Engine::link_classes() const { return impl_->link_classes(); }
size_t Engine::task_count() const { return impl_->task_count(); }
TaskKind Engine::task_kind(TaskId t) const { return impl_->task_kind(t); }
CategoryId Engine::task_category(TaskId t) const { return impl_->task_category(t); }
std::string_view Engine::task_name(TaskId t) const { return impl_->task_name(t); }
ResourceId Engine::task_resource(TaskId t) const { return impl_->task_resource(t); }
double Engine::task_bytes(TaskId t) const { return impl_->task_bytes(t); }
double Engine::task_duration_s(TaskId t) const { return impl_->task_duration_s(t); }
std::vector<int> Engine::task_gpus(TaskId t) const { return impl_->task_gpus(t); }
int Engine::task_node(TaskId t) const { return impl_->task_node(t); }
CopyDir Engine::copy_direction(TaskId t) const { return impl_->copy_direction(t); }
CollectiveKind Engine::collective_kind(TaskId t) const { return impl_->collective_kind(t); }
GroupId Engine::collective_group(TaskId t) const { return impl_->collective_group(t); }

}  // namespace starfish::des
