#pragma once
// Whether this LibTorch can train the GPT in fp16 on the CPU. LibTorch 1.13's CPU kernels have
// no fp16 matrix multiply ("addmm_impl_cpu_" not implemented for 'Half'); newer ones do. Rather
// than guess from a version, the executor asks: it runs a tiny GPT's forward and backward in
// Half on the CPU and reports whether every kernel it needs exists. fp16 computes on the CPU
// wherever the GPU tier is not CUDA (the CPU pool, and the flat store).
namespace starfish::exec {

bool cpu_trains_fp16();

}  // namespace starfish::exec
