#pragma once
// The cluster as a graph of devices and directed links, built from a Cluster (as a Boost graph:
// topology_graph.h; this header does not pull Boost in).
//
// Per node (local vertex order, the same on every node):
//   GPUs, PCIe switches (one per PcieSpec::gpus_per_root GPUs), the host CPU (root complex),
//   host memory (DRAM), NVMe (when present), an NVSwitch (when NVLink is switched), NICs.
// One fabric vertex (a non-blocking switch) joins the NICs of all nodes when nodes > 1; with
// Cluster::fabric tiers, a fat tree of switches sits between the NICs and that core (below).
// With an NVLink domain over several nodes (NvlinkSpec::domain_nodes), the GPUs of a domain's
// nodes link to one domain NVSwitch instead of their node's.
//
// Every physical link is two directed links (full duplex), with consecutive ids. Latencies are
// split over a route's hops so that the usual end-to-end numbers come out:
//   GPU -> host memory          = pcie.latency_s   (GPU-switch and switch-host each half)
//   GPU -> GPU over NVSwitch    = nvlink.latency_s (GPU-NVSwitch and NVSwitch-GPU each half)
//   GPU -> GPU over PCIe        = 2 * pcie.latency_s through the host, 1x behind one switch
//   GPU -> GPU on another node  = 2 * pcie.latency_s (GPU -> switch -> NIC on each side)
//                                 + nic.latency_s (NIC -> fabric -> NIC)
// Bandwidths: each GPU has its own x16 link to its switch; the GPUs behind one switch share its
// one x16 uplink to the host; host memory is a link of host.memory_bandwidth_Bps (per direction,
// a simplification: DRAM reads and writes really share one budget); NVMe reads are the
// NVMe->host direction at read_Bps, writes host->NVMe at write_Bps; NVLink without a switch is a
// direct link for 2 GPUs, else a ring of direct links (each GPU's bandwidth split over its two
// neighbours; traffic to non-neighbours is forwarded, as NCCL does) or a mesh (nvlink.topology:
// mesh, AMD MI300X's xGMI: a direct link between every pair, each the GPU's bandwidth / (gpus - 1),
// gpus * (gpus - 1) / 2 links, latency nvlink.latency_s); NIC j sits on PCIe switch
// j * switches / nics and GPU g uses NIC g * nics / gpus (DGX A100: GPU g and NIC g share switch
// g/2), through which all its inter-node traffic goes.
//
// Fat tree (Cluster::fabric): a NIC's uplink goes to its leaf switch (rail-optimised: rail j's
// leaf for NIC j) instead of the core; each tier's switch has one uplink to the tier above (the
// last tier's to the core) whose bandwidth is what comes into the switch from below divided by
// the tier's oversubscription (many parallel uplinks, ECMP-balanced, as one link). A route
// between nodes climbs from the source NIC's leaf until the two ends share a switch, then
// descends; same-rail traffic between nodes under one leaf never leaves that rail's leaf.
// NVLink domain: GPU -> domain NVSwitch -> GPU for GPUs on different nodes of one domain
// (nvlink.latency, as inside a node); other traffic between nodes goes through the NICs.
//
// Routes: within a node, shortest paths by fewest hops, then widest links (least sum of
// 1/bandwidth: NVLink before PCIe peer-to-peer), then least latency (Dijkstra over the
// node's links, computed once for node 0 and shifted: all nodes are identical); across nodes,
// source -> its NIC -> fabric -> destination's NIC -> destination. The Topology is immutable
// after construction and safe to share between threads.
//
// Size: only one node is stored (its devices, links and routes); every other node's ids are
// that node's shifted by node * vertices_per_node (devices) or node * links_per_node (links),
// and names are made when asked for. Building a 131,072-GPU cluster costs what one node does;
// the Boost graph of the whole cluster is built only if topology_graph() is called.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/spec/hardware.h"

