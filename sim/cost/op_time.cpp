#include "sim/cost/op_time.h"

#include <algorithm>

#include "sim/cost/dispatch.h"
#include "sim/cost/flops.h"
#include "sim/cost/low_precision.h"
#include "sim/cost/framework.h"
#include "sim/cost/moe.h"
#include "sim/cost/params.h"

namespace starfish {

double matmul_time_s(const GpuSpec& gpu, DType dtype, double flop) {
  if (flop <= 0) return 0;
  return flop / (gpu.peak(dtype) * gpu.matmul_efficiency.at(flop));
}

double memory_bound_time_s(const GpuSpec& gpu, double bytes) {
  return bytes / (gpu.hbm_bandwidth_Bps * gpu.hbm_efficiency);
}

double elementwise_time_s(const GpuSpec& gpu, double bytes, double elements, double per_element_s) {
  return std::max(memory_bound_time_s(gpu, bytes), elements * per_element_s);
}

double grad_accumulate_time_s(const GpuSpec& gpu, double params, int64_t grad_bytes) {
  return memory_bound_time_s(gpu, 3.0 * static_cast<double>(grad_bytes) * params);
}

double gpu_optimizer_step_time_s(const GpuSpec& gpu, const Training& training, const Plan& plan, double params) {
  return memory_bound_time_s(gpu, params * optimizer_step_bytes_per_param(training, plan));
}

double cpu_adam_time_s(const HostSpec& host, double params) { return params / host.cpu_adam_params_per_s; }

namespace {

// Builds one layer's ops for a shape; every byte count below is the HBM traffic of the kernel
// named, per GPU (reads + writes), with `B` bytes per activation and 1-byte dropout masks
// (Korthikanti 2022, Table 2's convention).
class LayerOpsBuilder {
 public:
  LayerOpsBuilder(const GpuSpec& gpu, DType dtype, const Model& m, const LayerShape& shape)
      : gpu_(gpu), dtype_(dtype), m_(m), shape_(shape) {
    B_ = static_cast<double>(bytes_of(dtype));
    T_ = static_cast<double>(m.seq_len) / shape.cp * static_cast<double>(shape.micro_batch);
    t_ = shape.tp;
    // Norms, dropouts and residuals run on every token on each TP rank, or on 1/t of them with
    // sequence parallelism (Korthikanti 2022 sec. 4.2.2). The all-gather that SP adds in backward
    // (the column-parallel GEMMs' inputs, for the weight gradients) is issued asynchronously
    // and overlapped with the input-gradient GEMM (Megatron's
    // LinearWithGradAccumulationAndAsyncCommunication): it is not on the critical path.
    rep_ = shape.sequence_parallel ? t_ : 1.0;
  }

