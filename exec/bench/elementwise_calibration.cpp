// Measures the time per element of the non-GEMM kernels of the executor's GPT layer and head on
// this machine's CPU, one thread, at a plan's own shape, and prints them as the hwprofile's
// `gpu.elementwise` block (sim/spec/hardware.h: a kernel costs the longer of its memory traffic
// and this). Each kernel class runs the ATen kernels exec/gpt_model.cpp and LibTorch 1.13's
// autograd run for it, called directly so that only their arithmetic and memory traffic are
// timed (per-op dispatch is the profile's op_dispatch, exec/bench/op_dispatch):
//  - norm: native_layer_norm over [tokens, hidden]; backward native_layer_norm_backward;
//  - activation: gelu (tanh) over [tokens, ffn]; backward gelu_backward;
//  - softmax, per score: the scale (mul), the causal mask (masked_fill; the mask's ones + triu)
//    and _softmax; backward _softmax_backward_data, the mask's masked_fill and the scale's mul;
//  - residual: add over [tokens, hidden]; backward the add that sums the residual stream's two
//    gradients;
//  - loss, per logit: log_softmax + nll_loss (cross_entropy on fp32 logits); backward
//    nll_loss_backward and _log_softmax_backward_data;
//  - head_copy, per element of q, k, v and the context copied (sim/cost/op_time.cpp counts
//    the same): forward the contiguous copies at::matmul's reshape makes (the context, and q,
//    k, v when a micro-batch holds several sequences: with one they are views); backward the
//    gradients' copies back, the three narrows' zero-filled QKV-wide gradients with their slice
//    copied in, and the two adds summing them;
//  - bias, per output element of a linear layer: addmm's copy of the broadcast bias into the
//    output; backward the sum of the output gradient over the tokens.
// Medians of `repetitions` timings in thread CPU time after a warm-up (the machine is shared).
//
// usage: elementwise_calibration HIDDEN HEADS TOKENS_PER_SEQUENCE SEQUENCES VOCAB [repetitions=15]
//   tiny-gpt-chunked-plan.yaml: 128 4 64 4 256;  gpt2-small-2l: 768 12 128 1 50257
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/torch_pch.h"

