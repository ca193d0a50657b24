#pragma once
// Mixture-of-experts layers under expert parallelism, as Megatron-core runs them (megatron/core/
// transformer/moe: TopKRouter, MoEAlltoAllTokenDispatcher, GroupedMLP / TEGroupedMLP, SharedExpertMLP):
// per GPU and micro-batch, the router GEMM, the token dispatch and combine all-to-alls over the EP
// group, the grouped expert GEMMs at their real shape, the shared experts, the activations they
// keep and the buffers the dispatch holds. One home for these rules: both tiers ask here.
#include <vector>

#include "sim/cost/activations.h"
#include "sim/cost/memory.h"
#include "sim/cost/op_time.h"
#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

// What one GPU's share of an MoE layer is, for one micro-batch.
//  - Megatron-core requires sequence parallelism with TP for MoE, so each GPU routes the
//    s*b/(CP x TP) tokens of its sequence shard, top_k copies each.
//  - The routed copies of an EP x ETP block of ranks spread over the experts: each expert gets
//    tokens x top_k / experts of them on average (tokens of the whole block), each ETP rank
//    computing all of them on expert_ffn / ETP columns (the dispatcher all-gathers over ETP).
//  - The busiest rank sets the pace: the mean times the plan's load imbalance (busiest over
//    mean tokens per EP rank), at most capacity_factor x the mean when tokens are dropped.
struct MoeLayerShape {
  double tokens = 0;             // tokens this GPU routes
  double routed = 0;             // token copies it dispatches: tokens x top_k
  int local_experts = 0;         // experts / EP
  double tokens_per_expert = 0;  // rows of each local expert's GEMMs on the busiest rank
  double expert_ffn = 0;         // an expert's FFN columns on this GPU: expert_ffn_hidden / ETP
  double received = 0;           // token copies this GPU's experts compute: local_experts x tokens_per_expert
  double load = 1;               // busiest over mean: imbalance, capped by the capacity factor
};
MoeLayerShape moe_layer_shape(const Model& model, const Plan& plan);

// The MLP ops of an MoE layer, appended in forward order after its norm: router GEMM (replicated
// on every TP rank's token shard), router softmax/top-k, permute, grouped expert GEMMs and
// activation, unpermute with the routing weights, shared experts. All-to-alls are costed apart.
void append_moe_mlp_ops(std::vector<LayerOp>& ops, const GpuSpec& gpu, DType dtype, const Model& model,
                        const Plan& plan);

// Bytes of one token dispatch (or combine) all-to-all buffer on the busiest GPU: its routed
// copies x hidden x activation bytes. A layer runs 2 in forward (dispatch, combine) and 2 in
// backward, 2 more when full recomputation redoes the forward.
double moe_dispatch_bytes(const Model& model, const Plan& plan, int64_t act_bytes);
// Whether a recomputing MoE layer exchanges its tokens again: full recomputation reruns the
// checkpointed layer's forward, its dispatcher's all-to-alls included; selective recomputation's
// modules (moe_act, layernorm, ...) sit inside the experts or before the dispatch ('moe', the
// whole layer, is refused: job.cpp). Both tiers ask here.
inline bool recompute_reruns_token_exchange(const Plan& plan) { return plan.recompute == Recompute::full; }
// Time of one such all-to-all over the EP group, and of the ETP group's all-gather of the
// dispatched tokens (0 when ETP = 1).
double moe_all_to_all_time_s(const Cluster& cluster, const Model& model, const Plan& plan, int64_t act_bytes);
double moe_etp_gather_time_s(const Cluster& cluster, const Model& model, const Plan& plan, int64_t act_bytes);

// Activation bytes an MoE layer keeps for backward: the dense layer's (layer_activation_bytes)
// with the MLP intermediates replaced by the router's and the experts'.
double moe_layer_activation_bytes(const Model& model, const Plan& plan, const ActivationOptions& options);
// The dispatch's send and receive buffers, held while the experts compute.
double moe_dispatch_buffer_bytes(const Model& model, const Plan& plan, int64_t act_bytes);
// The most gradient bytes an MoE layer's backward holds at once beyond its saved tensors and
// the dispatch buffers above (activations.h layer_backward_transient_bytes, for the experts).
double moe_layer_backward_transient_bytes(const Model& model, const Plan& plan, const ActivationOptions& options);

// Forward FLOPs of an MoE layer's MLP for `tokens` tokens: router, top_k experts, shared experts
// (what each token computes: MFU counts these active FLOPs, as Megatron-Bridge does).
double moe_mlp_forward_flops(const Model& model, double tokens);

// The expert-data-parallel degree: the ranks of a stage (TP x DP) over EP x ETP. Expert
// gradients are reduced, and ZeRO shards expert states, over these ranks.
int expert_data_parallel(const Plan& plan);

// Parameters whose optimizer states one GPU steps, of `params` on the GPU of which
// `expert_params` are routed experts': ZeRO >= 1 shards the dense ones over DP and the experts'
// over expert DP.
double optimizer_params_per_gpu(const Plan& plan, double params, double expert_params);

// Time of the expert gradients' reduction over the expert-data-parallel group (members EP x ETP
// apart), `grad_bytes` per GPU: ZeRO-0 all-reduces once per iteration, ZeRO-1 reduce-scatters
// once, ZeRO-2 every micro-batch; ZeRO-1/2 then all-gather the updated params (`gather_bytes`),
// as the dense gradients over DP (sim/cost/estimate.cpp).
double moe_expert_reduce_time_s(const Cluster& cluster, const Plan& plan, double grad_bytes, double gather_bytes,
                                int64_t micro_batches);

// Model states of one GPU of pipeline stage `stage` holding `params` parameters: the dense ones
// sharded by ZeRO over DP, the stage's routed-expert ones over expert DP; with fp8 params
// (plan.fp8_params) the GEMM weights are kept as their fp8 copies, not in 16 bits
// (low_precision.h). `layer_params`: one layer's share on this GPU (ZeRO-3 / offload working
// buffers); `chunks`: a chunked plan's footprint.
ModelStates stage_model_states(const Model& model, const Training& training, const Plan& plan, int stage, double params,
                               double layer_params, const ChunkFootprint* chunks);

// MoE layers of pipeline stage `stage`.
int stage_moe_layers(const Model& model, const Plan& plan, int stage);
// Routed-expert parameters one GPU of pipeline stage `stage` holds.
double stage_expert_params(const Model& model, const Plan& plan, int stage);

}  // namespace starfish