  std::vector<LayerOp> build() {
    const double h = m_.hidden, f = m_.ffn_hidden;
    const double hidden_bytes = B_ * T_ * h / rep_;
    const AttentionLinears a = attention_linears(m_);
    const double qkv = m_.q_dim() + m_.k_dim() + m_.v_dim();
    // Megatron-core's MLA layer keeps its input norm a module of its own (gpt_layer_specs.py:
    // input_layernorm=backend.layer_norm()), which the layernorm recompute module redoes; other
    // layers fuse it into the QKV GEMM (TE's LayerNormLinear).
    module_ = m_.is_mla() ? recompute_module::layernorm : 0;
    norm("input norm", hidden_bytes);
    module_ = 0;
    if (m_.is_mla()) {
      // MLA (Megatron-core's MLASelfAttention): the down projections on this rank's tokens (its
      // sequence shard with SP, whose latents are then gathered), the latents' RMSNorms, and the
      // up projections of this rank's heads.
      gemm("MLA down-projection GEMM", T_ * a.replicated_in_macs / rep_, T_ * h / rep_, T_ * a.latent_width / rep_, true);
      norm("MLA latent norms", B_ * T_ * (m_.mla.q_lora_rank + m_.mla.kv_lora_rank));
      module_ = recompute_module::mla_up_proj;
      gemm("MLA up-projection GEMM", T_ * a.split_in_macs / t_, T_ * a.latent_width, T_ * qkv / t_);
      module_ = 0;
    } else {
      gemm("QKV GEMM", T_ * a.split_in_macs / t_, T_ * h / rep_, T_ * qkv / t_, true);
    }
    // Megatron-core's q_layernorm / k_layernorm (HF Qwen3's q_norm / k_norm): one norm over each
    // head of this rank's queries and keys, before RoPE.
    if (m_.qk_norm) norm("query/key norms", B_ * T_ * (m_.q_dim() + m_.k_dim()) / t_);
    if (fused(shape_.attention)) flash_attention();
    else unfused_attention();
    if (!shape_.head_copies) qkv_gradient_concat(T_ * qkv / t_);
    gemm("attention output GEMM", T_ * a.out_macs / t_, T_ * m_.context_dim() / t_, T_ * h);
    if (m_.post_norms) norm("attention post-norm", hidden_bytes);
    residual("attention residual", hidden_bytes);
    // Megatron-core's TE layers fuse a dense MLP's norm into fc1 (the mlp module reruns both); an
    // MoE layer's pre-MLP norm is its own module (layernorm).
    module_ = shape_.moe ? recompute_module::layernorm : recompute_module::mlp;
    if (!m_.shared_input_norm) norm("MLP norm", hidden_bytes);
    if (shape_.moe) {
      module_ = 0;
      append_moe_mlp_ops(ops_, gpu_, dtype_, m_, *shape_.moe);
      if (m_.post_norms) norm("MLP post-norm", hidden_bytes);
      residual("MLP residual", hidden_bytes);
      return std::move(ops_);
    }
    const bool swiglu = m_.activation == Activation::swiglu;
    const double in = swiglu ? 2 : 1;
    gemm("MLP-in GEMM", T_ * h * f * in / t_, T_ * h / rep_, T_ * f * in / t_, true);
    // GELU (Megatron fuses the bias in): read, write; backward reads x and dy, writes dx.
    // SwiGLU: reads gate and up, writes their product; backward reads both and dy, writes two.
    const double ffn_bytes = B_ * T_ * f / t_;
    const double ffn_elements = T_ * f / t_;
    const PassTime& act = gpu_.elementwise.activation;
    add("MLP activation", elementwise_time_s(gpu_, (swiglu ? 3 : 2) * ffn_bytes, ffn_elements, act.forward_s),
        elementwise_time_s(gpu_, (swiglu ? 5 : 3) * ffn_bytes, ffn_elements, act.backward_s));
    gemm("MLP-out GEMM", T_ * f * h / t_, T_ * f / t_, T_ * h);
    module_ = 0;
    if (m_.post_norms) norm("MLP post-norm", hidden_bytes);
    residual("MLP residual", hidden_bytes);
    // qkv_bias alone (Qwen2): QKV's bias and nothing else.
    if (m_.has_qkv_bias()) biases(T_ * qkv / t_, m_.bias ? T_ * f * in / t_ : 0, T_ * h / rep_);
    return std::move(ops_);
  }

 private:
  void add(const char* name, double forward_s, double backward_s, bool core = false, bool is_gemm = false) {
    ops_.push_back(LayerOp{name, forward_s, backward_s, core, is_gemm, module_});
  }

  // A linear layer's GEMM of `mac` multiply-adds: forward once; backward computes the input
  // gradient and the weight gradient, two GEMMs of the forward's size. Quantized (fp8 or fp4,
  // low_precision.h) the GEMMs run at the format's peak and TE's casts of the input
  // (`input_elements`, a norm's output when `after_norm`) and of the output gradient
  // (`output_elements`) are added.
  void gemm(const char* name, double mac, double input_elements, double output_elements, bool after_norm = false) {
    if (shape_.quantization != GemmQuantization::none) {
      const QuantizedLinear t =
          quantized_linear_time(gpu_, dtype_, shape_.quantization, 2 * mac, 1, input_elements, output_elements,
                                after_norm ? CastSource::norm_output : CastSource::tensor);
      add(name, t.forward_s, t.backward_s, false, true);
      return;
    }
    const double fwd = matmul_time_s(gpu_, dtype_, 2 * mac);
    add(name, fwd, 2 * fwd, false, true);
  }