namespace {

double thread_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

template <typename F>
double median_s(F&& f, int reps) {
  f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = thread_cpu_s();
    f();
    t.push_back(thread_cpu_s() - t0);
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[reps / 2];
}

struct Shape {
  int64_t hidden, heads, seq, batch, vocab;
  int64_t tokens() const { return seq * batch; }
  int64_t head_dim() const { return hidden / heads; }
};

// Prints one kernel class: forward and backward seconds over the elements each pass counts, as
// ns per element.
void print_kernel(const char* name, double forward_s, double backward_s, double forward_elements,
                  double backward_elements) {
  std::printf("      %s: {forward: %.3gns, backward: %.3gns}\n", name, forward_s / forward_elements * 1e9,
              backward_s / backward_elements * 1e9);
}
void print_kernel(const char* name, double forward_s, double backward_s, double elements) {
  print_kernel(name, forward_s, backward_s, elements, elements);
}

void norm_and_activation(const Shape& s, int reps) {
  const at::Tensor x = torch::randn({s.tokens(), s.hidden}), dy = torch::randn_like(x);
  const at::Tensor w = torch::ones({s.hidden}), b = torch::zeros({s.hidden});
  auto [y, mean, rstd] = at::native_layer_norm(x, {s.hidden}, w, b, 1e-5);
  const double norm_f = median_s([&] { (void)at::native_layer_norm(x, {s.hidden}, w, b, 1e-5); }, reps);
  const double norm_b = median_s([&] {
    (void)at::native_layer_norm_backward(dy, x, {s.hidden}, mean, rstd, w, b, {true, true, true});
  }, reps);
  print_kernel("norm", norm_f, norm_b, double(x.numel()));
  const at::Tensor h = torch::randn({s.tokens(), 4 * s.hidden}), dh = torch::randn_like(h);
  const double act_f = median_s([&] { (void)at::gelu(h, "tanh"); }, reps);
  const double act_b = median_s([&] { (void)at::gelu_backward(dh, h, "tanh"); }, reps);
  print_kernel("activation", act_f, act_b, double(h.numel()));
}

void softmax_and_residual(const Shape& s, int reps) {
  const at::Tensor scores = torch::randn({s.batch, s.heads, s.seq, s.seq}), dy = torch::randn_like(scores);
  const double scale = 1.0 / std::sqrt(double(s.head_dim()));
  const double inf = std::numeric_limits<float>::infinity();
  const at::Tensor future = at::ones({s.seq, s.seq}, at::kBool).triu(1);
  const at::Tensor att = at::_softmax((scores * scale).masked_fill(future, -inf), -1, false);
  const double sm_f = median_s([&] {
    const at::Tensor mask = at::ones({s.seq, s.seq}, at::kBool).triu(1);
    (void)at::_softmax((scores * scale).masked_fill(mask, -inf), -1, false);
  }, reps);
  const double sm_b = median_s([&] {
    (void)(at::_softmax_backward_data(dy, att, -1, at::kFloat).masked_fill(future, 0) * scale);
  }, reps);
  print_kernel("softmax", sm_f, sm_b, double(scores.numel()));
  const at::Tensor x = torch::randn({s.tokens(), s.hidden}), y = torch::randn_like(x);
  const double add_s = median_s([&] { (void)at::add(x, y); }, reps);
  print_kernel("residual", add_s, add_s, double(x.numel()));
}

void loss(const Shape& s, int reps) {
  const at::Tensor logits = torch::randn({s.tokens(), s.vocab});
  const at::Tensor targets = torch::randint(0, s.vocab, {s.tokens()}, torch::kLong);
  const at::Tensor lp = at::_log_softmax(logits, 1, false);
  const at::Tensor weight;  // undefined: no class weights
  const auto [nll, total_weight] = at::nll_loss_forward(lp, targets, weight, at::Reduction::Mean, -100);
  const at::Tensor g = torch::ones({});
  const double f = median_s([&] {
    (void)at::nll_loss_forward(at::_log_softmax(logits, 1, false), targets, weight, at::Reduction::Mean, -100);
  }, reps);
  const double b = median_s([&] {
    const at::Tensor dlp = at::nll_loss_backward(g, lp, targets, weight, at::Reduction::Mean, -100, total_weight);
    (void)at::_log_softmax_backward_data(dlp, lp, 1, at::kFloat);
  }, reps);
  print_kernel("loss", f, b, double(logits.numel()));
}

// at::linear's bias as addmm runs it: the broadcast bias copied into the output, then (backward)
// the output gradient summed over the tokens; at the MLP-in layer's shape, per output element.
void bias(const Shape& s, int reps) {
  const at::Tensor b = torch::randn({4 * s.hidden}), grad = torch::randn({s.tokens(), 4 * s.hidden});
  at::Tensor out = torch::empty_like(grad);
  const double f = median_s([&] { out.copy_(b.expand_as(out)); }, reps);
  const double back = median_s([&] { (void)grad.sum(0); }, reps);
  print_kernel("bias", f, back, double(out.numel()));
}

void head_copies(const Shape& s, int reps) {
  const int64_t B = s.batch, T = s.seq, H = s.hidden, nh = s.heads, hd = s.head_dim();
  const at::Tensor qkv = torch::randn({B, T, 3 * H});
  auto heads = [&](int64_t i) { return qkv.narrow(-1, i * H, H).reshape({B, T, nh, hd}).transpose(1, 2); };
  const at::Tensor q = heads(0), k = heads(1), v = heads(2);
  const at::Tensor ctx = torch::randn({B, nh, T, hd});
  const double f = median_s([&] {
    (void)q.reshape({B * nh, T, hd});
    (void)k.transpose(-2, -1).reshape({B * nh, hd, T});
    (void)v.reshape({B * nh, T, hd});
    (void)ctx.transpose(1, 2).reshape({B, T, H});
  }, reps);
  const at::Tensor grad = torch::randn({B * nh, T, hd}), grad_ctx = torch::randn({B, T, H});
  const double b = median_s([&] {
    std::vector<at::Tensor> full;
    for (int64_t i = 0; i < 3; ++i) {
      // The gradient of q (k, v) back in [B, T, H]: a copy out of bmm's [B nh, T, hd]; then
      // narrow's backward: a zero-filled [B, T, 3H] with the slice copied in.
      const at::Tensor g = grad.view({B, nh, T, hd}).transpose(1, 2).reshape({B, T, H});
      at::Tensor z = at::zeros({B, T, 3 * H});
      z.narrow(-1, i * H, H).copy_(g);
      full.push_back(z);
    }
    (void)(full[0] + full[1] + full[2]);
    (void)grad_ctx.view({B, T, nh, hd}).transpose(1, 2).reshape({B * nh, T, hd});
  }, reps);
  // Per element copied (sim/cost/op_time.cpp): forward the context, and q, k, v when B > 1 (with
  // one sequence their reshapes are views); backward all four.
  print_kernel("head_copy", f, b, double((B > 1 ? 4 : 1) * B * T * H), double(4 * B * T * H));
}

}  // namespace

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  if (argc < 6) {
    std::fprintf(stderr, "usage: elementwise_calibration HIDDEN HEADS TOKENS_PER_SEQUENCE SEQUENCES VOCAB [repetitions=15]\n");
    return 2;
  }
  const Shape s{std::atoll(argv[1]), std::atoll(argv[2]), std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[5])};
  const int reps = argc > 6 ? std::atoi(argv[6]) : 15;
  if (s.hidden <= 0 || s.heads <= 0 || s.hidden % s.heads || s.seq <= 0 || s.batch <= 0 || s.vocab <= 0 || reps <= 0) {
    std::fprintf(stderr, "elementwise_calibration: positive sizes expected, HIDDEN a multiple of HEADS\n");
    return 2;
  }
  at::set_num_threads(1);
  at::NoGradGuard no_grad;
  std::printf("# elementwise_calibration %lld %lld %lld %lld %lld (OpenBLAS kernels: %s), thread CPU time, median of %d\n",
              static_cast<long long>(s.hidden), static_cast<long long>(s.heads), static_cast<long long>(s.seq),
              static_cast<long long>(s.batch), static_cast<long long>(s.vocab), starfish::exec::blas_core_name().c_str(), reps);
  std::printf("    elementwise:\n");
  norm_and_activation(s, reps);
  softmax_and_residual(s, reps);
  loss(s, reps);
  head_copies(s, reps);
  bias(s, reps);
  return 0;
}
