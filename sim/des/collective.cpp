#include "sim/des/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

#include "sim/spec/error.h"

namespace starfish::des {


const char* to_string(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::Ring: return "ring";
    case CollectiveAlgo::Hierarchical: return "hierarchical";
  }
  return "?";
}

int best_pipeline_chunks(int n, double bytes, double bottleneck_Bps, double latency_s) {
  auto time = [&](int k) { return (k + n - 2) * (bytes / (k * bottleneck_Bps) + latency_s); };
  int best = 1;
  for (int k = 2; k <= 64; ++k)
    if (time(k) < time(best)) best = k;
  return best;
}

namespace {

// Accumulates the member routes of one step into (link, weight) pairs.
class StepBuilder {
 public:
  explicit StepBuilder(const Topology& topo) : topo_(topo) {}
  void member(int src_gpu, int dst_gpu) {
    const double lat = topo_.append_route(topo_.gpu(src_gpu), topo_.gpu(dst_gpu), links_);
    latency_s_ = std::max(latency_s_, lat);
    ++members_;
  }
  // The members' links, each once with the number of members crossing it, in order of first
  // crossing. An open-addressing table finds repeats: a 512-member ring crosses thousands of
  // links, almost all once, and sorting them was the planner's largest cost.
  CollectivePhase phase(uint32_t steps, double fraction) {
    CollectivePhase p;
    int bits = 4;
    while ((size_t{1} << bits) < 2 * links_.size()) ++bits;
    const size_t mask = (size_t{1} << bits) - 1;
    table_.assign(mask + 1, kNone);
    for (LinkId l : links_) {
      size_t i = (static_cast<uint32_t>(l * 2654435761u) >> (32 - bits)) & mask;
      while (table_[i] != kNone && p.links[table_[i]].link != l) i = (i + 1) & mask;
      if (table_[i] == kNone) {
        table_[i] = static_cast<uint32_t>(p.links.size());
        p.links.push_back(LinkUse{l, 1});
      } else {
        ++p.links[table_[i]].weight;
      }
    }
    p.latency_s = latency_s_;
    p.steps = steps;
    p.fraction = fraction;
    p.members = members_;
    links_.clear();
    latency_s_ = 0;
    members_ = 0;
    return p;
  }

 private:
  const Topology& topo_;
  std::vector<LinkId> links_;
  std::vector<uint32_t> table_;  // phase(): slots of p.links by link hash
  double latency_s_ = 0;
  uint32_t members_ = 0;
};

// Planning by shape. When every node of a group holds the same local GPUs (in the same ring
// order), every node's share of a phase is the first node's links shifted: the member routes of
// one node are walked once (its footprint: local link ids, weights) and the phase says which
// nodes carry it (CollectivePhase::nodes; the flow network stamps it, flow_network.h). Listing
// every member's links would give the same links and weights: each node's links are crossed
// only by that node's members (routes leave a node only through its own NIC uplink and arrive
// through the receiver's downlink). A ring over 512 replicas costs one node's routes.
class NodeFootprint {
 public:
  explicit NodeFootprint(const Topology& topo) : topo_(topo), per_node_(topo.links_per_node()) {}
  // A member route between two GPUs; a route between two nodes folds both ends' links onto the
  // one footprint (the receiving end is the next node's share, identical to this one's).
  void member(int src_gpu, int dst_gpu) {
    route_.clear();
    const double lat = topo_.append_route(topo_.gpu(src_gpu), topo_.gpu(dst_gpu), route_);
    latency_s_ = std::max(latency_s_, lat);
    ++members_per_node_;
    for (LinkId l : route_) {
      if (!topo_.is_node_link(l)) {  // a fat tree's switch: the pair's own climb (shared_member)
        shared_.push_back(l);
        continue;
      }
      const LinkId local = l % per_node_;
      auto it = std::find_if(uses_.begin(), uses_.end(), [&](const LinkUse& u) { return u.link == local; });
      if (it == uses_.end()) uses_.push_back(LinkUse{local, 1});
      else ++it->weight;
    }
  }
  // Another node's member between nodes (the sample node's went through member()): under a
  // fat tree its switch hops and latency depend on the pair, so they are walked for every pair.
  void shared_member(int src_gpu, int dst_gpu) {
    if (!topo_.has_fabric_tiers()) return;
    route_.clear();
    latency_s_ = std::max(latency_s_, topo_.append_route(topo_.gpu(src_gpu), topo_.gpu(dst_gpu), route_));
    for (LinkId l : route_)
      if (!topo_.is_node_link(l)) shared_.push_back(l);
  }
  // The phase over `nodes` (distinct), each carrying this footprint; then starts a new one.
  CollectivePhase phase(std::span<const int> nodes, uint32_t steps, double fraction) {
    CollectivePhase p;
    p.links = std::move(uses_);
    p.nodes.assign(nodes.begin(), nodes.end());
    std::sort(shared_.begin(), shared_.end());
    for (LinkId l : shared_) {
      if (!p.shared_links.empty() && p.shared_links.back().link == l) ++p.shared_links.back().weight;
      else p.shared_links.push_back(LinkUse{l, 1});
    }
    shared_.clear();
    p.latency_s = latency_s_;
    p.steps = steps;
    p.fraction = fraction;
    p.members = members_per_node_ * static_cast<uint32_t>(nodes.size());
    uses_.clear();
    latency_s_ = 0;
    members_per_node_ = 0;
    return p;
  }