namespace starfish::des {

using DeviceId = uint32_t;  // a vertex of the topology graph
using LinkId = uint32_t;    // a directed link (an edge of the graph)
inline constexpr uint32_t kNone = 0xffffffffu;

enum class VertexKind : uint8_t { Gpu, PcieSwitch, HostCpu, HostMemory, Nvme, NvSwitch, Nic, Fabric, FabricSwitch };
enum class LinkKind : uint8_t { Pcie, PcieUplink, HostMemory, Nvme, Nvlink, NicPcie, Network };

const char* to_string(VertexKind k);
const char* to_string(LinkKind k);

struct VertexInfo {
  VertexKind kind = VertexKind::Gpu;
  int node = -1;   // -1 for the fabric, its switches and NVLink domain switches
  int index = 0;   // index among the node's vertices of this kind (GPU: local GPU index); a
                   // fabric switch: its tier; a domain NVSwitch: its domain
  // "n3.gpu5", "n0.pcie1", "n2.host", "n2.dram", "n1.nvme", "n0.nvswitch", "n4.nic7", "fabric",
  // "t1.sw12" (fat-tree tier 1, switch 12), "t0.sw3.rail5" (a rail-optimised leaf),
  // "nvl3.nvswitch" (NVLink domain 3)
  std::string name;
};

struct LinkInfo {
  LinkKind kind = LinkKind::Pcie;
  DeviceId from = 0, to = 0;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  std::string name;  // "n0.gpu1->n0.pcie0"
};

// A route: the directed links from source to destination, and their summed latency.
struct Route {
  std::vector<LinkId> links;
  double latency_s = 0;
};

class Topology {
 public:
  // Throws SpecError when the cluster cannot be modelled (no GPUs, a link without bandwidth,
  // several nodes but no NIC).
  explicit Topology(const Cluster& cluster);
  ~Topology();

  const Cluster& cluster() const { return cluster_; }
  int nodes() const { return cluster_.nodes; }
  int gpus_per_node() const { return cluster_.node.gpus; }
  int total_gpus() const { return cluster_.total_gpus(); }
  int pcie_switches_per_node() const { return switches_; }

  size_t vertex_count() const { return node_vertices_ + extra_vertices_; }
  size_t link_count() const { return node_links_ + fabric_links_.size(); }
  // Every link belongs to one node's block of links_per_node() ids (the fabric's NIC uplinks to
  // the node whose NIC it is, the downlinks to the receiving node): link l is local link
  // l % links_per_node() of node l / links_per_node(), and every node's block is node 0's shifted.
  // A fat tree's switch links come after all nodes' blocks (is_node_link false): they are
  // shared by the nodes under a switch.
  uint32_t links_per_node() const { return links_per_node_; }
  bool is_node_link(LinkId l) const { return l < node_links_; }
  bool has_fabric_tiers() const { return !tiers_.empty(); }
  // GPUs on NVLink with each other (Cluster::nvlink_domain_gpus): a node's, or a domain's.
  int nvlink_domain_gpus() const { return cluster_.nvlink_domain_gpus(); }
  // The fat tree's switch links the route between two GPUs crosses (its climb and descent;
  // nothing on one node or one NVLink domain, or without tiers), appended; returns their latency.
  double append_fabric_hops(int src_gpu, int dst_gpu, std::vector<LinkId>& out) const;
  // By value: names are made on demand (a cluster of 100K GPUs stores none).
  VertexInfo vertex(DeviceId v) const;
  LinkInfo link(LinkId l) const;
  // The same without the name (cheap; no allocation).
  LinkKind link_kind(LinkId l) const { return link_data(l).kind; }
  double link_bandwidth_Bps(LinkId l) const { return link_data(l).bandwidth_Bps; }
  double link_latency_s(LinkId l) const { return link_data(l).latency_s; }

  // Endpoints. Each throws SpecError naming the request when the device does not exist.
  DeviceId gpu(int global_gpu) const;
  DeviceId host(int node) const;  // host memory: where copies and NVMe reads land
  DeviceId host_cpu(int node) const;
  DeviceId nvme(int node) const;
  DeviceId pcie_switch(int node, int index) const;
  DeviceId nic(int node, int index) const;
  DeviceId nvswitch(int node) const;
  bool has_nvme() const { return local_nvme_ != kNone; }

  // A node-block vertex's node; -1 for the fabric's and NVLink domains' switches.
  int node_of(DeviceId v) const {
    return check_vertex(v) >= node_vertices_ ? -1 : static_cast<int>(v / vertices_per_node_);
  }
  DeviceId fabric_core() const { return fabric_; }  // the non-blocking core (kNone on one node)
  // Global GPU index, or -1 when v is not a GPU (or not a vertex).
  int gpu_index(DeviceId v) const;
  int nic_of_gpu(int local_gpu) const;  // the NIC a GPU's inter-node traffic uses
  int switch_of_gpu(int local_gpu) const { return local_gpu / gpus_per_root_; }

