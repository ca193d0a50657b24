#include "sim/cost/context_parallel.h"

#include <algorithm>

namespace starfish {

double cp_kv_block_bytes(const Model& m, const Plan& p, int64_t act_bytes) {
  return static_cast<double>(p.micro_batch) * (static_cast<double>(m.seq_len) / p.cp) *
         (static_cast<double>(m.k_dim() + m.v_dim()) / p.tp) * static_cast<double>(act_bytes);
}

LinkParams cp_ring_link(const Cluster& c, const Plan& p) {
  LinkParams link = link_for_send(c, p.cp, p.tp);
  // A point-to-point send to one peer: no parallel rings over the node's other members (unlike
  // link_for_group's collectives), so across nodes it gets this GPU's share of the NICs.
  if (link.inter_node) link.bandwidth_Bps = c.inter_node_bandwidth_per_gpu_Bps();
  return link;
}

double CpRingPass::exposed_s(const LinkParams& link) const {
  double exposed = 0;
  for (double bytes : send_bytes)
    if (bytes > 0)
      exposed += std::max(0.0, collective_time_s(CollectiveKind::send_recv, CollectiveAlgorithm::ring, 2, bytes, link) - block_s);
  return exposed;
}

CpRing cp_ring(const Cluster& c, const Model& m, const Plan& p, int64_t act_bytes, const LayerTime& layer) {
  CpRing ring;
  if (p.cp <= 1) return ring;
  const int cp = p.cp;
  const double kv = cp_kv_block_bytes(m, p, act_bytes);
  ring.link = cp_ring_link(c, p);
  ring.forward.block_s = layer.core_forward_s / cp;
  ring.forward.send_bytes.assign(static_cast<size_t>(cp), kv);
  ring.forward.send_bytes.back() = 0;  // the last block has nothing left to pass on
  ring.backward.block_s = layer.core_backward_s / cp;
  ring.backward.send_bytes.assign(static_cast<size_t>(cp), 2 * kv);
  ring.backward.send_bytes.front() = kv;  // K, V only: no gradient yet
  ring.backward.send_bytes.back() = kv;   // dK, dV only, back to their owner
  ring.forward_exposed_s = ring.forward.exposed_s(ring.link);
  ring.layer_exposed_s = ring.forward_exposed_s * (p.recompute == Recompute::full ? 2 : 1) + ring.backward.exposed_s(ring.link);
  return ring;
}

}  // namespace starfish