 private:
  const Topology& topo_;
  const uint32_t per_node_;
  std::vector<LinkId> route_;
  std::vector<LinkUse> uses_;  // local link ids
  std::vector<LinkId> shared_;  // switch links, once per crossing
  double latency_s_ = 0;
  uint32_t members_per_node_ = 0;
};

// A group's nodes in ring order and the local GPUs each holds, when every node holds one
// contiguous run of the same local GPUs (DP rings over replicas, the rails of a hierarchical
// collective); nullopt otherwise (then the members are walked one by one).
struct NodeRuns {
  std::vector<int> nodes;
  std::vector<int> local;  // local GPU indices of every node's run, in ring order
};
std::optional<NodeRuns> node_runs(const Topology& topo, std::span<const int> ring) {
  const int per_node = topo.gpus_per_node();
  size_t L = 0;
  while (L < ring.size() && ring[L] / per_node == ring[0] / per_node) ++L;
  if (L == 0 || ring.size() % L != 0 || ring.size() / L < 2) return std::nullopt;
  NodeRuns r;
  for (size_t j = 0; j < L; ++j) r.local.push_back(ring[j] % per_node);
  for (size_t k = 0; k < ring.size() / L; ++k) {
    const int node = ring[k * L] / per_node;
    for (size_t j = 0; j < L; ++j)
      if (ring[k * L + j] / per_node != node || ring[k * L + j] % per_node != r.local[j]) return std::nullopt;
    r.nodes.push_back(node);
  }
  // A node must not come back later in the ring (replicas' rings ascend: checked without a sort).
  if (std::is_sorted(r.nodes.begin(), r.nodes.end())) return r;
  std::vector<int> sorted = r.nodes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return std::nullopt;
  return r;
}

// Whether every hop between consecutive nodes of the runs takes the same kind of route as the
// first: not where the ring crosses from one NVLink domain to another (NVLink within, the NICs
// between), whose hops the first node's footprint cannot stand for.
bool one_route_between_nodes(const Topology& topo, const NodeRuns& r) {
  const int per_domain_nodes = std::max(1, topo.cluster().local_gpus() / topo.gpus_per_node());
  if (per_domain_nodes == 1) return true;
  for (int node : r.nodes)
    if (node / per_domain_nodes != r.nodes[0] / per_domain_nodes) return false;
  return true;
}

// One ring step over node runs: each node's run in order, then its last GPU to the next node's
// first (folded: the arrival on the next node is that node's share of the previous one's send).
CollectivePhase ring_phase_by_node(const Topology& topo, const NodeRuns& r, uint32_t steps, double fraction) {
  NodeFootprint f(topo);
  const int base0 = r.nodes[0] * topo.gpus_per_node(), base1 = r.nodes[1] * topo.gpus_per_node();
  for (size_t i = 0; i + 1 < r.local.size(); ++i) f.member(base0 + r.local[i], base0 + r.local[i + 1]);
  f.member(base0 + r.local.back(), base1 + r.local.front());
  const size_t N = r.nodes.size();
  for (size_t k = 1; k < N; ++k)
    f.shared_member(r.nodes[k] * topo.gpus_per_node() + r.local.back(), r.nodes[(k + 1) % N] * topo.gpus_per_node() + r.local.front());
  return f.phase(r.nodes, steps, fraction);
}

void ring_members(StepBuilder& b, std::span<const int> ring, std::span<const int> shifts) {
  const size_t n = ring.size();
  if (n < 2) return;
  for (int s : shifts)
    for (size_t i = 0; i < n; ++i) b.member(ring[i], ring[(i + static_cast<size_t>(s)) % n]);
}

// The rings a group on one node without an NVSwitch runs at once, as shifts: in ring s member i
// sends to member i + s, and each ring carries an equal share of every step. NCCL and RCCL
// spread a collective over channels whose rings take different links; modelled here: on a mesh,
// every shift 1 .. n-1, so each member drives its n-1 links to the others (RCCL's all-reduce on
// 8 MI300X uses all 7 xGMI links; the same load as any set of equally weighted Hamiltonian
// cycles of the members: one step's bytes spread evenly over every directed link); on a ring of
// direct links holding the whole node in ring order, the ring both ways round (shifts 1 and
// n-1), each direction of every link busy. Otherwise the one ring in group order: a group
// across nodes, a switch, PCIe, or part of a ring (rings the other way would share its links).
// Cluster::intra_node_group_bandwidth_Bps gives the analytic tier the same rates.
std::vector<int> ring_shifts(const Topology& topo, std::span<const int> ring) {
  const int n = static_cast<int>(ring.size()), per_node = topo.gpus_per_node();
  const std::optional<NvlinkSpec>& link = topo.cluster().node.nvlink;
  const bool one_node = std::all_of(ring.begin(), ring.end(), [&](int g) { return g / per_node == ring[0] / per_node; });
  if (n < 3 || !link || link->switched() || !one_node) return {1};
  std::vector<int> shifts;
  if (link->topology == NvlinkTopology::mesh) {
    for (int s = 1; s < n; ++s) shifts.push_back(s);
    return shifts;
  }
  for (int i = 0; i < n; ++i)
    if (n != per_node || ring[(i + 1) % n] % per_node != (ring[i] + 1) % per_node) return {1};
  return {1, n - 1};
}

std::vector<CollectivePhase> ring_plan(const Topology& topo, const CollectivePlanRequest& req,
                                       const LinkCapacity& capacity_Bps) {
  const std::span<const int> g = req.gpus;
  const int n = static_cast<int>(g.size());
  std::vector<CollectivePhase> out;
  if (n < 2) return out;
  StepBuilder b(topo);
  switch (req.kind) {
    case CollectiveKind::send_recv:
      throw SpecError("send-recv is a point-to-point transfer (Engine::transfer), not a collective");
    case CollectiveKind::all_reduce:
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter: {
      const uint32_t steps = req.kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
      if (const std::optional<NodeRuns> runs = node_runs(topo, g); runs && one_route_between_nodes(topo, *runs)) {
        out.push_back(ring_phase_by_node(topo, *runs, steps, 1.0 / n));
        break;
      }
      const std::vector<int> shifts = ring_shifts(topo, g);
      ring_members(b, g, shifts);
      out.push_back(b.phase(steps, 1.0 / (static_cast<double>(n) * static_cast<double>(shifts.size()))));
      break;
    }
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: {
      for (int i = 0; i + 1 < n; ++i) {
        if (req.kind == CollectiveKind::broadcast) b.member(g[i], g[i + 1]);
        else b.member(g[i + 1], g[i]);
      }
      CollectivePhase p = b.phase(1, 1.0);
      int k = req.pipeline_chunks;
      if (k <= 0) {
        double bottleneck_Bps = std::numeric_limits<double>::infinity();
        for (const LinkUse& u : p.links) bottleneck_Bps = std::min(bottleneck_Bps, capacity_Bps(u.link) / u.weight);
        k = best_pipeline_chunks(n, req.bytes / req.repeats, bottleneck_Bps, p.latency_s);  // one repeat's
      }
      p.steps = static_cast<uint32_t>(k + n - 2);
      p.fraction = 1.0 / k;
      out.push_back(std::move(p));
      break;
    }
    case CollectiveKind::all_to_all:
      for (int s = 1; s < n; ++s) {
        for (int i = 0; i < n; ++i) b.member(g[i], g[(i + s) % n]);
        out.push_back(b.phase(1, 1.0 / n));
      }
      break;
  }
  return out;
}

// Whether every node of a hierarchical group holds the same local GPUs in the same order.
bool node_uniform(const Topology& topo, const std::vector<std::vector<int>>& per_node) {
  // A node's footprint stands for the others only when a node is the unit its runs are (not the
  // trays of an NVLink domain, whose runs span several trays' links).
  if (topo.cluster().local_gpus() != topo.gpus_per_node()) return false;
  const int pn = topo.gpus_per_node();
  for (const auto& gpus : per_node)
    for (size_t j = 0; j < gpus.size(); ++j)
      if (gpus[j] % pn != per_node[0][j] % pn) return false;
  return true;
}

// NCCL runs these as one ring over all N x L ranks in L channels spread over the rails: in each
// channel a node's GPUs pass the chunk on over NVLink and one of them sends it to the next node
// over its own NIC, each GPU the node's exit in one channel. So at every step of the ring each GPU
// sends a chunk over NVLink in L - 1 channels and one to the next node's GPU of its rail, all at
// once: per GPU (L - 1) / L of the ring's bytes cross NVLink and 1 / L its NIC, concurrently
// (the analytic tier's link_for_group: the slower of the two). One phase, the ring's n - 1 steps
// (2 (n - 1) for an all-reduce), each paying the slowest member route's latency.
std::vector<CollectivePhase> hierarchical_plan(const Topology& topo, const CollectivePlanRequest& req,
                                               const LinkCapacity& capacity_Bps) {
  // Nodes in order of first appearance; each node's GPUs in group order. A node here is what
  // its GPUs reach without a NIC: an NVLink domain of several trays (NVL72) counts as one.
  std::vector<int> node_order;
  std::vector<std::vector<int>> per_node;
  std::unordered_map<int, size_t> index_of_node;
  for (int gpu : req.gpus) {
    const int node = gpu / topo.cluster().local_gpus();
    auto [it, added] = index_of_node.try_emplace(node, node_order.size());
    if (added) {
      node_order.push_back(node);
      per_node.emplace_back();
    }
    per_node[it->second].push_back(gpu);
  }
  const int N = static_cast<int>(node_order.size());
  const int L = static_cast<int>(per_node[0].size());
  for (int k = 0; k < N; ++k)
    if (static_cast<int>(per_node[k].size()) != L)
      throw SpecError("hierarchical " + std::string(to_string(req.kind)) +
                      ": the group must have the same number of GPUs on each node (node " +
                      std::to_string(node_order[0]) + " has " + std::to_string(L) + ", node " +
                      std::to_string(node_order[k]) + " has " + std::to_string(per_node[k].size()) + ")");
  if (req.kind != CollectiveKind::all_reduce && req.kind != CollectiveKind::reduce_scatter &&
      req.kind != CollectiveKind::all_gather)
    throw SpecError(std::string("the hierarchical algorithm supports all-reduce, reduce-scatter and all-gather, not ") +
                    to_string(req.kind) + "; use the ring");
  if (N == 1 || L == 1) return ring_plan(topo, req, capacity_Bps);  // no rails to spread over
  const int n = N * L;
  const uint32_t steps = req.kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
  const double fraction = 1.0 / (static_cast<double>(n) * L);  // a channel's chunk of one step
  // Each GPU's L - 1 NVLink sends over the node's rings (ring_shifts: on a mesh each to another
  // peer, on a switch or ring to its successor), when every node's run has the same.
  std::vector<int> shifts = ring_shifts(topo, per_node[0]);
  for (const auto& gpus : per_node)
    if (ring_shifts(topo, gpus) != shifts) shifts = {1};
  auto intra_peer = [&](const std::vector<int>& gpus, int j, int t) { return gpus[(j + shifts[t % shifts.size()]) % L]; };
  CollectivePhase phase;
  if (node_uniform(topo, per_node)) {
    // Every node the same: one node's sends and the rail sends to the next node (folded).
    NodeFootprint f(topo);
    const std::vector<int>& a = per_node[0];
    for (int j = 0; j < L; ++j) {
      for (int t = 0; t + 1 < L; ++t) f.member(a[j], intra_peer(a, j, t));
      f.member(a[j], per_node[1][j]);
      for (int k = 1; k < N; ++k) f.shared_member(per_node[k][j], per_node[(k + 1) % N][j]);
    }
    phase = f.phase(node_order, steps, fraction);
  } else {
    StepBuilder b(topo);
    for (int k = 0; k < N; ++k)
      for (int j = 0; j < L; ++j) {
        for (int t = 0; t + 1 < L; ++t) b.member(per_node[k][j], intra_peer(per_node[k], j, t));
        b.member(per_node[k][j], per_node[(k + 1) % N][j]);
      }
    phase = b.phase(steps, fraction);
  }
  return {phase};
}

}  // namespace

