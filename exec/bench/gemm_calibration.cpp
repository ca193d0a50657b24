// Measures GEMMs of many shapes and a streaming copy on this machine's device (CUDA when
// LibTorch has it, else the CPU) and writes them as the CSV `starfish calibrate` fits:
//   kind,dtype,m,n,k,bytes,seconds
// Shapes: squares from 256 to 8192 and the transformer's own (tokens x hidden x 3h, 4h) at
// hidden sizes 1024..12288, each timed as the median of several runs after a warm-up.
// --model H,T[,V] (repeatable) adds the GEMMs a GPT of hidden H really runs on T tokens, in the
// layout LibTorch's linear and its backward use them: forward X . W^T (weights stored out x in),
// input gradient dY . W, weight gradient dY^T . X (both operands transposed views), for the QKV,
// attention-output, MLP-in and MLP-out projections, and with V the output head's three.
// --attention S,D (repeatable) adds one head's attention products on S tokens of head dimension
// D, forward and backward: the matrices LibTorch's CPU bmm multiplies one at a time.
// --threads N: intra-op threads on the CPU (default: every hardware thread). --clock cpu times
// by process CPU time (with --threads 1 on a shared machine) instead of wall time. --shapes model
// keeps the squares and the --model shapes only (a slow device need not time 12288-wide layers).
// --caches cold evicts the caches before every timed repetition (writes a buffer larger than
// them, untimed), as a training run meets its GEMMs: each layer's weights were pushed out by the
// layers and the head between two uses of them. The default, warm, repeats a GEMM with its
// operands in the caches: a standalone benchmark's figure, which a run does not reach.
//
// usage: gemm_calibration [--dtype bf16|fp16|fp32] [--max-flop 1e13] [--threads N] [--clock wall|cpu]
//                         [--shapes all|model] [--caches warm|cold] [--model H,T[,V]]... [--attention S,D]...
//                         > measurements.csv
#include <time.h>

#include <algorithm>
#include <array>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/torch_pch.h"