  // The directed link from -> to; throws SpecError when there is none.
  LinkId find_link(DeviceId from, DeviceId to) const;

  // The route src -> dst (empty when src == dst). Throws SpecError when there is none.
  Route route(DeviceId src, DeviceId dst) const;
  // Same, appending to `out`; returns the route's latency.
  double append_route(DeviceId src, DeviceId dst, std::vector<LinkId>& out) const;

 private:
  // A link of node 0; `to` may be the fabric (kNone: the NIC uplinks, to the core or the NIC's
  // leaf switch) or the NVLink domain's switch (kDomainSwitch). Fabric switch links (after the
  // nodes' blocks) use global vertex ids.
  struct LocalLink {
    LinkKind kind;
    DeviceId from, to;  // local vertex ids; kNone = the fabric
    double bandwidth_Bps, latency_s;
  };
  static constexpr DeviceId kDomainSwitch = kNone - 1;
  // A tier of the fat tree: switches, each spanning span_nodes nodes (a rail-optimised leaf
  // tier has one per rail per span).
  struct Tier {
    int span_nodes = 1, switches = 0;
    DeviceId first_vertex = 0;
    LinkId first_link = 0;  // switch i: up link first_link + 2i, down link + 1
    double up_Bps = 0, latency_s = 0;
  };
  const LocalLink& link_data(LinkId l) const {
    return check_link(l) < node_links_ ? local_links_[l % links_per_node_] : fabric_links_[l - node_links_];
  }
  DeviceId endpoint(int node, DeviceId local, const LocalLink& k) const;  // a local link's global end
  int switch_of(int tier, int node, int nic) const;  // a node's NIC's switch at a tier
  void add_node_vertices(bool nvswitch);            // node 0's block (the constructor's phases)
  void add_node_links(bool domain, bool nvswitch);
  void build_fabric_tiers();
  double fabric_hops(int node_a, int nic_a, int node_b, int nic_b, std::vector<LinkId>& out) const;
  DeviceId domain_switch(int node) const { return first_domain_ + static_cast<DeviceId>(node / domain_nodes_); }
  DeviceId add_vertex(VertexKind kind, int index, std::string name);
  void add_link(LinkKind kind, DeviceId a, DeviceId b, double ab_Bps, double ba_Bps, double latency_s);
  void compute_node_routes();
  DeviceId local_nic_for(DeviceId local) const;
  DeviceId check_vertex(DeviceId v) const;  // throws for a vertex that does not exist
  LinkId check_link(LinkId l) const;
  DeviceId global_vertex(int node, DeviceId local) const {
    if (local == kDomainSwitch) return domain_switch(node);
    return local == kNone ? fabric_ : static_cast<DeviceId>(node) * vertices_per_node_ + local;
  }

  Cluster cluster_;
  std::vector<VertexInfo> local_vertices_;  // node 0's, names without the "n0." prefix
  std::vector<LocalLink> local_links_;      // node 0's, in id order
  int switches_ = 0, gpus_per_root_ = 1, nics_ = 0;
  uint32_t vertices_per_node_ = 0, links_per_node_ = 0;
  size_t node_vertices_ = 0, node_links_ = 0;  // all nodes' blocks
  size_t extra_vertices_ = 0;                  // the core, domain switches, fat-tree switches
  DeviceId fabric_ = kNone;
  int domain_nodes_ = 1;                       // > 1: GPUs link to their domain's NVSwitch
  DeviceId first_domain_ = kNone;
  uint32_t route_dim_ = 0;                     // local route table side: vertices (+ domain switch)
  std::vector<Tier> tiers_;
  std::vector<LocalLink> fabric_links_;        // switch up/down links, global vertex ids
  // Local vertex indices (node 0) of the per-node devices.
  DeviceId local_switch0_ = kNone, local_cpu_ = kNone, local_dram_ = kNone, local_nvme_ = kNone;
  DeviceId local_nvswitch_ = kNone, local_nic0_ = kNone;
  // nic_uplink_[j]: local link id of NIC j -> fabric; the reverse is that id + 1.
  std::vector<LinkId> nic_uplink_;
  // Intra-node routes of node 0, all pairs: route_[src * V + dst] indexes route_links_.
  struct LocalRoute {
    uint32_t begin = 0, count = 0;
    double latency_s = 0;
    bool reachable = false;
  };
  std::vector<LocalRoute> local_routes_;
  std::vector<LinkId> local_route_links_;
};

}  // namespace starfish::des
