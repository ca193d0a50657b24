#pragma once
// Context parallelism as Megatron-core runs it: TransformerEngine's ring attention
// (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
// AttnFuncWithCPAndKVP2P; Megatron's default --cp-comm-type p2p). Each of the CP ranks of a
// sequence holds seq_len / cp of its tokens (two load-balanced chunks of 2 x CP, job.cpp), computes
// their Q, K and V, and passes K and V around the ring: in each of cp steps it runs one block of
// attention (op_time.cpp: every block the same work) with the keys it holds while sending them to
// the next rank and receiving the previous rank's, so each send hides behind a block.
//
//   forward:  cp blocks; the first cp - 1 also send K, V (one chunk pair: `kv_block_bytes`).
//   backward: cp blocks; block 0 sends K, V; blocks 1 .. cp-2 send K, V and the dK, dV
//             accumulated so far (twice the bytes); block cp-1 sends dK, dV home.
//
// A step lasts as long as the longer of its block and its send, so what shows beyond the
// attention's own compute is, per step, max(0, send - block). Full recomputation reruns the
// forward, ring included. Every tier takes the ring from here.
#include <cstdint>
#include <vector>

#include "sim/cost/collectives.h"
#include "sim/cost/op_time.h"
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

// K and V of one CP rank's tokens for this TP rank's key/value heads, one micro-batch:
// micro_batch x seq_len / cp x (k_dim + v_dim) / tp x act_bytes (MLA: its heads' up-projected keys
// and values, which TransformerEngine's ring passes as any other attention's).
double cp_kv_block_bytes(const Model& model, const Plan& plan, int64_t act_bytes);

// The link a CP rank's sends use: NVLink when the whole group is on one node, else the GPU's
// share of the NICs (every TP rank of the group sends at once, each over its own share). CP ranks
// are TP apart in the rank order (Job::global_rank).
LinkParams cp_ring_link(const Cluster& cluster, const Plan& plan);

// One pass of the ring for one layer and micro-batch: its steps' blocks and sends.
struct CpRingPass {
  double block_s = 0;                 // one block of attention compute
  std::vector<double> send_bytes;     // each step's send, in step order (a step may send nothing)
  double exposed_s(const LinkParams& link) const;  // sum over steps of max(0, send - block)
};

// The forward and backward passes of a layer whose attention core takes `layer.core_forward_s` /
// `core_backward_s` (op_time.h: already the cp blocks together). Empty passes for cp = 1.
struct CpRing {
  CpRingPass forward, backward;
  LinkParams link;
  // Exposed time per layer and micro-batch: forward, and everything of the layer (forward,
  // backward, and the forward again under full recomputation).
  double forward_exposed_s = 0;
  double layer_exposed_s = 0;
};
CpRing cp_ring(const Cluster& cluster, const Model& model, const Plan& plan, int64_t act_bytes, const LayerTime& layer);

}  // namespace starfish
