#pragma once
// A GPT-style decoder-only transformer.
#include <array>
#include <cstdint>
#include <string>

#include "sim/spec/provenance.h"

namespace starfish {

enum class Activation { gelu, swiglu };
enum class Norm { layernorm, rmsnorm };
enum class PositionEmbedding { learned, rope };

// Mixture of experts (Shazeer et al. 2017; Fedus et al. 2022): the MLP of an MoE layer is
// `experts` routed FFNs of `expert_ffn_hidden`, each token going to the `top_k` a linear router
// (hidden x experts, no bias) picks, plus `shared_experts` FFNs every token runs (DeepSeekMoE).
// Layers 0..first_dense_layers-1 stay dense (DeepSeek-V3's first_k_dense_replace); after them
// every `every`-th layer is MoE, counting from the first one ((l - first_dense_layers) % every ==
// 0, Megatron-core's --moe-layer-freq). capacity_factor 0: dropless (every routed token is
// computed, Megatron-core's default); > 0: each expert takes at most capacity_factor x its mean
// share of tokens and drops the rest (Switch Transformer / GShard).
struct Moe {
  int experts = 0;               // 0: a dense model
  int top_k = 0;
  int shared_experts = 0;
  int expert_ffn_hidden = 0;
  int first_dense_layers = 0;
  int every = 1;
  double capacity_factor = 0;
  bool operator==(const Moe&) const = default;
};

// Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, sec. 2.1; DeepSeek-V3): queries and
// keys/values are projected down to low-rank latents (q_lora_rank; kv_lora_rank plus one shared
// RoPE key of qk_rope_head_dim), normalised (RMSNorm), and projected up per head: each head's
// query and key are qk_nope_head_dim + qk_rope_head_dim wide, its value v_head_dim. q_lora_rank
// 0 projects queries directly (DeepSeek-V2-Lite). Megatron-core's MLASelfAttention keeps the down
// projections whole on every TP rank and splits the up projections by heads.
struct Mla {
  int q_lora_rank = 0;
  int kv_lora_rank = 0;  // 0: no MLA
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  bool operator==(const Mla&) const = default;
};

// Sliding-window (local) attention (Beltagy et al. 2020; Mistral 7B; Gemma 2/3; GPT-OSS): a
// query attends to the `tokens` most recent keys, itself included (HF's sliding_window;
// TransformerEngine's window_size = (tokens - 1, 0)). full_every n > 0: layers n, 2n, ... (1-based)
// attend to the whole causal context and the others to the window (Megatron-core's
// --window-attn-skip-freq n; Gemma 2 and GPT-OSS alternate, n = 2; Gemma 3's 5 local : 1 global
// is n = 6); 0: every layer is windowed (Mistral 7B v0.1).
struct SlidingWindow {
  int tokens = 0;  // 0: no window
  int full_every = 0;
  bool operator==(const SlidingWindow&) const = default;
};

struct Model {
  std::string name;
  std::string family = "gpt";   // how `maxsize` scales it: gpt, llama
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;             // grouped-query attention; == heads for multi-head attention
  int ffn_hidden = 0;           // 4*hidden for GPT; LLaMA's SwiGLU uses its own
  int seq_len = 0;
  int vocab = 0;
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  PositionEmbedding position = PositionEmbedding::learned;
  // RoPE's base frequency theta (Su et al. 2021: 10000; Llama 3: 500000). It changes no cost,
  // but an export must carry it (Megatron's --rotary-base) or the run trains another model.
  double rope_base = 10000;
  bool tied_embeddings = true;  // output projection shares the input embedding
  bool bias = true;             // linear layers carry biases (GPT) or not (LLaMA)
  // Biases on the query/key/value projection alone, the other linears without (Qwen2/2.5;
  // Megatron's --add-qkv-bias with --disable-bias-linear). Only with bias: false.
  bool qkv_bias = false;
  // A norm of the model's kind on each query and key head before RoPE, one head_dim-wide weight
  // shared by the heads (Qwen3, OLMo 2, Gemma 3; Megatron-core's --qk-layernorm).
  bool qk_norm = false;
  // Norms on attention's and the MLP's outputs before each residual add, besides the pre-norms
  // (Gemma 2's post_attention_layernorm and post_feedforward_layernorm): four norms a layer.
  bool post_norms = false;
  // Attention and the MLP both read one norm's output (the parallel layer of GPT-J and
  // Falcon-7B/40B-v1): one norm a layer instead of two. Without post_norms.
  bool shared_input_norm = false;
  // A norm of the model's kind on the word embedding's output (BLOOM's word_embeddings_layernorm;
  // Megatron-DeepSpeed's --embed-layernorm).
  bool embedding_norm = false;
  // Rows of the learned position table (position: learned); 0 = seq_len. A checkpoint's table
  // is as long as the model's context (GPT-2: 1024), whatever sequence it trains on; OPT's has 2
  // rows more (its position offset).
  int max_positions = 0;
  // Dropout after attention's softmax and on both residual branches (GPT-2/3, Megatron's GPT:
  // 0.1); off in LLaMA, MPT and most models trained since 2022. With it, every dropout stores a
  // 1-byte mask for backward and costs a kernel.
  bool dropout = true;
  // Width of one attention head; 0 = hidden / heads. Qwen3 and GPT-OSS set their own (Qwen3-30B:
  // 32 heads of 128 on hidden 2048), so the query/output projections are hidden x heads*head_dim.
  int attention_head_dim = 0;
  Moe moe;
  Mla mla;
  SlidingWindow sliding_window;
  Provenance provenance;