  // The biases of the layer's four linear layers as the framework adds them and finds their
  // gradients (LinearBias), over the outputs of QKV (`qkv_elements`), MLP-in (`ffn_elements`) and
  // the two row-parallel layers (`hidden_elements` each).
  //  - copied (LibTorch 1.13 addmm): forward writes every output element (the broadcast bias is
  //    read from cache) before the GEMM accumulates onto it, over the full row-parallel outputs;
  //  - megatron: fc1's bias rides in bias-GELU and the row-parallel ones in bias-dropout-add,
  //    QKV's is a separate `output + bias` (LinearWithGradAccumulationAndAsyncCommunication):
  //    read and write its output;
  //  - summed, megatron, copied: backward sums each output's gradient over the tokens for the
  //    bias's (grad_output.sum(0); autograd's reduction of the fused kernels' full-size bias
  //    gradients): one read of every output gradient.
  void biases(double qkv_elements, double ffn_elements, double hidden_elements) {
    if (shape_.bias == LinearBias::in_gemm) return;
    const PassTime& t = gpu_.elementwise.bias;
    const bool copied = shape_.bias == LinearBias::copied;
    const double row_parallel_outputs = m_.bias ? 2 * (copied ? T_ * m_.hidden : hidden_elements) : 0;
    const double outputs = qkv_elements + ffn_elements + row_parallel_outputs;
    double forward_s = 0;
    if (copied) forward_s = elementwise_time_s(gpu_, B_ * outputs, outputs, t.forward_s);
    if (shape_.bias == LinearBias::megatron)
      forward_s = elementwise_time_s(gpu_, 2 * B_ * qkv_elements, qkv_elements, t.forward_s);
    add("linear biases", forward_s, elementwise_time_s(gpu_, B_ * outputs, outputs, t.backward_s));
  }

  // LayerNorm / RMSNorm: forward reads x, writes y; backward reads x and dy, writes dx, and
  // where the framework's kernels find the weight gradients apart (FrameworkTraits::
  // norm_backward_rereads) reads x and dy again (their output is h values: nothing).
  void norm(const char* name, double hidden_bytes) {
    const double elements = hidden_bytes / B_;
    const PassTime& t = gpu_.elementwise.norm;
    const double backward_bytes = (shape_.norm_backward_rereads ? 5 : 3) * hidden_bytes;
    add(name, elementwise_time_s(gpu_, 2 * hidden_bytes, elements, t.forward_s),
        elementwise_time_s(gpu_, backward_bytes, elements, t.backward_s));
  }

  // Megatron's fused bias-dropout-add: reads the branch and the residual, writes the sum and a
  // 1-byte mask; backward reads dy and the mask, writes dx, and autograd adds the residual's
  // gradient to the other branch's (read two, write one). Without dropout (LLaMA) only the add.
  void residual(const char* name, double hidden_bytes) {
    const double mask = m_.dropout ? hidden_bytes / B_ : 0;
    const double dropout_bwd = m_.dropout ? 2 * hidden_bytes + mask : 0;
    const double elements = hidden_bytes / B_;
    const PassTime& t = gpu_.elementwise.residual;
    add(name, elementwise_time_s(gpu_, 3 * hidden_bytes + mask, elements, t.forward_s),
        elementwise_time_s(gpu_, dropout_bwd + 3 * hidden_bytes, elements, t.backward_s));
  }

  // Separate kernels (Megatron-LM 2021-22): batched score GEMM Q K^T over the full s x s (no
  // causal skipping), FusedScaleMaskSoftmax (read, write), dropout (read, write, 1-byte mask),
  // batched context GEMM. Backward: two GEMMs per batched GEMM, dropout backward (read dy and
  // mask, write dx), softmax backward (read y and dy, write dx).
  // With context parallelism a rank's s / cp queries meet all s keys.
  void unfused_attention() {
    const double s = m_.seq_len, queries = s / shape_.cp;
    const double heads = static_cast<double>(m_.heads) / t_ * static_cast<double>(shape_.micro_batch);
    const double scores = heads * queries * s;  // elements per GPU
    const double gemm_s = batched_matmul_time_s(2 * queries * s * m_.qk_head_dim(), heads);
    const double context_s = batched_matmul_time_s(2 * queries * s * m_.v_head_dim(), heads);
    add("attention scores GEMM", gemm_s, 2 * gemm_s, true, true);
    const PassTime& sm = gpu_.elementwise.softmax;
    add("attention softmax", elementwise_time_s(gpu_, 2 * B_ * scores, scores, sm.forward_s),
        elementwise_time_s(gpu_, 3 * B_ * scores, scores, sm.backward_s), true);
    if (m_.dropout)
      add("attention dropout", memory_bound_time_s(gpu_, (2 * B_ + 1) * scores),
          memory_bound_time_s(gpu_, (2 * B_ + 1) * scores), true);
    add("attention context GEMM", context_s, 2 * context_s, true, true);
    if (shape_.head_copies) head_copies();
  }

