#include "sim/des/collective.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

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

void ring_members(StepBuilder& b, std::span<const int> ring) {
  const size_t n = ring.size();
  if (n < 2) return;
  for (size_t i = 0; i < n; ++i) b.member(ring[i], ring[(i + 1) % n]);
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
      ring_members(b, g);
      out.push_back(b.phase(2 * (n - 1), 1.0 / n));
      break;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
      ring_members(b, g);
      out.push_back(b.phase(n - 1, 1.0 / n));
      break;
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
        k = best_pipeline_chunks(n, req.bytes, bottleneck_Bps, p.latency_s);
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

std::vector<CollectivePhase> hierarchical_plan(const Topology& topo, const CollectivePlanRequest& req) {
  // Nodes in order of first appearance; each node's GPUs in group order.
  std::vector<int> node_order;
  std::vector<std::vector<int>> per_node;
  for (int gpu : req.gpus) {
    const int node = gpu / topo.gpus_per_node();
    auto it = std::find(node_order.begin(), node_order.end(), node);
    if (it == node_order.end()) {
      node_order.push_back(node);
      per_node.emplace_back();
      it = node_order.end() - 1;
    }
    per_node[static_cast<size_t>(it - node_order.begin())].push_back(gpu);
  }
  const int N = static_cast<int>(node_order.size());
  const int L = static_cast<int>(per_node[0].size());
  for (int k = 0; k < N; ++k)
    if (static_cast<int>(per_node[k].size()) != L)
      throw SpecError("hierarchical " + std::string(to_string(req.kind)) +
                      ": the group must have the same number of GPUs on each node (node " +
                      std::to_string(node_order[0]) + " has " + std::to_string(L) + ", node " +
                      std::to_string(node_order[k]) + " has " + std::to_string(per_node[k].size()) + ")");
  StepBuilder b(topo);
  for (const auto& ring : per_node) ring_members(b, ring);
  CollectivePhase intra = b.phase(L - 1, 1.0 / L);
  std::vector<int> rail(N);
  for (int j = 0; j < L; ++j) {
    for (int k = 0; k < N; ++k) rail[k] = per_node[k][j];
    ring_members(b, rail);
  }
  const double inter_fraction = 1.0 / (static_cast<double>(L) * N);
  std::vector<CollectivePhase> out;
  switch (req.kind) {
    case CollectiveKind::all_reduce:
      out.push_back(intra);
      out.push_back(b.phase(2 * (N - 1), inter_fraction));
      out.push_back(intra);
      break;
    case CollectiveKind::reduce_scatter:
      out.push_back(intra);
      out.push_back(b.phase(N - 1, inter_fraction));
      break;
    case CollectiveKind::all_gather:
      out.push_back(b.phase(N - 1, inter_fraction));
      out.push_back(intra);
      break;
    default:
      throw SpecError(std::string("the hierarchical algorithm supports all-reduce, reduce-scatter and all-gather, not ") +
                      to_string(req.kind) + "; use the ring");
  }
  return out;
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

  std::vector<CollectivePhase> phases;
  if (req.algo == CollectiveAlgo::Hierarchical && req.gpus.size() > 1) {
    phases = hierarchical_plan(topo, req);
    // Degenerate shapes (one node, or one GPU per node) leave phases without steps.
    std::erase_if(phases, [](const CollectivePhase& p) { return p.steps == 0 || p.members == 0; });
  } else {
    phases = ring_plan(topo, req, capacity_Bps);
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
    all.latency_s *= static_cast<double>(phases.size());
    all.steps = 1;
    all.fraction = phases[0].fraction;
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
