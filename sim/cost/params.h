#pragma once
// Parameter tensors and counts of a GPT-style model, whole or as one (TP rank, PP stage) shard.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/spec/model.h"
#include "sim/spec/plan.h"

namespace starfish {

enum class ParamRole { word_embedding, position_embedding, norm, attention_qkv, attention_out, mlp_in, mlp_out, output_head,
                       moe_router, expert_in, expert_out };

// The attention block's linear layers, per token (multiply-adds), as Megatron builds them: the
// one home of their shapes for parameters, FLOPs, op times and fp8 weights.
struct AttentionLinears {
  double replicated_in_macs = 0;  // MLA's down projections: whole on every TP rank
  double split_in_macs = 0;       // QKV, or MLA's up projections: split over TP by heads
  double out_macs = 0;            // the output projection (context x hidden), split over TP
  double latent_width = 0;        // MLA: q_lora + kv_lora + rope elements between down and up
};
AttentionLinears attention_linears(const Model& model);

struct ParamTensor {
  std::string name;   // "layers.3.attn.qkv.weight"
  int64_t elements = 0;
  int layer = -1;     // -1: embeddings; 0..L-1: a transformer layer; L: final norm and head
  ParamRole role = ParamRole::norm;
  bool tp_split = false;  // divided among tensor-parallel ranks (else replicated on each)
  // A routed-expert tensor (all experts of a layer in one): its experts are divided among the
  // expert-parallel ranks and each expert among the expert-TP ranks; its gradients are reduced
  // over the expert-data-parallel group.
  bool expert = false;
};

// Which part of the model one GPU holds.
struct Shard {
  int tp = 1;              // tensor-parallel degree (matrices divided, norms replicated)
  int pp = 1;              // pipeline stages
  int stage = 0;           // this GPU's stage, 0..pp-1
  int virtual_stages = 1;  // interleaving: the stage holds v chunks of L/(pp*v) layers each
  StageLayout layout;      // uneven stages (sim/spec/pipeline_layout.h); even by default
  int ep = 1;              // expert parallel: routed experts divided among ep ranks
  int etp = 1;             // expert tensor parallel: each expert divided among etp ranks
};

// The shard a GPU of pipeline stage `stage` holds under `plan`.
Shard plan_shard(const Plan& plan, int stage);

// Tensors in order of first use in the forward pass. With `shard`, only the tensors that GPU
// holds, with TP-split sizes; a tied output head on a last stage that is not the first holds
// its own copy of the word embedding (as Megatron-LM does).
std::vector<ParamTensor> parameter_tensors(const Model& model, const Shard& shard = {});

// Layers held by a stage, in forward order (interleaving gives non-contiguous ranges).
std::vector<int> stage_layers(const Model& model, const Shard& shard);

struct ParamCount {
  int64_t word_embedding = 0;
  int64_t position_embedding = 0;
  int64_t embedding_norm = 0; // BLOOM's norm after the word embedding (Model::embedding_norm)
  int64_t per_layer = 0;     // a dense layer
  int64_t per_moe_layer = 0; // an MoE layer: attention, router, shared and all routed experts
  int64_t experts_per_moe_layer = 0;  // of which the routed experts
  int moe_layers = 0;
  int64_t final_norm = 0;
  int64_t output_head = 0;   // 0 when tied to the word embedding
  int64_t total = 0;         // the unique parameters of the model
  // What one token computes with: every parameter but the routed experts it is not sent to
  // (top_k of experts), as MoE papers and Megatron-Bridge's MFU count "active" parameters.
  int64_t active = 0;
  int64_t layers_total() const { return per_layer * (layers - moe_layers) + per_moe_layer * moe_layers; }
  int layers = 0;
};

ParamCount count_parameters(const Model& model);

// The word embedding's parameters (vocabulary x hidden), on every TP rank together.
int64_t word_embedding_params(const Model& model);

// Routed-expert parameters of one MoE layer on one GPU of an EP x ETP layout (0 for a dense
// model), rounded as parameter_tensors shards them.
int64_t moe_layer_expert_params(const Model& model, int ep, int etp);

// Parameters one GPU of the shard holds (replicated norms and embedding copies included).
int64_t shard_parameters(const Model& model, const Shard& shard);

}  // namespace starfish
