// The executor's host memory policy (exec/host_memory.h): a large block freed and allocated
// again comes back without new pages, so an iteration's large tensors cost no page faults after
// the first, also when another thread frees and allocates it (LibTorch's CPU tensors through
// the caching allocator). Counted in minor page faults (getrusage), which do not depend on the machine's load.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "exec/host_memory.h"

namespace starfish::exec {
namespace {

long minor_faults() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// Minor page faults of allocating `bytes`, writing every byte and freeing it.
long faults_of_a_round(size_t bytes) {
  const long before = minor_faults();
  void* p = std::malloc(bytes);
  if (p == nullptr) return -1;
  std::memset(p, 1, bytes);
  asm volatile("" : : "r"(p) : "memory");  // the writes happen: the compiler may not drop them
  std::free(p);
  return minor_faults() - before;
}

TEST(HostMemory, ALargeBlockFreedAndAllocatedAgainIsNotFaultedInAgain) {
  constexpr size_t kBytes = size_t{64} << 20;  // above glibc's largest mmap threshold (32 MiB)
  // glibc's default: a fresh mapping each time, every page faulted in again (at least one
  // fault per 2 MiB, should transparent huge pages back it).
  constexpr long kHugePages = static_cast<long>(kBytes >> 21);
  ASSERT_GE(faults_of_a_round(kBytes), kHugePages);
  ASSERT_GE(faults_of_a_round(kBytes), kHugePages);
  keep_freed_host_memory();
  (void)faults_of_a_round(kBytes);           // the heap grows once
  EXPECT_LE(faults_of_a_round(kBytes), 4);   // then the same pages serve every later round
  EXPECT_LE(faults_of_a_round(kBytes), 4);
}

// What Gloo's worker threads do with a collective's buffer: a 160 MB tensor made, written and
// dropped by a thread other than main. With glibc alone each round is a fresh mmap, every page
// faulted in again (40k faults of 4 KiB); from the caching allocator the second round and every
// later one reuse the first's pages, whichever thread asks.
long tensor_faults_in_a_thread(int64_t floats) {
  long faults = -1;
  std::thread worker([&] {
    const long before = minor_faults();
    at::Tensor t = at::empty({floats}, at::kFloat);
    t.fill_(1.0f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u) << "c10's alignment";
    t = at::Tensor();
    faults = minor_faults() - before;
  });
  worker.join();
  return faults;
}

TEST(HostMemory, ATensorFreedByOneThreadServesTheNextOfItsSizeWithoutNewPages) {
  keep_freed_host_memory();
  constexpr int64_t kFloats = 40'000'000;  // a gpt2-small-2l chunk: 160 MB
  const HostCacheStats before = host_cache_stats();
  (void)tensor_faults_in_a_thread(kFloats);  // the first round takes fresh pages
  EXPECT_EQ(host_cache_stats().cached_free_bytes - before.cached_free_bytes, size_t{2442} << 16)
      << "kept, rounded up to 64 KiB: 160e6 / 65536 = 2441.4";
  EXPECT_LE(tensor_faults_in_a_thread(kFloats), 16);
  EXPECT_LE(tensor_faults_in_a_thread(kFloats), 16);
  const HostCacheStats after = host_cache_stats();
  EXPECT_EQ(after.hits - before.hits, 2u);
  EXPECT_EQ(after.misses - before.misses, 1u);
  // Another size does not take the kept block: a 100 MB tensor is a miss.
  (void)tensor_faults_in_a_thread(25'000'000);
  EXPECT_EQ(host_cache_stats().misses - after.misses, 1u);
}

}  // namespace
}  // namespace starfish::exec