  bool is_mla() const { return mla.kv_lora_rank > 0; }
  bool has_qkv_bias() const { return bias || qkv_bias; }
  int64_t position_rows() const { return max_positions > 0 ? max_positions : seq_len; }
  int norms_per_layer() const { return (shared_input_norm ? 1 : 2) + (post_norms ? 2 : 0); }
  int head_dim() const { return attention_head_dim > 0 ? attention_head_dim : hidden / heads; }
  // One head's query/key width and value width (MLA's differ; otherwise both head_dim).
  int qk_head_dim() const { return is_mla() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim(); }
  int v_head_dim() const { return is_mla() ? mla.v_head_dim : head_dim(); }
  int q_dim() const { return heads * qk_head_dim(); }      // queries per token
  int k_dim() const { return kv_heads * qk_head_dim(); }   // keys per token (MLA: kv_heads == heads)
  int v_dim() const { return kv_heads * v_head_dim(); }    // values per token
  int context_dim() const { return heads * v_head_dim(); } // attention's output, the out-projection's input
  int kv_dim() const { return kv_heads * head_dim(); }
  bool is_moe() const { return moe.experts > 0; }
  bool moe_layer(int layer) const {
    return is_moe() && layer >= moe.first_dense_layers && (layer - moe.first_dense_layers) % moe.every == 0;
  }
  // How many of the layers are MoE (moe_layer).
  int moe_layer_count() const {
    int n = 0;
    for (int l = 0; l < layers; ++l) n += moe_layer(l) ? 1 : 0;
    return n;
  }
  // Layer `layer` (0-based) attends through the sliding window, and the window is shorter than
  // the sequence (a window as long as the sequence changes nothing).
  bool windowed_layer(int layer) const {
    const SlidingWindow& w = sliding_window;
    return w.tokens > 0 && w.tokens < seq_len && (w.full_every == 0 || (layer + 1) % w.full_every != 0);
  }
  // Some layers are windowed and others not: the layers of a stage differ in time.
  bool mixed_window() const { return sliding_window.tokens > 0 && sliding_window.tokens < seq_len && sliding_window.full_every > 0; }
  bool operator==(const Model&) const = default;
};

// The layer variants that are switches, each with its model-file field: the one list the
// writer, the GUI's editor and every refusal (exports, the executor) walk.
struct LayerSwitch {
  bool Model::*member;
  const char* field;
};
inline constexpr std::array<LayerSwitch, 5> kLayerSwitches{{{&Model::qkv_bias, "qkv_bias"},
                                                            {&Model::qk_norm, "qk_norm"},
                                                            {&Model::post_norms, "post_norms"},
                                                            {&Model::shared_input_norm, "shared_input_norm"},
                                                            {&Model::embedding_norm, "embedding_norm"}}};

}  // namespace starfish
