#pragma once
// The executor's host memory policy: freed memory is kept for the next allocation, as CUDA's
// caching allocator keeps device memory, instead of going back to the kernel.
//
// LibTorch's CPU allocator is glibc's malloc. glibc serves every block above its mmap threshold
// (128 KiB, rising to at most 32 MiB) with a fresh mmap and returns it with munmap on free, and
// trims the heap's top above 128 KiB: so each iteration's large tensors (GPT-2's 25 MB logits and
// 154 MB head gradient, a chunk move's 160 MB destination) come back as new pages, and the kernel
// zeroes each 4 KiB page at its first touch. Measured on gpt2-small-2l-chunked-plan.yaml (one
// core): 2.39 s of CPU an iteration, 40% of it in the kernel, against 1.45 s with the policy
// below (docs/benchmarks.md, "Time: predicted against measured").
#include <cstddef>

namespace starfish::exec {

// No mmap'd blocks and no trimming: every block comes from the heap and stays there once freed;
// and LibTorch's CPU tensors of 1 MiB and more come from a cache of freed blocks by size (see
// CachingHostAllocator in host_memory.cpp). Call first thing in main(), before the first
// allocation that matters.
void keep_freed_host_memory();

// The caching allocator's counters: blocks served from the cache, blocks it had to allocate,
// and the bytes its free blocks hold now.
struct HostCacheStats {
  size_t hits = 0, misses = 0, cached_free_bytes = 0;
};
HostCacheStats host_cache_stats();

}  // namespace starfish::exec