namespace {

// --clock cpu: the process's CPU time instead of wall time, for one intra-op thread on a
// machine other work shares (wall time there counts the time the scheduler gave the others).
bool cpu_clock = false;

double now_s() {
  if (cpu_clock) {
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// --caches cold: a buffer written before each timed repetition, larger than the caches it must
// empty (a CPU's last level, 32 MiB a CCD on this project's EPYC; an H100's or H200's 50 MiB
// L2, a B200's 126 MiB), so that the GEMM reads its operands from DRAM or HBM as in a run.
torch::Tensor cache_evictor;
void evict_caches() {
  if (cache_evictor.defined()) cache_evictor.fill_(1.0);
}

double median_seconds(const std::function<void()>& f, bool cuda, int reps) {
  f();  // warm-up
  if (cuda) torch::cuda::synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    evict_caches();
    if (cuda) torch::cuda::synchronize();
    const double t0 = now_s();
    f();
    if (cuda) torch::cuda::synchronize();
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

// One GEMM as the model runs it: C[m x n] = op(A) . op(B) with k the inner size, each operand
// transposed or not as LibTorch's linear (forward) and its backward pass it to the BLAS.
struct ModelGemm {
  int64_t m, n, k;
  bool a_transposed, b_transposed;
};

// A linear layer of `in` -> `out` features on `tokens` rows: forward, input grad, weight grad.
void add_linear(std::vector<ModelGemm>& out, int64_t tokens, int64_t in, int64_t features) {
  out.push_back({tokens, features, in, false, true});   // Y = X . W^T
  out.push_back({tokens, in, features, false, false});  // dX = dY . W
  out.push_back({features, in, tokens, true, false});   // dW = dY^T . X
}

std::vector<ModelGemm> model_gemms(const std::string& spec) {
  int64_t h = 0, t = 0, v = 0;
  if (std::sscanf(spec.c_str(), "%lld,%lld,%lld", reinterpret_cast<long long*>(&h), reinterpret_cast<long long*>(&t),
                  reinterpret_cast<long long*>(&v)) < 2 || h <= 0 || t <= 0 || v < 0)
    throw std::invalid_argument("--model expects HIDDEN,TOKENS[,VOCAB], got '" + spec + "'");
  std::vector<ModelGemm> g;
  add_linear(g, t, h, 3 * h);  // QKV
  add_linear(g, t, h, h);      // attention output
  add_linear(g, t, h, 4 * h);  // MLP in
  add_linear(g, t, 4 * h, h);  // MLP out
  if (v > 0) add_linear(g, t, h, v);  // output head (the tied embedding)
  return g;
}

// One head's attention products on one sequence of `seq` tokens, head dimension `d`, as the
// executor's unfused attention runs them (exec/gpt_model.cpp: at::matmul, which LibTorch's CPU
// bmm computes one matrix at a time through the same BLAS GEMM): scores Q . K^T and context
// P . V forward; backward dP = dO . V^T, dV = P^T . dO, dQ = dS . K, dK = dS^T . Q.
std::vector<ModelGemm> attention_gemms(const std::string& spec) {
  int64_t seq = 0, d = 0;
  if (std::sscanf(spec.c_str(), "%lld,%lld", reinterpret_cast<long long*>(&seq), reinterpret_cast<long long*>(&d)) != 2 ||
      seq <= 0 || d <= 0)
    throw std::invalid_argument("--attention expects SEQ,HEAD_DIM, got '" + spec + "'");
  return {{seq, seq, d, false, true},    // S = Q . K^T
          {seq, d, seq, false, false},   // O = P . V
          {seq, seq, d, false, true},    // dP = dO . V^T
          {seq, d, seq, true, false},    // dV = P^T . dO
          {seq, d, seq, false, false},   // dQ = dS . K
          {seq, d, seq, true, false}};   // dK = dS^T . Q
}

struct Options {
  std::string dtype_name = "bf16";
  double max_flop = 1e13;
  int threads = 0;
  bool model_only = false;
  bool cold_caches = false;
  std::vector<ModelGemm> model_shapes;
};

// The command line; false (with the message on stderr) on a bad option.
bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dtype")) o.dtype_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--max-flop")) o.max_flop = std::stod(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) o.threads = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--clock")) cpu_clock = !std::strcmp(argv[i + 1], "cpu");
    else if (!std::strcmp(argv[i], "--shapes")) o.model_only = !std::strcmp(argv[i + 1], "model");
    else if (!std::strcmp(argv[i], "--caches")) {
      if (std::strcmp(argv[i + 1], "cold") && std::strcmp(argv[i + 1], "warm")) {
        std::fprintf(stderr, "gemm_calibration: --caches must be warm or cold, got '%s'\n", argv[i + 1]);
        return false;
      }
      o.cold_caches = !std::strcmp(argv[i + 1], "cold");
    }
    else if (!std::strcmp(argv[i], "--model")) {
      try {
        for (const ModelGemm& g : model_gemms(argv[i + 1])) o.model_shapes.push_back(g);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "gemm_calibration: %s\n", e.what());
        return false;
      }
    } else if (!std::strcmp(argv[i], "--attention")) {
      try {
        for (const ModelGemm& g : attention_gemms(argv[i + 1])) o.model_shapes.push_back(g);
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "gemm_calibration: %s\n", e.what());
        return false;
      }
    } else {
      std::fprintf(stderr, "gemm_calibration: unknown option %s\n", argv[i]);
      return false;
    }
  }
  return true;
}

// The dtype measured: the one asked for, or fp32 on a CPU (said on stderr); false when unknown.
bool pick_dtype(Options& o, bool cuda, torch::Dtype& dtype) {
  dtype = torch::kBFloat16;
  if (o.dtype_name == "fp16") dtype = torch::kHalf;
  else if (o.dtype_name == "fp32") dtype = torch::kFloat;
  else if (o.dtype_name != "bf16") {
    std::fprintf(stderr, "gemm_calibration: --dtype must be bf16, fp16 or fp32\n");
    return false;
  }
  if (!cuda && dtype != torch::kFloat) {
    std::fprintf(stderr, "gemm_calibration: no CUDA device; measuring fp32 on the CPU instead\n");
    dtype = torch::kFloat;
    o.dtype_name = "fp32";
  }
  return true;
}

