#pragma once
// Hardware value types: a node (GPUs, host, NVMe, PCIe, NVLink, NICs) and a cluster of nodes.
// All bandwidths are per direction, in bytes/s; latencies in seconds.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/spec/dtype.h"
#include "sim/spec/provenance.h"

namespace starfish {

// Achieved fraction of peak FLOP/s as a function of an operation's FLOP count, piecewise linear
// in log10(FLOP), clamped at both ends. Fit from measured GEMM throughput (see the hwprofile's
// comment for its source), never one constant for every size.
struct EfficiencyCurve {
  std::vector<std::pair<double, double>> points;  // (flop, fraction of peak), flop ascending
  double at(double flop) const;
  bool operator==(const EfficiencyCurve&) const = default;
};

// The fraction of peak a fused attention kernel reaches at best, by generation and pass, as
// measured on the GPU (0: not measured; the kernel is then costed at the GEMM curve alone). The
// backward pass has its own figure: it recomputes the scores and reduces dQ across key blocks,
// and reaches less of peak than the forward (FlashAttention-2 paper: 73% forward, 63%
// backward on A100); a backward left 0 takes the forward's.
struct AttentionEfficiency {
  double flash1 = 0;  // FlashAttention (v1) and its Triton port, forward
  double flash2 = 0;  // FlashAttention-2 class (FA2, cuDNN / TransformerEngine fused attention), forward
  double flash1_backward = 0;
  double flash2_backward = 0;
  double forward(bool v1) const { return v1 ? flash1 : flash2; }
  double backward(bool v1) const {
    const double b = v1 ? flash1_backward : flash2_backward;
    return b > 0 ? b : forward(v1);
  }
  bool operator==(const AttentionEfficiency&) const = default;
};

// GPU memory NCCL allocates for one communicator a rank joins (its ring and tree buffers for
// every channel, outside PyTorch's allocator), as measured on the GPU: a 2-rank communicator
// (point-to-point peers, 2-rank groups) and a larger group. 0 and 0: not measured; the profile's
// `reserved` then has to cover NCCL as a whole.
struct NcclCommunicatorBytes {
  int64_t pair = 0;
  int64_t group = 0;
  bool operator==(const NcclCommunicatorBytes&) const = default;
};

// Time per element of the non-GEMM kernels whose arithmetic, not their memory traffic, bounds
// them on this device, forward and backward, as measured at the executor's own shapes
// (exec/bench/op_profile). On a CPU core GELU's vectorised tanh, softmax's exp and LayerNorm's
// reductions cost more per element than streaming its bytes; on a GPU they do not, and every
// field stays 0 (memory-bound only). A kernel takes the longer of its memory time and this.
struct PassTime {
  double forward_s = 0;
  double backward_s = 0;
  bool operator==(const PassTime&) const = default;
};
struct ElementwiseTimes {
  PassTime norm;        // per element of the normalised hidden state
  PassTime activation;  // per element of the MLP's hidden (GELU / SwiGLU)
  PassTime softmax;     // per attention score: the scale, the causal mask and the softmax
  PassTime residual;    // per element of the hidden state added
  PassTime loss;        // per logit: softmax cross-entropy
  PassTime head_copy;   // per element of the attention heads' layout copies (FrameworkTraits)
  PassTime bias;        // per output element of a linear layer: the bias copied in, its gradient summed
  bool any() const { return !(*this == ElementwiseTimes{}); }
  bool operator==(const ElementwiseTimes&) const = default;
};

struct GpuSpec {
  std::string name;
  int64_t memory_bytes = 0;
  int64_t reserved_bytes = 0;       // CUDA context (and NCCL when nccl_communicator is not given)
  NcclCommunicatorBytes nccl_communicator;
  double hbm_bandwidth_Bps = 0;
  double hbm_efficiency = 0.85;     // achieved fraction of hbm_bandwidth for streaming kernels
  std::map<DType, double> peak_flops;  // dense peak per dtype
  // Dense peaks of the block-scaled tensor-core formats, 0 where the GPU has none: MXFP8 (E4M3/E5M2
  // with an E8M0 scale per 32 elements) and NVFP4 (E2M1 with an E4M3 scale per 16). Blackwell runs
  // them in hardware (PTX ISA: tcgen05.mma .kind::mxf8f6f4 and .kind::mxf4nvf4); Hopper does not.
  double mxfp8_peak_flops = 0;
  double fp4_peak_flops = 0;
  EfficiencyCurve matmul_efficiency;
  AttentionEfficiency attention_efficiency;
  ElementwiseTimes elementwise;     // all 0 on GPUs: their element-wise kernels are memory-bound
  int copy_engines = 2;
  double tdp_watts = 0;             // board power limit (datasheet); 0 = unknown (no energy estimate)
  double peak(DType t) const;       // throws SpecError when the dtype is not supported
  bool operator==(const GpuSpec&) const = default;
};

struct HostSpec {
  int64_t memory_bytes = 0;
  int64_t reserved_bytes = 0;       // OS, framework, pinned staging: not for model states
  double memory_bandwidth_Bps = 0;
  int cpu_cores = 1;
  double cpu_adam_params_per_s = 0; // measured CPU Adam throughput of the whole host
  // Host time an eager framework spends per op it dispatches (LibTorch: argument checks, the
  // dispatcher, output allocation), and per op of a backward pass (autograd's engine and nodes
  // besides), measured (exec/bench/op_dispatch). Set for a CPU host whose "GPU" is the CPU
  // itself, where dispatch and arithmetic run one after the other on the same cores
  // (sim/cost/dispatch.h); 0 elsewhere (on a GPU, launches overlap the kernels of earlier ops).
  double op_dispatch_s = 0;
  double backward_op_dispatch_s = 0;
  bool operator==(const HostSpec&) const = default;
};

struct NvmeSpec {
  int64_t capacity_bytes = 0;
  double read_Bps = 0;
  double write_Bps = 0;
  double latency_s = 0;
  bool operator==(const NvmeSpec&) const = default;
};

struct PcieSpec {
  int generation = 4;
  int lanes = 16;
  double efficiency = 0.8;   // achieved fraction of the raw rate (TLP/DLLP overhead), per direction
  double latency_s = 1e-6;
  int gpus_per_root = 1;     // GPUs sharing one host link (a PCIe switch or root port)
  double raw_Bps() const;    // per direction, after line encoding
  double bandwidth_Bps() const { return raw_Bps() * efficiency; }
  bool operator==(const PcieSpec&) const = default;
};

// How a node's GPUs are wired to each other (NVLink, or AMD's Infinity Fabric / xGMI links,
// which play the same part and take the same section of a hwprofile):
//   switched: every GPU's links go to an NVSwitch, so any pair talks at the GPU's full rate;
//   ring:     each GPU has direct links to its two neighbours (2 GPUs: one link between them);
//   mesh:     each GPU has one direct link to every other GPU of the node (AMD MI300X: 8 GPUs,
//             7 xGMI links each), bandwidth / (gpus - 1) per pair.
enum class NvlinkTopology : uint8_t { switched, ring, mesh };
const char* to_string(NvlinkTopology t);

struct NvlinkSpec {
  double bandwidth_Bps = 0;  // rated, per GPU, per direction (a mesh or ring: over all its links)
  double latency_s = 0;
  NvlinkTopology topology = NvlinkTopology::switched;
  double efficiency = 1.0;   // achieved fraction of the rated rate (NCCL's protocol overhead)
  // Nodes whose GPUs share one NVSwitch domain (switched only): 1 = the node's own NVSwitch;
  // GB200 NVL72: 18 trays of 4 GPUs, 72 GPUs on one NVLink switch system. Consecutive nodes
  // form a domain (nodes 0..domain_nodes-1, then the next); GPUs of one domain talk over NVLink.
  int domain_nodes = 1;
  double achieved_Bps() const { return bandwidth_Bps * efficiency; }
  bool switched() const { return topology == NvlinkTopology::switched; }
  bool operator==(const NvlinkSpec&) const = default;
};

struct NicSpec {
  int count = 1;             // NICs per node
  double bandwidth_Bps = 0;  // rated, per NIC, per direction
  double latency_s = 0;
  double efficiency = 1.0;   // achieved fraction of the rated rate (encoding, headers)
  double achieved_Bps() const { return bandwidth_Bps * efficiency; }
  bool operator==(const NicSpec&) const = default;
};

// The network between the nodes' NICs. Without tiers: one non-blocking switch. With tiers: a
// fat tree, tier 0 the leaf switches; a tier-k switch spans `nodes` consecutive nodes (a
// multiple of the tier below's) and its uplink carries the bandwidth coming into it from below
// divided by `oversubscription` (the ratio of its downlink to uplink ports); above the last tier
// is a non-blocking core. Rail-optimised: NIC j of every node sits on rail j's leaf switch (one
// per rail per leaf span), so same-rail traffic between nodes under one leaf stays on that rail;
// tiers above the leaves join all rails.
struct FabricTier {
  int nodes = 1;                // nodes under one switch of this tier
  double oversubscription = 1;  // downlink : uplink bandwidth of one switch
  double latency_s = 0;         // one hop up to (or down from) the tier above
  bool operator==(const FabricTier&) const = default;
};

struct FabricSpec {
  bool rail_optimized = false;
  std::vector<FabricTier> tiers;  // leaf first; empty: one non-blocking switch
  bool operator==(const FabricSpec&) const = default;
};

struct NodeSpec {
  std::string name;
  GpuSpec gpu;
  int gpus = 1;
  HostSpec host;
  std::optional<NvmeSpec> nvme;
  PcieSpec pcie;
  std::optional<NvlinkSpec> nvlink;  // absent: GPUs talk over PCIe through the host
  std::optional<NicSpec> nic;        // absent: a single node only
  double power_watts = 0;            // the whole node's maximum (GPUs, CPUs, NICs, fans); 0 = unknown
  bool operator==(const NodeSpec&) const = default;
};

struct Cluster {
  std::string name;
  std::string description;
  NodeSpec node;
  int nodes = 1;
  FabricSpec fabric;
  double price_per_gpu_hour = 0;     // 0 = unknown
  Provenance provenance;

