// The executor's host memory policy (exec/host_memory.h): a large block freed and allocated
// again comes back without new pages, so an iteration's large tensors cost no page faults after
// the first. Counted in minor page faults (getrusage), which do not depend on the machine's load.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

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

}  // namespace
}  // namespace starfish::exec
