#include "exec/blas_kernels.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace starfish::exec {

std::string blas_core_name() {
  // Looked up, not linked: LibTorch reaches OpenBLAS through libblas.so.3, which may be another BLAS.
  using CoreNameFn = char* (*)();
  const auto fn = reinterpret_cast<CoreNameFn>(::dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  const char* name = fn ? fn() : nullptr;
  return name ? std::string(name) : std::string();
}

std::string best_blas_core_for_this_cpu() {
  __builtin_cpu_init();
  // SkylakeX's kernels need AVX-512 F/BW/VL/DQ. (Cooperlake adds only BF16 GEMMs, which
  // LibTorch does not call OpenBLAS for; its fp32 kernels are SkylakeX's.)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return "";
}

void reexec_with_best_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return;  // the user's choice, or already re-executed
  if (blas_core_name() != "Prescott") return;
  const std::string best = best_blas_core_for_this_cpu();
  if (best.empty()) return;  // Prescott is right for this CPU
  ::setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
  ::execv("/proc/self/exe", argv);
  // execv returned: run on with the slow kernels rather than not at all (the child ranks, which
  // inherit the variable, still get the fast ones).
}

}  // namespace starfish::exec