std::vector<CollectivePhase> plan_collective(const Topology& topo, const CollectivePlanRequest& req,
                                             const LinkCapacity& capacity_Bps) {
  if (req.gpus.empty()) throw SpecError(std::string(to_string(req.kind)) + ": the group has no GPUs");
  std::vector<int> sorted(req.gpus.begin(), req.gpus.end());
  for (int gpu : sorted) topo.gpu(gpu);  // throws for a GPU that does not exist
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end())
    throw SpecError(std::string(to_string(req.kind)) + ": GPU " + std::to_string(*dup) + " appears twice in the group");
  if (!(req.bytes >= 0) || !std::isfinite(req.bytes))
    throw SpecError(std::string(to_string(req.kind)) + ": bytes must be >= 0, got " + std::to_string(req.bytes));
  if (req.repeats < 1)
    throw SpecError(std::string(to_string(req.kind)) + ": repeats must be >= 1, got " + std::to_string(req.repeats));

  std::vector<CollectivePhase> phases;
  if (req.algo == CollectiveAlgo::Hierarchical && req.gpus.size() > 1) {
    phases = hierarchical_plan(topo, req, capacity_Bps);
  } else {
    phases = ring_plan(topo, req, capacity_Bps);
  }
  // Repeated back to back: each phase's steps `repeats` times, each step a repeat's share.
  for (CollectivePhase& p : phases) {
    p.steps *= static_cast<uint32_t>(req.repeats);
    p.fraction /= req.repeats;
  }
  if (!req.merge_steps) return phases;

  if (req.kind == CollectiveKind::all_to_all && req.algo == CollectiveAlgo::Ring && phases.size() > 1) {
    // All shifts at once: the union of their routes, each member moving bytes/n once.
    CollectivePhase all;
    std::vector<LinkUse> uses;
    for (const CollectivePhase& p : phases) {
      uses.insert(uses.end(), p.links.begin(), p.links.end());
      all.latency_s = std::max(all.latency_s, p.latency_s);
      all.members += p.members;
    }
    std::sort(uses.begin(), uses.end(), [](const LinkUse& a, const LinkUse& b) { return a.link < b.link; });
    for (const LinkUse& u : uses) {
      if (!all.links.empty() && all.links.back().link == u.link) all.links.back().weight += u.weight;
      else all.links.push_back(u);
    }
    all.latency_s *= static_cast<double>(phases.size()) * phases[0].steps;  // every shift of every repeat
    all.steps = 1;
    all.fraction = phases[0].fraction * phases[0].steps;
    return {std::move(all)};
  }
  for (CollectivePhase& p : phases) {
    p.fraction *= p.steps;
    p.latency_s *= p.steps;
    p.steps = 1;
  }
  return phases;
}

}  // namespace starfish::des