  // q, k and v are views into the QKV GEMM's output (Megatron's split_tensor_along_last_dim and
  // torch.split, llm-foundry's qkv.chunk), and attention's backward returns their gradients as
  // three tensors: autograd's split backward concatenates them into the GEMM's output gradient,
  // reading and writing each of this rank's `elements` once. (An executor that copies the heads
  // costs this among its head copies.)
  void qkv_gradient_concat(double elements) {
    add("QKV gradient concatenation", 0, memory_bound_time_s(gpu_, 2 * B_ * elements));
  }

  // The heads' layout copies of an executor that makes them (FrameworkTraits::
  // attention_head_copies), over W = T (q + 2 kv) / t elements of q, k, v and Tq/t of the
  // context. Forward: the context read and written once (2 B Tq), and q, k, v (2 B W) when a
  // micro-batch holds more than one sequence (with one, [1, heads, T, d] reshapes into
  // [heads, T, d] as a view). Backward (LibTorch 1.13's autograd): the q, k, v and context
  // gradients copied back to the strided layout (2 B W + 2 B Tq); each of the three narrows
  // out of the QKV output gives a zero-filled full-width gradient (3 B W written in all) with
  // its slice copied in (2 B W in all), and the three are summed (two adds, 3 B W each). The
  // device's per-element times count the elements each pass copies: the forward's, W + Tq/t.
  void head_copies() {
    const double q = m_.q_dim(), kv = m_.kv_dim();
    const double w = T_ * (q + 2 * kv) / t_, context = T_ * q / t_;
    const double forward_elements = (shape_.micro_batch > 1 ? w : 0) + context;
    const PassTime& t = gpu_.elementwise.head_copy;
    add("attention head copies", elementwise_time_s(gpu_, 2 * B_ * forward_elements, forward_elements, t.forward_s),
        elementwise_time_s(gpu_, B_ * (2 * (w + context) + 3 * w + 2 * w + 6 * w), w + context, t.backward_s), true);
  }

  // FlashAttention (Dao 2022; FlashAttention-2, Dao 2023): one kernel per (sequence, head) tile
  // that keeps scores in on-chip memory. Causal masking skips the blocks above the diagonal, so
  // it does half the full product's work; backward recomputes the scores and runs five GEMMs to
  // the forward's two (2.5x its FLOPs). Each pass's efficiency is that of one head's GEMM work
  // in it, capped at what the kernel's generation is measured to reach in that pass on this GPU
  // (the hwprofile's attention_efficiency: the online softmax, the tiles' bookkeeping and, in
  // backward, dQ's accumulation across key blocks are not GEMM work).
  //
  // Context parallelism (TransformerEngine's ring attention, load-balanced): a rank holds chunks
  // r and 2cp-1-r of 2cp, and in each of cp ring steps meets one rank's keys. Step 0 is causal
  // attention over its own s/cp tokens; every later step pairs half of one side with the whole
  // other (context_parallel.py: "q, kv" halves): the same 2 (s/cp)^2 d FLOPs per head in each
  // step. So the kernel runs cp times at the size of local causal attention.
  //
  // A sliding-window layer (window_tile_fraction) does that fraction of the causal work per head
  // (make_job refuses windows under context parallelism: TransformerEngine's p2p ring has none).
  void flash_attention() {
    // Per head: scores over the query/key width, context over the value width (MLA's differ).
    const double s = m_.seq_len / shape_.cp, d = m_.qk_head_dim() + m_.v_head_dim();
    const double heads = static_cast<double>(m_.heads) / t_ * static_cast<double>(shape_.micro_batch);
    const bool v1 = shape_.attention == Attention::flash1;
    const double window = shape_.windowed ? window_tile_fraction(m_.seq_len, m_.sliding_window.tokens) : 1;
    const double flop_each = 0.5 * 2 * s * s * d * window;
    const double fwd = shape_.cp * batched_matmul_time_s(flop_each, heads, gpu_.attention_efficiency.forward(v1));
    // Backward's five GEMMs are each of the forward's shape: the curve at one of them.
    const double bwd = 2.5 * shape_.cp * batched_matmul_time_s(flop_each, heads, gpu_.attention_efficiency.backward(v1));
    add("flash attention", fwd, bwd, true, true);
    // Backward sums dQ over the key blocks in an fp32 buffer, cleared before and converted to
    // the training dtype after, behind a pass that reads dO and O for rowsum(dO * O):
    // FlashAttention-2's mha_bwd (dq_accum; flash_bwd_dot_do_o_kernel clears it,
    // flash_bwd_convert_dq_kernel converts it) and the Triton port llm-foundry runs
    // (flash_attn_triton.py: dq_accum = empty_like(q, float32), _bwd_preprocess_do_o_dot,
    // dq.copy_(dq_accum)). 4 + 4 + B bytes per query element and 2B per output element, for
    // this rank's queries, once per ring step under context parallelism.
    const double rank_heads = static_cast<double>(m_.heads) / t_;
    const double q_elements = T_ * rank_heads * m_.qk_head_dim(), o_elements = T_ * rank_heads * m_.v_head_dim();
    add("flash attention dQ accumulation", 0,
        shape_.cp * memory_bound_time_s(gpu_, (8 + B_) * q_elements + 2 * B_ * o_elements), true);
  }

