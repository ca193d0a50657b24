#pragma once
// Which kernels OpenBLAS runs, and the one fix starfish-run and the exec benchmarks need for it.
//
// Debian 12's OpenBLAS (0.3.21, built with DYNAMIC_ARCH) picks its kernels from the CPU's family
// and model at load time. An Intel model it does not know (Sapphire Rapids' successors, e.g. the
// Xeon family 6 model 207 this project's machine runs on) falls back to its Prescott (SSE3)
// kernels whatever the CPU supports: OpenMathLib/OpenBLAS#4267, fixed in 0.3.25 (#4268). On that
// Xeon one core's sgemm runs at 12-25 GFLOP/s on them against 80-140 on the SkylakeX (AVX-512)
// kernels, and no user trains on that. The
// library reads OPENBLAS_CORETYPE once, when it loads, so the only fix from inside a program is
// to set it from the CPU's own features and run the program again.
#include <string>

namespace starfish::exec {

// The kernel set OpenBLAS chose ("SkylakeX", "Prescott", ...), or "" when LibTorch's BLAS is not
// OpenBLAS (or it does not export openblas_get_corename).
std::string blas_core_name();

// The OpenBLAS core type this CPU's features support best among those Debian's build carries:
// AVX-512 -> "SkylakeX", AVX2 + FMA -> "Haswell", else "" (Prescott is right).
std::string best_blas_core_for_this_cpu();

// When OpenBLAS fell back to Prescott on a CPU that supports better kernels and the user did not
// choose one (OPENBLAS_CORETYPE unset), sets OPENBLAS_CORETYPE and re-executes this program with
// the same arguments (does not return on success); otherwise returns having done nothing. Child
// ranks started later inherit the variable. Call first thing in main().
void reexec_with_best_blas_kernels(char** argv);

}  // namespace starfish::exec
