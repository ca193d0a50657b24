#include "sim/cost/collectives.h"

#include <algorithm>
#include <cmath>

namespace starfish {

double collective_bytes_sent_per_rank(CollectiveKind kind, int n, double bytes) {
  if (n <= 1) return 0;
  const double frac = static_cast<double>(n - 1) / n;
  switch (kind) {
    case CollectiveKind::all_reduce: return 2 * frac * bytes;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: return frac * bytes;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce:
    case CollectiveKind::send_recv: return bytes;
  }
  return 0;
}

double collective_time_s(CollectiveKind kind, CollectiveAlgorithm algo, int n, double bytes, const LinkParams& link) {
  if (kind == CollectiveKind::send_recv) return link.latency_s + bytes / link.bandwidth_Bps;
  if (n <= 1 || bytes <= 0) return 0;
  const double a = link.latency_s, bw = link.bandwidth_Bps;
  if (algo == CollectiveAlgorithm::tree && (kind == CollectiveKind::all_reduce || kind == CollectiveKind::broadcast ||
                                            kind == CollectiveKind::reduce)) {
    // Pipelined (double binary) tree: log2(n) steps of latency each way, full bytes at link rate.
    const double depth = std::ceil(std::log2(static_cast<double>(n)));
    const double passes = kind == CollectiveKind::all_reduce ? 2 : 1;
    return passes * (depth * a + bytes / bw);
  }
  const double steps_rs = n - 1;
  switch (kind) {
    case CollectiveKind::all_reduce: return 2 * steps_rs * (a + bytes / n / bw);
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter: return steps_rs * (a + bytes / n / bw);
    case CollectiveKind::all_to_all: return steps_rs * a + (n - 1.0) / n * bytes / bw;
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce: return steps_rs * a + bytes / bw;  // pipelined ring
    case CollectiveKind::send_recv: break;
  }
  return 0;
}

namespace {

// The exchange among one node's `members` of a group (`stride` apart), `share_bytes` a peer.
// NVLink: each member's share of the node's links. PCIe: each member's own link carries its
// members - 1 shares; a switch's uplink the shares leaving it, from every member behind it of
// every concurrent group (the event-driven topology's links, sim/des/topology.cpp).
double all_to_all_local_s(const Cluster& c, int members, int stride, double share_bytes) {
  if (members <= 1) return 0;
  if (c.node.nvlink) return share_bytes * (members - 1.0) / c.intra_node_group_bandwidth_Bps(members);
  const int members_per_root = c.pcie_members_per_switch(members, stride);
  const double uplink_shares = c.pcie_group_leaves_switch(members, stride)
                                   ? static_cast<double>(c.pcie_uplink_sharers(members, stride)) * members_per_root *
                                         (members - members_per_root)
                                   : 0.0;
  return share_bytes * std::max(members - 1.0, uplink_shares) / c.node.pcie.bandwidth_Bps();
}

}  // namespace

double all_to_all_time_s(const Cluster& c, int ranks, int stride, double bytes) {
  if (ranks <= 1 || bytes <= 0) return 0;
  // The members on NVLink (or a PCIe node) with each other; the rest are across the NICs.
  const int members_per_node = std::clamp(c.local_gpus() / std::max(1, stride), 1, ranks);
  const double n = ranks;
  const double local_s = all_to_all_local_s(c, members_per_node, stride, bytes / n);
  if (members_per_node >= ranks) return (n - 1) * c.intra_node_latency_s() + local_s;
  const double remote_s = bytes * (n - members_per_node) / n / c.inter_node_bandwidth_per_gpu_Bps();
  return (n - 1) * c.inter_node_message_latency_s() + std::max(local_s, remote_s);
}

LinkParams link_for_group(const Cluster& c, int ranks, int stride) {
  const int per_node = c.local_gpus();
  // Members of the group that share a node (an NVLink domain: NVL72's trays talk over NVLink).
  const int members_per_node = std::clamp(per_node / std::max(1, stride), 1, ranks);
  LinkParams link;
  if (members_per_node >= ranks) {
    link.bandwidth_Bps = c.intra_node_group_bandwidth_Bps(ranks, stride);
    link.latency_s = c.intra_node_latency_s();
    return link;
  }
  link.inter_node = true;
  // NCCL's ring over the group runs one channel per NIC rail: at each step every member sends
  // a channel's chunk to the next node's member of its rail and one to each of the others on its
  // node over the links among them (one member: none, its bytes go over its PCIe path to the
  // NIC, which inter_node_bandwidth_per_gpu_Bps bounds). So of the ring's bytes a member moves,
  // (L - 1) / L cross those links and 1 / L its NIC, at once (sim/des/collective.cpp,
  // hierarchical_plan: the event-driven tier's twin).
  const double L = members_per_node;
  link.bandwidth_Bps = c.inter_node_bandwidth_per_gpu_Bps() * L;
  if (members_per_node > 1)
    link.bandwidth_Bps = std::min(link.bandwidth_Bps, c.intra_node_group_bandwidth_Bps(members_per_node, stride) * L / (L - 1));
  link.latency_s = c.inter_node_message_latency_s();  // each step a message between nodes, as simulated
  return link;
}

double node_links_share(const Cluster& c, int ranks, int stride) {
  const int members_per_node = std::clamp(c.local_gpus() / std::max(1, stride), 1, ranks);
  if (members_per_node >= ranks) return 1;
  if (members_per_node <= 1) return 0;
  const double L = members_per_node;
  const double intra_Bps = c.intra_node_group_bandwidth_Bps(members_per_node, stride) * L / (L - 1);
  return std::min(1.0, link_for_group(c, ranks, stride).bandwidth_Bps / intra_Bps);
}

LinkParams link_for_send(const Cluster& c, int ranks, int stride) {
  LinkParams link = link_for_group(c, ranks, stride);
  // Every GPU of a stage (`stride` of them) sends to its peer at once: over PCIe, those behind
  // one switch share its uplink when the pair crosses it (the worst pair paces the pipeline).
  if (!link.inter_node)
    link.bandwidth_Bps = c.node.nvlink ? c.intra_node_group_bandwidth_Bps(2) : c.node.pcie.bandwidth_Bps() / c.pcie_senders_per_switch(stride);
  return link;
}


}  // namespace starfish
