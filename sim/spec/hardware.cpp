#include "sim/spec/hardware.h"

#include <algorithm>
#include <cmath>

namespace starfish {

double EfficiencyCurve::at(double flop) const {
  if (points.empty()) return 1.0;
  if (flop <= points.front().first) return points.front().second;
  if (flop >= points.back().first) return points.back().second;
  const double x = std::log10(flop);
  for (size_t i = 1; i < points.size(); ++i) {
    if (flop > points[i].first) continue;
    const double x0 = std::log10(points[i - 1].first), x1 = std::log10(points[i].first);
    const double t = (x - x0) / (x1 - x0);
    return points[i - 1].second + t * (points[i].second - points[i - 1].second);
  }
  return points.back().second;
}

double GpuSpec::peak(DType t) const {
  auto it = peak_flops.find(t);
  if (it == peak_flops.end())
    throw SpecError("GPU " + name + " has no peak FLOP/s for " + std::string(to_string(t)) + " in its hwprofile");
  return it->second;
}

double PcieSpec::raw_Bps() const {
  // Per-lane transfer rate (GT/s) and line encoding by generation (PCI-SIG base specifications):
  // gen1/2 8b/10b at 2.5/5 GT/s, gen3+ 128b/130b at 8/16/32/64 GT/s (gen6 PAM4 + FLIT ~242/256).
  static constexpr double kGts[] = {0, 2.5, 5, 8, 16, 32, 64};
  const int g = std::clamp(generation, 1, 6);
  const double encoding = g <= 2 ? 8.0 / 10.0 : g == 6 ? 242.0 / 256.0 : 128.0 / 130.0;
  return kGts[g] * 1e9 * encoding / 8.0 * lanes;
}

double Cluster::intra_node_bandwidth_Bps() const {
  if (node.nvlink) return node.nvlink->achieved_Bps();
  // Without NVLink GPU-to-GPU traffic crosses PCIe; the GPUs behind one root share it.
  return node.pcie.bandwidth_Bps() / std::max(1, node.pcie.gpus_per_root);
}

int Cluster::pcie_members_per_switch(int members, int stride) const {
  const int per_root = std::max(1, node.pcie.gpus_per_root);
  return std::clamp(per_root / std::max(1, stride), 1, std::max(1, members));
}

int Cluster::pcie_senders_per_switch(int stage_gpus) const {
  return std::clamp(stage_gpus, 1, std::max(1, node.pcie.gpus_per_root));
}

int Cluster::pcie_uplink_sharers(int members, int stride) const {
  if (!pcie_group_leaves_switch(members, stride)) return 1;
  return std::min(std::max(1, stride), std::max(1, node.pcie.gpus_per_root));
}

double Cluster::intra_node_group_bandwidth_Bps(int members, int stride) const {
  // A GPU ring over PCIe crosses each switch's uplink once a direction (full duplex), so one
  // group alone gets the whole link; host copies, where every GPU behind a root moves its own
  // bytes, are what intra_node_bandwidth_Bps divides.
  if (!node.nvlink) return node.pcie.bandwidth_Bps() / pcie_uplink_sharers(members, stride);
  const double whole_Bps = intra_node_bandwidth_Bps();
  if (node.gpus <= 2) return whole_Bps;  // one link joins the pair
  const int k = std::clamp(members, 2, node.gpus);
  switch (node.nvlink->topology) {
    case NvlinkTopology::switched: return whole_Bps;
    case NvlinkTopology::mesh: return whole_Bps * (k - 1) / (node.gpus - 1);
    case NvlinkTopology::ring: return k == node.gpus ? whole_Bps : whole_Bps / 2;
  }
  return whole_Bps;
}

double Cluster::intra_node_latency_s() const {
  return node.nvlink ? node.nvlink->latency_s : 2 * node.pcie.latency_s;
}

double Cluster::inter_node_bandwidth_per_gpu_Bps() const {
  if (!node.nic) return 0;
  const int nics = std::max(1, node.nic->count);
  const double nic_share_Bps = nics * node.nic->achieved_Bps() / std::max(1, node.gpus);
  // The most GPUs on one NIC (topology.cpp's nic_of_gpu gives each NIC a block of them): the
  // slowest member paces a ring.
  const int gpus_per_nic = std::max(1, (node.gpus + nics - 1) / nics);
  return std::min(nic_share_Bps, node.pcie.bandwidth_Bps() / gpus_per_nic);
}

int Cluster::nvlink_domain_gpus() const {
  if (!node.nvlink) return 1;
  if (!node.nvlink->switched()) return node.gpus;
  return node.gpus * std::min(node.nvlink->domain_nodes, nodes);
}

int Cluster::local_gpus() const { return node.nvlink ? nvlink_domain_gpus() : node.gpus; }

double Cluster::inter_node_message_latency_s() const {
  return node.nic ? node.nic->latency_s + 2 * node.pcie.latency_s : 0;
}

}  // namespace starfish