  // `count` independent GEMMs of `flop_each` run as one batched kernel: the efficiency is that
  // of one of them, however many are batched, and no more than `cap` when one is given (> 0).
  double batched_matmul_time_s(double flop_each, double count, double cap = 0) const {
    if (flop_each <= 0 || count <= 0) return 0;
    double efficiency = gpu_.matmul_efficiency.at(flop_each);
    if (cap > 0) efficiency = std::min(efficiency, cap);
    return flop_each * count / (gpu_.peak(dtype_) * efficiency);
  }

  const GpuSpec& gpu_;
  DType dtype_;
  const Model& m_;
  LayerShape shape_;
  double B_ = 2, T_ = 0, t_ = 1, rep_ = 1;
  uint8_t module_ = 0;  // the recompute module of the ops being added
  std::vector<LayerOp> ops_;
};

}  // namespace

std::vector<LayerOp> layer_ops(const GpuSpec& gpu, DType dtype, const Model& m, const LayerShape& shape) {
  return LayerOpsBuilder(gpu, dtype, m, shape).build();
}

double window_tile_fraction(int64_t seq_len, int64_t window_tokens) {
  // FlashAttention-2's and cuDNN's 128 x 128 tiles for a head of 128 (Dao 2023, sec. 3.3).
  constexpr int64_t kTile = 128;
  if (seq_len <= 0 || window_tokens <= 0 || window_tokens >= seq_len) return 1;
  const int64_t query_tiles = (seq_len + kTile - 1) / kTile;
  // Query tile q reaches back to key (q kTile - window + 1): tiles 0..q while that is before the
  // sequence starts (q < first_full), then the same `steady` count of key tiles for every later q.
  const int64_t reach = window_tokens - 1;
  const int64_t first_full = std::min(query_tiles, reach / kTile + 1);
  const int64_t steady = reach / kTile + 1 + (reach % kTile > 0 ? 1 : 0);
  const double ramp = 0.5 * static_cast<double>(first_full) * static_cast<double>(first_full + 1);
  const double windowed = ramp + static_cast<double>(query_tiles - first_full) * static_cast<double>(steady);
  const double causal = 0.5 * static_cast<double>(query_tiles) * static_cast<double>(query_tiles + 1);
  return std::min(1.0, windowed / causal);
}

LayerTime operator-(const LayerTime& a, const LayerTime& b) {
  return LayerTime{a.forward_s - b.forward_s,         a.backward_s - b.backward_s,
                   a.recompute_s - b.recompute_s,     a.gemm_forward_s - b.gemm_forward_s,
                   a.elementwise_forward_s - b.elementwise_forward_s,
                   a.core_forward_s - b.core_forward_s, a.core_backward_s - b.core_backward_s};
}

LayerTime operator+(const LayerTime& a, const LayerTime& b) { return a - (LayerTime{} - b); }

LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& m, int64_t b, int tp, bool sp, Recompute rc,
                     Attention attention) {
  return layer_time(gpu, dtype, m, LayerShape{b, tp, sp, attention}, rc);
}

