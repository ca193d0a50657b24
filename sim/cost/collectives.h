#pragma once
// Alpha-beta times of collectives over the link that carries them (Thakur et al. 2005 for the
// ring algorithms; NCCL's double binary tree for the tree all-reduce). `bytes` is always the
// size of the whole buffer on one rank; `bandwidth_Bps` the per-rank, per-direction bandwidth.
#include <cstdint>

#include "sim/spec/collective_kind.h"
#include "sim/spec/hardware.h"

namespace starfish {

enum class CollectiveAlgorithm { ring, tree };

struct LinkParams {
  double bandwidth_Bps = 0;  // per rank, per direction
  double latency_s = 0;      // per step (alpha)
  bool inter_node = false;
};

double collective_time_s(CollectiveKind kind, CollectiveAlgorithm algorithm, int ranks, double bytes,
                         const LinkParams& link);

// Bytes each rank sends for a collective (ring): all-reduce 2(n-1)/n B, all-gather and
// reduce-scatter (n-1)/n B, broadcast/reduce B, all-to-all (n-1)/n B, send/recv B.
double collective_bytes_sent_per_rank(CollectiveKind kind, int ranks, double bytes);

// The link a group of `ranks` GPUs uses when its members are `stride` GPUs apart in the global
// rank order (Megatron's order: TP innermost, then DP, then PP). A group inside one node uses
// NVLink (or PCIe): on a mesh the links among its members (Cluster::intra_node_group_bandwidth_Bps);
// a group across nodes is bounded by the per-GPU share of the NICs, times the members per node
// that drive parallel rings (NCCL channels), and by the links among those members.
LinkParams link_for_group(const Cluster& cluster, int ranks, int stride);

// The share of each member's links inside its node (NVLink, or PCIe) that a ring over such a
// group keeps busy while it runs: 1 for a group inside one node; for a group across nodes with
// several members a node (hierarchical: (L - 1) / L of the ring's bytes cross those links at
// the pace the NICs set), the rate it moves at over the rate those links could take; 0 with one
// member a node (every byte goes to the NIC). What the chain's TP collectives give up to it.
double node_links_share(const Cluster& cluster, int ranks, int stride);

// The link a send from one member of such a group to another uses (pipeline stages, the context-
// parallel ring): link_for_group's, but inside a node the one pair's share (a mesh's one link).
LinkParams link_for_send(const Cluster& cluster, int ranks, int stride);

// All-to-all of a group of `ranks` GPUs `stride` apart, each holding a `bytes` buffer of which it
// sends 1/ranks to every member (MoE token dispatch and combine). Unlike a ring, every byte
// travels once, directly: the share for members on the same node over the intra-node link, the
// share for other nodes through this GPU's share of the NICs, both at once (on a mesh each local
// peer over its own link); one latency per peer (NCCL's all-to-all posts a send/receive pair per
// peer), a direct message's across nodes (Cluster::inter_node_message_latency_s).
double all_to_all_time_s(const Cluster& cluster, int ranks, int stride, double bytes);


}  // namespace starfish
