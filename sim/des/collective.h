#pragma once
// How a collective over a group of GPUs becomes steps of concurrent flows on the topology.
//
// Ring (the group's order is the ring's order; group[0] is the root of broadcast and reduce):
//   all-reduce       2(n-1) steps; in each, every GPU sends bytes/n to the next one
//   reduce-scatter    n-1   steps of bytes/n   (bytes = each GPU's input buffer)
//   all-gather        n-1   steps of bytes/n   (bytes = each GPU's output buffer)
//   broadcast/reduce  k+n-2 steps of bytes/k along the chain root -> ... -> last (reduce: the
//                     reverse), the buffer pipelined in k chunks; every step is modelled with the
//                     whole chain busy (exact when nothing else shares it)
//   all-to-all        n-1   steps of bytes/n; in step s GPU i sends to GPU i+s (mod n)
// On one node without an NVSwitch, all-reduce, reduce-scatter and all-gather run several rings
// at once, each an equal share of every step (NCCL's and RCCL's channels): on a mesh (AMD
// MI300X's xGMI) one ring per shift 1 .. n-1, member i sending to member i+s over their own
// link, so each member drives its n-1 links; on a ring of direct links holding the whole node,
// the ring both ways round. Cluster::intra_node_group_bandwidth_Bps is the analytic tier's twin.
// Hierarchical (all-reduce, reduce-scatter, all-gather; the group must have the same number L of
// GPUs on each of its N nodes): NCCL's ring over all n = N L ranks in L channels, one per NIC
// rail (the j-th GPU of each node). One phase of the ring's steps, in each of which every GPU
// sends a channel's chunk (bytes / (n L)) to L - 1 GPUs of its node (over the node's rings, as
// above) and one to the next node's GPU of its rail, all at once. With N == 1 or L == 1 it is
// the ring.
//
// A step is one flow bundle (see flow_network.h): every member moves the same bytes, all at the
// rate of the most contended member, and the step ends when the slowest member route's latency
// has also passed. Steps of one phase are identical, so a phase of s steps can be merged into
// one bundle of s * chunk bytes and s latencies: exact when no other flow shares its links (the
// per-step model leaves the links idle during each step's latency, the merged one does not).
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "sim/des/flow_network.h"
#include "sim/spec/collective_kind.h"
#include "sim/des/topology.h"

namespace starfish::des {

using starfish::CollectiveKind;  // sim/spec/collective_kind.h (send_recv is not a collective here)
enum class CollectiveAlgo : uint8_t { Ring, Hierarchical };
const char* to_string(CollectiveAlgo a);

struct CollectivePhase {
  // All members' routes, weight = members crossing the link. When `nodes` is not empty, the
  // phase is planned by shape: `links` is one node's share (local link ids, see
  // Topology::links_per_node) and every node in `nodes` carries the same share.
  std::vector<LinkUse> links;
  std::vector<int> nodes;
  std::vector<LinkUse> shared_links;  // with `nodes`: a fat tree's switch links (global ids), all members'

  double latency_s = 0;        // per step: the slowest member route's latency
  uint32_t steps = 0;          // identical steps, run one after another
  double fraction = 0;         // bytes each member moves per step, as a fraction of the bytes
  uint32_t members = 0;        // concurrent member transfers per step
};

struct CollectivePlanRequest {
  std::span<const int> gpus;  // global GPU indices, distinct, in ring order
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgo algo = CollectiveAlgo::Ring;
  double bytes = 0;
  int pipeline_chunks = 0;    // broadcast/reduce; 0 = choose to minimise the chain's alpha-beta time
  bool merge_steps = true;    // one bundle per phase (all-to-all: one bundle for all its steps)
  // The collective run `repeats` times back to back on bytes / repeats each, as one plan: every
  // phase's steps repeated (a framework's consecutive collectives on the same group, each with
  // its ring's step latencies).
  int repeats = 1;
};

// Throws SpecError for an empty group, a repeated or missing GPU, or a hierarchical request the
// group's shape does not allow. `capacity_Bps(link)` is used only to choose pipeline chunks.
using LinkCapacity = std::function<double(LinkId)>;
std::vector<CollectivePhase> plan_collective(const Topology& topo, const CollectivePlanRequest& req,
                                             const LinkCapacity& capacity_Bps);

// Pipeline chunks k minimising (k + n - 2) * (bytes / (k * bw) + latency), 1 <= k <= 64.
int best_pipeline_chunks(int n, double bytes, double bottleneck_Bps, double latency_s);

}  // namespace starfish::des
