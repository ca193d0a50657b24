// Measures GEMMs of many shapes and a streaming copy on this machine's device (CUDA when
// LibTorch has it, else the CPU) and writes them as the CSV `starfish calibrate` fits:
//   kind,dtype,m,n,k,bytes,seconds
// Shapes: squares from 256 to 8192 and the transformer's own (tokens x hidden x 3h, 4h) at
// hidden sizes 1024..12288, each timed as the median of several runs after a warm-up.
//
// usage: gemm_calibration [--dtype bf16|fp16|fp32] [--max-flop 1e13] > measurements.csv
#include <algorithm>
#include <array>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "exec/torch_pch.h"

namespace {

double median_seconds(const std::function<void()>& f, bool cuda, int reps) {
  f();  // warm-up
  if (cuda) torch::cuda::synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    if (cuda) torch::cuda::synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dtype_name = "bf16";
  double max_flop = 1e13;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dtype")) dtype_name = argv[i + 1];
    else if (!std::strcmp(argv[i], "--max-flop")) max_flop = std::stod(argv[i + 1]);
    else {
      std::fprintf(stderr, "gemm_calibration: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const bool cuda = torch::cuda::is_available();
  if (!cuda) at::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  torch::Dtype dtype = torch::kBFloat16;
  if (dtype_name == "fp16") dtype = torch::kHalf;
  else if (dtype_name == "fp32") dtype = torch::kFloat;
  else if (dtype_name != "bf16") {
    std::fprintf(stderr, "gemm_calibration: --dtype must be bf16, fp16 or fp32\n");
    return 2;
  }
  if (!cuda && dtype != torch::kFloat) {
    std::fprintf(stderr, "gemm_calibration: no CUDA device; measuring fp32 on the CPU instead\n");
    dtype = torch::kFloat;
    dtype_name = "fp32";
  }
  const auto options = torch::TensorOptions().dtype(dtype).device(cuda ? torch::kCUDA : torch::kCPU);
  std::printf("kind,dtype,m,n,k,bytes,seconds\n");
  std::vector<std::array<int64_t, 3>> shapes;
  for (int64_t n = 256; n <= 8192; n *= 2) shapes.push_back({n, n, n});
  for (int64_t h : {1024, 2048, 4096, 8192, 12288})
    for (int64_t tokens : {512, 2048, 8192}) {
      shapes.push_back({tokens, 3 * h, h});
      shapes.push_back({tokens, 4 * h, h});
      shapes.push_back({tokens, h, 4 * h});
    }
  for (const auto& [m, n, k] : shapes) {
    const double flop = 2.0 * m * n * k;
    if (flop > max_flop) continue;
    const torch::Tensor a = torch::randn({m, k}, options), b = torch::randn({k, n}, options);
    torch::Tensor c = torch::empty({m, n}, options);
    const int reps = flop > 1e12 ? 3 : 7;
    const double s = median_seconds([&] { torch::mm_out(c, a, b); }, cuda, reps);
    std::printf("gemm,%s,%lld,%lld,%lld,,%.9g\n", dtype_name.c_str(), static_cast<long long>(m), static_cast<long long>(n),
                static_cast<long long>(k), s);
    std::fflush(stdout);
  }
  // Streaming: a large device-to-device copy reads and writes every byte once.
  const int64_t elements = cuda ? (int64_t{1} << 28) : (int64_t{1} << 25);
  const torch::Tensor src = torch::ones({elements}, options);
  torch::Tensor dst = torch::empty_like(src);
  const double s = median_seconds([&] { dst.copy_(src); }, cuda, 7);
  std::printf("stream,%s,,,,%lld,%.9g\n", dtype_name.c_str(), static_cast<long long>(2 * src.nbytes()), s);
  return 0;
}