LayerTime layer_time(const GpuSpec& gpu, DType dtype, const Model& m, const LayerShape& shape, Recompute rc) {
  const Attention attention = shape.attention;
  LayerTime out;
  const std::vector<LayerOp> ops = layer_ops(gpu, dtype, m, shape);
  for (const LayerOp& op : ops) {
    out.forward_s += op.forward_s;
    out.backward_s += op.backward_s;
    if (op.gemm) out.gemm_forward_s += op.forward_s;
    else out.elementwise_forward_s += op.forward_s;
    if (op.attention_core) {
      out.core_forward_s += op.forward_s;
      out.core_backward_s += op.backward_s;
    }
  }
  if (rc == Recompute::full) out.recompute_s = out.forward_s;
  if (rc != Recompute::selective) return out;
  // Selective recomputation redoes its modules' forward: by default the attention core (the
  // unfused scores, softmax and context; a fused kernel's forward where the framework
  // checkpoints it: FrameworkTraits), under Megatron-core's --recompute-modules those listed.
  const bool core = (shape.recompute_modules & recompute_module::core_attn) &&
                    (!fused(attention) || shape.selective_redoes_fused_attention);
  for (const LayerOp& op : ops)
    if ((op.attention_core && core) || (op.module & shape.recompute_modules)) out.recompute_s += op.forward_s;
  return out;
}

double output_layer_time_s(const GpuSpec& gpu, DType dtype, const Model& m, int64_t b, int tp,
                           double loss_bytes_per_logit, int cp) {
  const double gemm_flops = logits_forward_flops(m, b) / (tp * cp);
  // Forward GEMM + two backward GEMMs, and the loss's kernels over this rank's logits.
  const double logits = rank_logits(m, b, tp, cp);
  const PassTime& loss = gpu.elementwise.loss;
  return 3 * matmul_time_s(gpu, dtype, gemm_flops) +
         elementwise_time_s(gpu, loss_bytes_per_logit * logits, logits, loss.forward_s + loss.backward_s);
}

double train_metric_time_s(const GpuSpec& gpu, const Model& m, int64_t b, int tp, double bytes_per_logit) {
  return memory_bound_time_s(gpu, bytes_per_logit * rank_logits(m, b, tp, 1));
}

LayerShape plan_layer_shape(const Plan& p, bool moe_layer) {
  const FrameworkTraits& traits = framework_traits(running_framework(p));
  LayerShape shape{p.micro_batch, p.tp, p.sequence_parallel, attention_kernel(p), moe_layer ? &p : nullptr,
                   gemm_quantization(p), p.cp, traits.attention_head_copies, traits.linear_bias};
  shape.selective_redoes_fused_attention = traits.selective_recomputes_fused_attention;
  shape.norm_backward_rereads = traits.norm_backward_rereads;
  shape.recompute_modules = p.recompute_modules;
  return shape;
}

PlanLayerTimes plan_layer_times(const NodeSpec& node, DType dtype, const Model& m, const Plan& p) {
  PlanLayerTimes out;
  const LayerShape shape = plan_layer_shape(p);
  out.layer = layer_time(node.gpu, dtype, m, shape, p.recompute);
  if (m.sliding_window.tokens > 0 && m.sliding_window.tokens < m.seq_len) {
    LayerShape windowed = shape;
    windowed.windowed = true;
    out.window_saving = out.layer - layer_time(node.gpu, dtype, m, windowed, p.recompute);
  }
  if (p.has_bf16_layers()) {
    LayerShape plain = shape;
    plain.quantization = GemmQuantization::none;
    out.bf16_extra = layer_time(node.gpu, dtype, m, plain, p.recompute) - out.layer;
    if (m.is_moe()) {
      LayerShape moe = plan_layer_shape(p, true);
      const LayerTime quantized = layer_time(node.gpu, dtype, m, moe, p.recompute);
      moe.quantization = GemmQuantization::none;
      out.moe_bf16_extra = layer_time(node.gpu, dtype, m, moe, p.recompute) - quantized;
    }
  }
  out.output_s = output_layer_time_s(node.gpu, dtype, m, p.micro_batch, p.tp, loss_kernel(p).traffic_bytes_per_logit, p.cp);
  out.metric_s = train_metric_time_s(node.gpu, m, p.micro_batch, p.tp, train_metric_kernel(bytes_of(dtype), p).traffic_bytes_per_logit);
  const double bmm_matrices =
      fused(shape.attention) ? 1 : static_cast<double>(p.micro_batch) * static_cast<double>(m.heads) / p.tp;
  const LayerDispatch dispatch = layer_dispatch(node.host, p.recompute, bmm_matrices);
  out.layer.forward_s += dispatch.forward_s;
  out.layer.backward_s += dispatch.backward_s;
  out.layer.recompute_s += dispatch.recompute_s;
  out.output_s += dispatch.output_s;
  return out;
}

}  // namespace starfish