void print_gemm(const std::string& dtype_name, int64_t m, int64_t n, int64_t k, double s) {
  std::printf("gemm,%s,%lld,%lld,%lld,,%.9g\n", dtype_name.c_str(), static_cast<long long>(m), static_cast<long long>(n),
              static_cast<long long>(k), s);
  std::fflush(stdout);
}

// The squares, then the transformer's own shapes (unless --shapes model), up to max_flop each.
void measure_shapes(const Options& o, const torch::TensorOptions& options, bool cuda) {
  std::vector<std::array<int64_t, 3>> shapes;
  for (int64_t n = 256; n <= 8192; n *= 2) shapes.push_back({n, n, n});
  for (int64_t h : {1024, 2048, 4096, 8192, 12288})
    for (int64_t tokens : {512, 2048, 8192}) {
      if (o.model_only) break;
      shapes.push_back({tokens, 3 * h, h});
      shapes.push_back({tokens, 4 * h, h});
      shapes.push_back({tokens, h, 4 * h});
    }
  for (const auto& [m, n, k] : shapes) {
    const double flop = 2.0 * m * n * k;
    if (flop > o.max_flop) continue;
    const torch::Tensor a = torch::randn({m, k}, options), b = torch::randn({k, n}, options);
    torch::Tensor c = torch::empty({m, n}, options);
    const int reps = flop > 1e12 ? 3 : 7;
    print_gemm(o.dtype_name, m, n, k, median_seconds([&] { torch::mm_out(c, a, b); }, cuda, reps));
  }
}

// The --model GEMMs, each operand stored as the framework stores it.
void measure_model_shapes(const Options& o, const torch::TensorOptions& options, bool cuda) {
  for (const ModelGemm& g : o.model_shapes) {
    const double flop = 2.0 * g.m * g.n * g.k;
    if (flop > o.max_flop) continue;
    // Stored as the framework stores them; the transposed operand is a view, as autograd passes it.
    const torch::Tensor a = g.a_transposed ? torch::randn({g.k, g.m}, options).t() : torch::randn({g.m, g.k}, options);
    const torch::Tensor b = g.b_transposed ? torch::randn({g.n, g.k}, options).t() : torch::randn({g.k, g.n}, options);
    torch::Tensor c = torch::empty({g.m, g.n}, options);
    const int reps = flop > 1e11 ? 3 : 7;
    print_gemm(o.dtype_name, g.m, g.n, g.k, median_seconds([&] { torch::mm_out(c, a, b); }, cuda, reps));
  }
}

int main(int argc, char** argv) {
  starfish::exec::reexec_with_best_blas_kernels(argv);  // the kernels starfish-run gets
  starfish::exec::keep_freed_host_memory();             // and its allocator policy
  Options o;
  if (!parse_options(argc, argv, o)) return 2;
  const bool cuda = torch::cuda::is_available();
  if (!cuda) at::set_num_threads(o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  torch::Dtype dtype;
  if (!pick_dtype(o, cuda, dtype)) return 2;
  const auto options = torch::TensorOptions().dtype(dtype).device(cuda ? torch::kCUDA : torch::kCPU);
  // Say on stderr which kernels ran (the CSV's columns are starfish calibrate's): a profile
  // measured on OpenBLAS's Prescott fallback describes the wrong machine.
  if (!cuda) std::fprintf(stderr, "gemm_calibration: BLAS kernels: %s\n", starfish::exec::blas_core_name().c_str());
  if (o.cold_caches) cache_evictor = torch::empty({int64_t{256} << 20}, options.dtype(torch::kByte));  // 256 MiB
  std::printf("kind,dtype,m,n,k,bytes,seconds\n");
  measure_shapes(o, options, cuda);
  measure_model_shapes(o, options, cuda);
  cache_evictor = torch::Tensor();  // a stream larger than any cache needs no eviction
  // Streaming: a large device-to-device copy reads and writes every byte once.
  const int64_t elements = cuda ? (int64_t{1} << 28) : (int64_t{1} << 25);
  const torch::Tensor src = torch::ones({elements}, options);
  torch::Tensor dst = torch::empty_like(src);
  const double s = median_seconds([&] { dst.copy_(src); }, cuda, 7);
  std::printf("stream,%s,,,,%lld,%.9g\n", o.dtype_name.c_str(), static_cast<long long>(2 * src.nbytes()), s);
  return 0;
}
