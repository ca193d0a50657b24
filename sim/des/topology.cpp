#include "sim/des/topology.h"

#include <boost/graph/adjacency_list.hpp>
#include "sim/des/topology_graph.h"

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <cmath>
#include <limits>

#include "sim/spec/error.h"

namespace starfish::des {

const char* to_string(VertexKind k) {
  switch (k) {
    case VertexKind::Gpu: return "gpu";
    case VertexKind::PcieSwitch: return "pcie-switch";
    case VertexKind::HostCpu: return "host-cpu";
    case VertexKind::HostMemory: return "host-memory";
    case VertexKind::Nvme: return "nvme";
    case VertexKind::NvSwitch: return "nvswitch";
    case VertexKind::Nic: return "nic";
    case VertexKind::Fabric: return "fabric";
    case VertexKind::FabricSwitch: return "fabric-switch";
  }
  return "?";
}

const char* to_string(LinkKind k) {
  switch (k) {
    case LinkKind::Pcie: return "pcie";
    case LinkKind::PcieUplink: return "pcie-uplink";
    case LinkKind::HostMemory: return "host-memory";
    case LinkKind::Nvme: return "nvme";
    case LinkKind::Nvlink: return "nvlink";
    case LinkKind::NicPcie: return "nic-pcie";
    case LinkKind::Network: return "network";
  }
  return "?";
}

namespace {

void require_positive(double v, const std::string& what) {
  if (!(v > 0) || !std::isfinite(v))
    throw SpecError("topology: " + what + " must be a positive number, got " + std::to_string(v));
}

void require_nonnegative(double v, const std::string& what) {
  if (!(v >= 0) || !std::isfinite(v))
    throw SpecError("topology: " + what + " must be >= 0, got " + std::to_string(v));
}

// The cluster's numbers the topology needs: nodes that can talk, and every bandwidth positive.
void validate_cluster(const Cluster& cluster) {
  const NodeSpec& n = cluster.node;
  if (cluster.nodes < 1) throw SpecError("topology: cluster '" + cluster.name + "' has no nodes");
  if (n.gpus < 1) throw SpecError("topology: node '" + n.name + "' has no GPUs");
  if (cluster.nodes > 1 && !n.nic)
    throw SpecError("topology: cluster '" + cluster.name + "' has " + std::to_string(cluster.nodes) +
                    " nodes but node.nic is absent: the nodes cannot talk");
  if (n.pcie.gpus_per_root < 1)
    throw SpecError("topology: pcie.gpus_per_root must be >= 1, got " + std::to_string(n.pcie.gpus_per_root));
  require_positive(n.pcie.bandwidth_Bps(), "pcie bandwidth");
  require_nonnegative(n.pcie.latency_s, "pcie.latency");
  require_positive(n.host.memory_bandwidth_Bps, "host.memory_bandwidth");
  if (n.nvme) {
    require_positive(n.nvme->read_Bps, "nvme.read");
    require_positive(n.nvme->write_Bps, "nvme.write");
    require_nonnegative(n.nvme->latency_s, "nvme.latency");
  }
  if (n.nvlink) {
    require_positive(n.nvlink->bandwidth_Bps, "nvlink.bandwidth");
    require_nonnegative(n.nvlink->latency_s, "nvlink.latency");
  }
  if (n.nic) {
    if (n.nic->count < 1) throw SpecError("topology: nic.count must be >= 1, got " + std::to_string(n.nic->count));
    require_positive(n.nic->bandwidth_Bps, "nic.bandwidth");
    require_nonnegative(n.nic->latency_s, "nic.latency");
  }
}

}  // namespace

Topology::Topology(const Cluster& cluster) : cluster_(cluster) {
  validate_cluster(cluster_);
  const NodeSpec& n = cluster_.node;
  gpus_per_root_ = n.pcie.gpus_per_root;
  switches_ = (n.gpus + gpus_per_root_ - 1) / gpus_per_root_;
  nics_ = n.nic ? n.nic->count : 0;
  // An NVLink domain over several nodes: every GPU's NVLink goes to the domain's switch.
  const bool domain = n.nvlink && n.nvlink->switched() && n.nvlink->domain_nodes > 1 && cluster_.nodes > 1;
  if (domain) domain_nodes_ = std::min(n.nvlink->domain_nodes, cluster_.nodes);
  const bool nvswitch = !domain && n.nvlink && n.nvlink->switched() && n.gpus > 1;
  add_node_vertices(nvswitch);
  vertices_per_node_ = static_cast<uint32_t>(local_vertices_.size());
  if (static_cast<uint64_t>(cluster_.nodes) * (vertices_per_node_ + 1) >= kNone - 2)
    throw SpecError("topology: cluster '" + cluster_.name + "' has too many devices to number (" +
                    std::to_string(cluster_.nodes) + " nodes)");
  node_vertices_ = static_cast<size_t>(cluster_.nodes) * vertices_per_node_;
  // After the nodes' blocks: the core, the NVLink domains' switches, the fat tree's switches.
  if (cluster_.nodes > 1) fabric_ = static_cast<DeviceId>(node_vertices_), extra_vertices_ = 1;
  if (domain) {
    first_domain_ = static_cast<DeviceId>(node_vertices_ + extra_vertices_);
    extra_vertices_ += static_cast<size_t>((cluster_.nodes + domain_nodes_ - 1) / domain_nodes_);
  }
  add_node_links(domain, nvswitch);
  links_per_node_ = static_cast<uint32_t>(local_links_.size());
  if (static_cast<uint64_t>(cluster_.nodes) * (links_per_node_ + 2) >= kNone - 1)
    throw SpecError("topology: cluster '" + cluster_.name + "' has too many links to number (" +
                    std::to_string(cluster_.nodes) + " nodes)");
  node_links_ = static_cast<size_t>(cluster_.nodes) * links_per_node_;
  build_fabric_tiers();
  compute_node_routes();
}

// Node 0's vertices, in the local order every node shares; the fabric comes after all nodes.
void Topology::add_node_vertices(bool nvswitch) {
  const NodeSpec& n = cluster_.node;
  for (int g = 0; g < n.gpus; ++g) add_vertex(VertexKind::Gpu, g, "gpu" + std::to_string(g));
  for (int s = 0; s < switches_; ++s) {
    const DeviceId v = add_vertex(VertexKind::PcieSwitch, s, "pcie" + std::to_string(s));
    if (s == 0) local_switch0_ = v;
  }
  local_cpu_ = add_vertex(VertexKind::HostCpu, 0, "host");
  local_dram_ = add_vertex(VertexKind::HostMemory, 0, "dram");
  if (n.nvme) local_nvme_ = add_vertex(VertexKind::Nvme, 0, "nvme");
  if (nvswitch) local_nvswitch_ = add_vertex(VertexKind::NvSwitch, 0, "nvswitch");
  for (int j = 0; j < nics_; ++j) {
    const DeviceId v = add_vertex(VertexKind::Nic, j, "nic" + std::to_string(j));
    if (j == 0) local_nic0_ = v;
  }
}

// Node 0's links (every node's block has the same local layout): PCIe, host memory, NVMe,
// NVLink (to the domain's switch, the node's NVSwitch, a pair, a ring or a mesh), the NICs and
// their uplinks.
void Topology::add_node_links(bool domain, bool nvswitch) {
  const NodeSpec& n = cluster_.node;
  const double pcie_Bps = n.pcie.bandwidth_Bps();
  const double pcie_half_s = n.pcie.latency_s / 2;
  for (int g = 0; g < n.gpus; ++g)
    add_link(LinkKind::Pcie, static_cast<DeviceId>(g), local_switch0_ + switch_of_gpu(g), pcie_Bps, pcie_Bps, pcie_half_s);
  for (int s = 0; s < switches_; ++s)
    add_link(LinkKind::PcieUplink, local_switch0_ + s, local_cpu_, pcie_Bps, pcie_Bps, pcie_half_s);
  add_link(LinkKind::HostMemory, local_cpu_, local_dram_, n.host.memory_bandwidth_Bps, n.host.memory_bandwidth_Bps, 0);
  if (n.nvme) add_link(LinkKind::Nvme, local_nvme_, local_cpu_, n.nvme->read_Bps, n.nvme->write_Bps, n.nvme->latency_s);
  if (n.nvlink && (n.gpus > 1 || domain)) {
    const double bw = n.nvlink->achieved_Bps(), lat = n.nvlink->latency_s;
    auto gpu_v = [](int g) { return static_cast<DeviceId>(g); };
    if (domain) {
      for (int g = 0; g < n.gpus; ++g) add_link(LinkKind::Nvlink, gpu_v(g), kDomainSwitch, bw, bw, lat / 2);
    } else if (nvswitch) {
      for (int g = 0; g < n.gpus; ++g) add_link(LinkKind::Nvlink, gpu_v(g), local_nvswitch_, bw, bw, lat / 2);
    } else if (n.gpus == 2) {
      add_link(LinkKind::Nvlink, gpu_v(0), gpu_v(1), bw, bw, lat);
    } else if (n.nvlink->topology == NvlinkTopology::mesh) {
      // One link per pair: the GPU's bandwidth is over its gpus - 1 links together.
      const double pair_Bps = bw / (n.gpus - 1);
      for (int g = 0; g < n.gpus; ++g)
        for (int h = g + 1; h < n.gpus; ++h) add_link(LinkKind::Nvlink, gpu_v(g), gpu_v(h), pair_Bps, pair_Bps, lat);
    } else {
      for (int g = 0; g < n.gpus; ++g) add_link(LinkKind::Nvlink, gpu_v(g), gpu_v((g + 1) % n.gpus), bw / 2, bw / 2, lat);
    }
  }
  for (int j = 0; j < nics_; ++j) {
    const int sw = static_cast<int>(static_cast<int64_t>(j) * switches_ / nics_);
    add_link(LinkKind::NicPcie, local_switch0_ + sw, local_nic0_ + j, pcie_Bps, pcie_Bps, pcie_half_s);
  }
  for (int j = 0; j < nics_ && fabric_ != kNone; ++j) {
    nic_uplink_.push_back(static_cast<LinkId>(local_links_.size()));
    add_link(LinkKind::Network, local_nic0_ + j, kNone, n.nic->achieved_Bps(), n.nic->achieved_Bps(), n.nic->latency_s / 2);
  }
}

void Topology::build_fabric_tiers() {
  const FabricSpec& f = cluster_.fabric;
  if (f.tiers.empty() || cluster_.nodes < 2 || nics_ == 0) return;
  const bool rails = f.rail_optimized;
  const double nic_Bps = cluster_.node.nic->achieved_Bps();
  constexpr int64_t kMaxSwitches = int64_t{1} << 24;  // ids stay 32-bit; a real fabric has thousands
  int64_t switches = 0;
  for (size_t k = 0; k < f.tiers.size(); ++k)
    switches += (cluster_.nodes + f.tiers[k].nodes - 1) / f.tiers[k].nodes * (k == 0 && rails ? nics_ : 1);
  if (switches > kMaxSwitches)
    throw SpecError("topology: cluster '" + cluster_.name + "' has a fabric of " + std::to_string(switches) +
                    " switches; at most " + std::to_string(kMaxSwitches) + " are supported");
  // Vertices first (a switch's uplink names its parent), then each switch's up and down link.
  for (size_t k = 0; k < f.tiers.size(); ++k) {
    Tier t;
    t.span_nodes = f.tiers[k].nodes;
    const int groups = (cluster_.nodes + t.span_nodes - 1) / t.span_nodes;
    t.switches = k == 0 && rails ? groups * nics_ : groups;
    t.first_vertex = static_cast<DeviceId>(node_vertices_ + extra_vertices_);
    extra_vertices_ += static_cast<size_t>(t.switches);
    // What comes into one switch from below, over its oversubscription: a leaf's NIC ports
    // (its span's nodes, one NIC each on a rail leaf); above, its children's uplinks (all rails'
    // leaves under a tier-1 switch of a rail-optimised fabric).
    double down_Bps = t.span_nodes * nic_Bps * (rails ? 1 : nics_);
    if (k > 0) {
      const Tier& below = tiers_[k - 1];
      down_Bps = static_cast<double>(t.span_nodes / below.span_nodes) * below.up_Bps * (k == 1 && rails ? nics_ : 1);
    }
    t.up_Bps = down_Bps / f.tiers[k].oversubscription;
    t.latency_s = f.tiers[k].latency_s;
    tiers_.push_back(t);
  }
  for (size_t k = 0; k < tiers_.size(); ++k) {
    Tier& t = tiers_[k];
    t.first_link = static_cast<LinkId>(node_links_ + fabric_links_.size());
    for (int i = 0; i < t.switches; ++i) {
      const int first_node = (k == 0 && rails ? i / nics_ : i) * t.span_nodes;
      const DeviceId parent =
          k + 1 < tiers_.size() ? tiers_[k + 1].first_vertex + static_cast<DeviceId>(switch_of(static_cast<int>(k) + 1, first_node, 0)) : fabric_;
      const DeviceId self = t.first_vertex + static_cast<DeviceId>(i);
      fabric_links_.push_back(LocalLink{LinkKind::Network, self, parent, t.up_Bps, t.latency_s});
      fabric_links_.push_back(LocalLink{LinkKind::Network, parent, self, t.up_Bps, t.latency_s});
    }
  }
}

int Topology::switch_of(int tier, int node, int nic) const {
  const int group = node / tiers_[static_cast<size_t>(tier)].span_nodes;
  return tier == 0 && cluster_.fabric.rail_optimized ? group * nics_ + nic : group;
}

DeviceId Topology::endpoint(int node, DeviceId local, const LocalLink& k) const {
  if (local == kDomainSwitch) return domain_switch(node);
  if (local != kNone) return static_cast<DeviceId>(node) * vertices_per_node_ + local;
  if (tiers_.empty()) return fabric_;
  const int nic = static_cast<int>((k.from == kNone ? k.to : k.from) - local_nic0_);  // a NIC's uplink or downlink
  return tiers_[0].first_vertex + static_cast<DeviceId>(switch_of(0, node, nic));
}

double Topology::append_fabric_hops(int src_gpu, int dst_gpu, std::vector<LinkId>& out) const {
  const int a = src_gpu / gpus_per_node(), b = dst_gpu / gpus_per_node();
  if (tiers_.empty() || a == b || (domain_nodes_ > 1 && a / domain_nodes_ == b / domain_nodes_)) return 0;
  return fabric_hops(a, nic_of_gpu(src_gpu % gpus_per_node()), b, nic_of_gpu(dst_gpu % gpus_per_node()), out);
}

double Topology::fabric_hops(int node_a, int nic_a, int node_b, int nic_b, std::vector<LinkId>& out) const {
  // Climb from both leaves until the two ends share a switch (or reach the core), then descend.
  double latency_s = 0;
  LinkId down[16];
  size_t downs = 0;
  for (size_t k = 0; k < tiers_.size(); ++k) {
    const int sa = switch_of(static_cast<int>(k), node_a, nic_a), sb = switch_of(static_cast<int>(k), node_b, nic_b);
    if (sa == sb) break;
    out.push_back(tiers_[k].first_link + 2 * static_cast<LinkId>(sa));
    down[downs++] = tiers_[k].first_link + 2 * static_cast<LinkId>(sb) + 1;
    latency_s += 2 * tiers_[k].latency_s;
  }
  while (downs > 0) out.push_back(down[--downs]);
  return latency_s;
}

Topology::~Topology() = default;

DeviceId Topology::add_vertex(VertexKind kind, int index, std::string name) {
  local_vertices_.push_back(VertexInfo{kind, 0, index, std::move(name)});
  return static_cast<DeviceId>(local_vertices_.size() - 1);
}

void Topology::add_link(LinkKind kind, DeviceId a, DeviceId b, double ab_Bps, double ba_Bps, double latency_s) {
  local_links_.push_back(LocalLink{kind, a, b, ab_Bps, latency_s});
  local_links_.push_back(LocalLink{kind, b, a, ba_Bps, latency_s});
}

TopologyGraph topology_graph(const Topology& topo) {
  TopologyGraph g;
  for (DeviceId v = 0; v < topo.vertex_count(); ++v) boost::add_vertex(topo.vertex(v), g);
  for (LinkId l = 0; l < topo.link_count(); ++l) {
    const LinkInfo info = topo.link(l);
    boost::add_edge(info.from, info.to, EdgeInfo{l}, g);
  }
  return g;
}

void Topology::compute_node_routes() {
  // Node 0's own links (no fabric) as a small weighted graph. Weight = 1 per hop, plus a term
  // for narrow links (bw_min / bw, so that NVLink wins over PCIe peer-to-peer between GPUs on one
  // switch), plus a smaller one for latency; each is scaled so that a whole path's sum stays
  // below one unit of the criterion before it: fewest hops, then widest links, then latency.
  struct W {
    double weight;
    LinkId link;
  };
  using Local = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, W>;
  // The domain's NVSwitch, when GPUs link to one, is vertex V of the node's graph.
  const uint32_t V = route_dim_ = vertices_per_node_ + (domain_nodes_ > 1 ? 1 : 0);
  auto local_index = [&](DeviceId v) { return v == kDomainSwitch ? vertices_per_node_ : v; };
  double max_latency_s = 0, min_Bps = std::numeric_limits<double>::infinity();
  for (const LocalLink& k : local_links_) {
    max_latency_s = std::max(max_latency_s, k.latency_s);
    min_Bps = std::min(min_Bps, k.bandwidth_Bps);
  }
  const double width_scale = 1.0 / (V + 1);
  const double latency_scale = max_latency_s > 0 ? width_scale * 1e-6 / (max_latency_s * (V + 1)) : 0.0;
  Local g(V);
  for (uint32_t l = 0; l < links_per_node_; ++l) {
    const LocalLink& k = local_links_[l];
    if (k.kind == LinkKind::Network) continue;
    const double w = 1.0 + width_scale * (min_Bps / k.bandwidth_Bps) + latency_scale * k.latency_s;
    boost::add_edge(local_index(k.from), local_index(k.to), W{w, l}, g);
  }
  local_routes_.assign(static_cast<size_t>(V) * V, LocalRoute{});
  std::vector<Local::vertex_descriptor> pred(V);
  std::vector<double> dist(V);
  std::vector<LinkId> path;
  for (uint32_t s = 0; s < V; ++s) {
    boost::dijkstra_shortest_paths(
        g, s,
        boost::predecessor_map(boost::make_iterator_property_map(pred.begin(), boost::get(boost::vertex_index, g)))
            .distance_map(boost::make_iterator_property_map(dist.begin(), boost::get(boost::vertex_index, g)))
            .weight_map(boost::get(&W::weight, g)));
    for (uint32_t d = 0; d < V; ++d) {
      LocalRoute& r = local_routes_[static_cast<size_t>(s) * V + d];
      if (d == s) {
        r.reachable = true;
        continue;
      }
      if (pred[d] == d) continue;  // unreachable
      path.clear();
      for (uint32_t v = d; v != s; v = static_cast<uint32_t>(pred[v])) {
        // The cheapest edge pred[v] -> v (parallel edges do not occur, but be exact anyway).
        LinkId best = kNone;
        double best_w = 0;
        for (auto [e, end] = boost::out_edges(pred[v], g); e != end; ++e) {
          if (boost::target(*e, g) != v) continue;
          if (best == kNone || g[*e].weight < best_w) best = g[*e].link, best_w = g[*e].weight;
        }
        path.push_back(best);
      }
      std::reverse(path.begin(), path.end());
      r.begin = static_cast<uint32_t>(local_route_links_.size());
      r.count = static_cast<uint32_t>(path.size());
      for (LinkId l : path) r.latency_s += local_links_[l].latency_s;
      r.reachable = true;
      local_route_links_.insert(local_route_links_.end(), path.begin(), path.end());
    }
  }
}

DeviceId Topology::check_vertex(DeviceId v) const {
  if (v >= vertex_count())
    throw SpecError("topology: device " + std::to_string(v) + " does not exist (the graph has " +
                    std::to_string(vertex_count()) + " vertices)");
  return v;
}

LinkId Topology::check_link(LinkId l) const {
  if (l >= link_count())
    throw SpecError("topology: link " + std::to_string(l) + " does not exist (there are " +
                    std::to_string(link_count()) + " links)");
  return l;
}

VertexInfo Topology::vertex(DeviceId v) const {
  check_vertex(v);
  if (v == fabric_) return VertexInfo{VertexKind::Fabric, -1, 0, "fabric"};
  if (v >= node_vertices_) {
    if (first_domain_ != kNone && v >= first_domain_ && (tiers_.empty() || v < tiers_[0].first_vertex)) {
      const int d = static_cast<int>(v - first_domain_);
      return VertexInfo{VertexKind::NvSwitch, -1, d, "nvl" + std::to_string(d) + ".nvswitch"};
    }
    for (size_t k = tiers_.size(); k-- > 0;) {
      if (v < tiers_[k].first_vertex) continue;
      const int i = static_cast<int>(v - tiers_[k].first_vertex);
      std::string name = "t" + std::to_string(k) + ".sw";
      if (k == 0 && cluster_.fabric.rail_optimized) name += std::to_string(i / nics_) + ".rail" + std::to_string(i % nics_);
      else name += std::to_string(i);
      return VertexInfo{VertexKind::FabricSwitch, -1, static_cast<int>(k), name};
    }
  }
  const int node = static_cast<int>(v / vertices_per_node_);
  VertexInfo info = local_vertices_[v % vertices_per_node_];
  info.node = node;
  info.name = "n" + std::to_string(node) + "." + info.name;
  return info;
}

LinkInfo Topology::link(LinkId l) const {
  const LocalLink& k = link_data(l);
  const int node = static_cast<int>(l / links_per_node_);
  LinkInfo info{k.kind, k.from, k.to, k.bandwidth_Bps, k.latency_s, {}};
  if (l < node_links_) info.from = endpoint(node, k.from, k), info.to = endpoint(node, k.to, k);
  info.name = vertex(info.from).name + "->" + vertex(info.to).name;
  return info;
}

int Topology::gpu_index(DeviceId v) const {
  if (v >= node_vertices_) return -1;
  const DeviceId local = v % vertices_per_node_;
  if (local >= static_cast<DeviceId>(gpus_per_node())) return -1;  // GPUs come first in a node
  return static_cast<int>(v / vertices_per_node_) * gpus_per_node() + static_cast<int>(local);
}

DeviceId Topology::gpu(int global_gpu) const {
  if (global_gpu < 0 || global_gpu >= total_gpus())
    throw SpecError("GPU " + std::to_string(global_gpu) + " does not exist (the cluster has " +
                    std::to_string(total_gpus()) + " GPUs)");
  const int k = global_gpu / gpus_per_node(), g = global_gpu % gpus_per_node();
  return static_cast<DeviceId>(k) * vertices_per_node_ + static_cast<DeviceId>(g);
}

namespace {
void check_node(int node, int nodes) {
  if (node < 0 || node >= nodes)
    throw SpecError("node " + std::to_string(node) + " does not exist (the cluster has " + std::to_string(nodes) +
                    " nodes)");
}
}  // namespace

DeviceId Topology::host(int node) const {
  check_node(node, nodes());
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_dram_;
}

DeviceId Topology::host_cpu(int node) const {
  check_node(node, nodes());
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_cpu_;
}

DeviceId Topology::nvme(int node) const {
  check_node(node, nodes());
  if (local_nvme_ == kNone) throw SpecError("node " + std::to_string(node) + " has no NVMe in its hwprofile");
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_nvme_;
}

DeviceId Topology::pcie_switch(int node, int index) const {
  check_node(node, nodes());
  if (index < 0 || index >= switches_)
    throw SpecError("PCIe switch " + std::to_string(index) + " does not exist (a node has " +
                    std::to_string(switches_) + ")");
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_switch0_ + static_cast<DeviceId>(index);
}

DeviceId Topology::nic(int node, int index) const {
  check_node(node, nodes());
  if (index < 0 || index >= nics_)
    throw SpecError("NIC " + std::to_string(index) + " does not exist (a node has " + std::to_string(nics_) + ")");
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_nic0_ + static_cast<DeviceId>(index);
}

DeviceId Topology::nvswitch(int node) const {
  check_node(node, nodes());
  if (domain_nodes_ > 1) return domain_switch(node);
  if (local_nvswitch_ == kNone) throw SpecError("node " + std::to_string(node) + " has no NVSwitch");
  return static_cast<DeviceId>(node) * vertices_per_node_ + local_nvswitch_;
}

int Topology::nic_of_gpu(int local_gpu) const {
  if (nics_ == 0) return -1;
  return static_cast<int>(static_cast<int64_t>(local_gpu) * nics_ / gpus_per_node());
}

DeviceId Topology::local_nic_for(DeviceId local) const {
  const VertexInfo& info = local_vertices_[local];
  if (info.kind == VertexKind::Nic) return local;
  if (info.kind == VertexKind::Gpu) return local_nic0_ + static_cast<DeviceId>(nic_of_gpu(info.index));
  return local_nic0_;  // host, NVMe, switches: the node's first NIC
}

LinkId Topology::find_link(DeviceId from, DeviceId to) const {
  check_vertex(from);
  check_vertex(to);
  // A link with an end inside a node is in that node's block; the others join fabric switches.
  const int node = from < node_vertices_ ? node_of(from) : to < node_vertices_ ? node_of(to) : -1;
  for (LinkId l = 0; l < links_per_node_ && node >= 0; ++l) {
    const LocalLink& k = local_links_[l];
    if (endpoint(node, k.from, k) == from && endpoint(node, k.to, k) == to)
      return static_cast<LinkId>(node) * links_per_node_ + l;
  }
  for (size_t i = 0; i < fabric_links_.size() && node < 0; ++i)
    if (fabric_links_[i].from == from && fabric_links_[i].to == to) return static_cast<LinkId>(node_links_ + i);
  throw SpecError("topology: no link " + vertex(from).name + " -> " + vertex(to).name);
}

Route Topology::route(DeviceId src, DeviceId dst) const {
  Route r;
  r.latency_s = append_route(src, dst, r.links);
  return r;
}

double Topology::append_route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const {
  check_vertex(src);
  check_vertex(dst);
  if (src >= node_vertices_ || dst >= node_vertices_)
    throw SpecError("topology: a switch of the fabric or of an NVLink domain is not an endpoint (route " +
                    vertex(src).name + " -> " + vertex(dst).name + ")");
  const uint32_t V = vertices_per_node_;
  auto local_leg = [&](int node, DeviceId ls, DeviceId ld) {
    const LocalRoute& r = local_routes_[static_cast<size_t>(ls) * route_dim_ + ld];
    if (!r.reachable)
      throw SpecError("topology: no route " + vertex(global_vertex(node, ls)).name + " -> " +
                      vertex(global_vertex(node, ld)).name);
    const LinkId shift = static_cast<LinkId>(node) * links_per_node_;
    for (uint32_t i = 0; i < r.count; ++i) out.push_back(local_route_links_[r.begin + i] + shift);
    return r.latency_s;
  };
  struct End {
    int node;
    DeviceId local;
  };
  const End a{static_cast<int>(src / V), src % V}, b{static_cast<int>(dst / V), dst % V};
  const DeviceId ls = a.local, ld = b.local;
  if (a.node == b.node) return local_leg(a.node, ls, ld);
  const auto gpus = static_cast<DeviceId>(gpus_per_node());
  if (domain_nodes_ > 1 && a.node / domain_nodes_ == b.node / domain_nodes_ && ls < gpus && ld < gpus)
    return local_leg(a.node, ls, V) + local_leg(b.node, V, ld);  // GPU -> domain NVSwitch -> GPU
  const DeviceId nic_a = local_nic_for(ls), nic_b = local_nic_for(ld);
  double latency_s = local_leg(a.node, ls, nic_a);
  const LinkId up = nic_uplink_[nic_a - local_nic0_] + static_cast<LinkId>(a.node) * links_per_node_;
  const LinkId down = nic_uplink_[nic_b - local_nic0_] + 1 + static_cast<LinkId>(b.node) * links_per_node_;
  out.push_back(up);
  latency_s += local_links_[up % links_per_node_].latency_s;
  if (!tiers_.empty())
    latency_s += fabric_hops(a.node, static_cast<int>(nic_a - local_nic0_), b.node, static_cast<int>(nic_b - local_nic0_), out);
  out.push_back(down);
  latency_s += local_links_[down % links_per_node_].latency_s;
  latency_s += local_leg(b.node, nic_b, ld);
  return latency_s;
}

}  // namespace starfish::des