  int total_gpus() const { return nodes * node.gpus; }
  // GPUs that reach each other over NVLink: a node's, or an NVLink domain's spanning several
  // nodes (GB200 NVL72: 72). TP and EP groups of at most this many consecutive GPUs, aligned to
  // it, stay on NVLink. 1 without NVLink.
  int nvlink_domain_gpus() const;
  // GPUs that reach each other without a NIC, aligned to it: the NVLink domain's (NVL72: 72), else
  // the node's (NVLink, xGMI or PCIe). A group within it talks over those links in both tiers; a
  // group across several pays the NICs between them.
  int local_gpus() const;
  bool over_nics(int gpu_a, int gpu_b) const { return gpu_a / local_gpus() != gpu_b / local_gpus(); }
  // The most one GPU sends to the other GPUs of its node at once, per direction: its whole
  // NVLink (over all its links, achieved), else PCIe through the host (shared by the GPUs behind
  // one root).
  double intra_node_bandwidth_Bps() const;
  // Per direction, what each of `members` GPUs of one node, `stride` apart, gets for traffic
  // among them when every group of that shape runs at once: a collective's rings (NCCL and RCCL
  // spread a collective over channels, rings over different links) or, with 2 members, a send
  // to one peer. NVSwitch: intra_node_bandwidth_Bps whatever the group. Mesh: the members - 1
  // links it has to the others, each bandwidth / (gpus - 1). Ring: both its links when the
  // group is the whole ring (rings run both ways round), else one of them, half (2 GPUs: their
  // one link, whole). PCIe: each GPU's own link, whole, unless the groups' rings leave the PCIe
  // switch: then each crosses its uplink once a direction, shared by the concurrent groups
  // behind it (pcie_uplink_sharers). des/collective.cpp runs the same rings on the event-driven
  // topology.
  double intra_node_group_bandwidth_Bps(int members, int stride = 1) const;
  // PCIe without NVLink: how many concurrent groups of `members` GPUs `stride` apart (every
  // group of that shape on the node, as a parallel dimension's groups run together) cross one
  // PCIe switch's uplink, each once a direction in ring order; 1 when a group stays behind one
  // switch (its ring never climbs). A switch holds min(gpus_per_root / stride, members) members
  // of a group, so min(stride, gpus_per_root) groups share it.
  int pcie_uplink_sharers(int members, int stride) const;
  // PCIe without NVLink: how many members of a group of `members` GPUs `stride` apart one switch
  // holds, and whether the group has members behind more than one switch, so that its ring
  // climbs the uplinks host copies and other groups use.
  int pcie_members_per_switch(int members, int stride) const;
  bool pcie_group_leaves_switch(int members, int stride) const { return pcie_members_per_switch(members, stride) < members; }
  // PCIe without NVLink: the GPUs of a stage (`stage_gpus`) behind one switch, which all send to
  // their peers of the next stage at once, sharing its uplink when the pair crosses it.
  int pcie_senders_per_switch(int stage_gpus) const;
  double intra_node_latency_s() const;
  // Inter-node bandwidth available to one GPU, per direction, when every GPU of the node sends
  // at once: the node's NICs shared by its GPUs, and the PCIe path to them (GPUDirect RDMA: the
  // GPU's own link, then its NIC's, which the GPUs sharing that NIC take turns on; the
  // event-driven topology's Pcie and NicPcie links). NVLink plays no part. 0 without NICs.
  double inter_node_bandwidth_per_gpu_Bps() const;
  // One direct message between GPUs on two nodes: the NIC's latency and, on both ends, the PCIe
  // path from the GPU through its switch to the NIC (GPUDirect RDMA), the route the event-driven
  // tier's topology gives it (sim/des/topology.cpp; fabric tiers add their own hops there). An
  // all-to-all's peers exchange so, and a ring across nodes pays it at every step.
  double inter_node_message_latency_s() const;
  bool operator==(const Cluster&) const = default;
};

}  // namespace starfish
