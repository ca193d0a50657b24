#include "exec/host_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace starfish::exec {
namespace {

// LibTorch's CPU tensors of 1 MiB and more, kept by size once freed and handed out again for the
// next tensor of that size, as CUDA's caching allocator does on a GPU. glibc alone does not keep
// them reusable: with two ranks, Gloo's worker threads allocate a collective's buffers (glibc
// gives a thread other than main an arena of 64 MiB heaps and serves a larger block there by a
// fresh mmap, whatever M_MMAP_MAX says), and with one arena for all the heap fragments: a
// 2-rank gpt2-small-2l run grew to 3.8 GB resident for its 0.6 GB of tensors and spent 45% of
// its CPU in page faults (perf: clear_page under exc_page_fault). A training iteration asks
// for the same sizes every time, so blocks are kept by their exact size rounded up to 64 KiB;
// when a miss finds more than kReleaseAboveBytes in blocks of other sizes, those go back to
// glibc's heap first (which keeps them: M_TRIM_THRESHOLD) so that a run whose shapes change
// does not hoard memory.
class CachingHostAllocator final : public c10::Allocator {
 public:
  static constexpr size_t kMinCachedBytes = size_t{1} << 20;
  static constexpr size_t kRoundBytes = size_t{64} << 10;
  static constexpr size_t kReleaseAboveBytes = size_t{1} << 30;
  static constexpr size_t kAlignment = 64;  // c10's gAlignment: what vectorised kernels expect

  // Both signatures, no `override`: LibTorch 1.13 declares allocate() const, 2.3 and later
  // non-const (and adds copy_data); whichever the base declares, one of these implements it.
  c10::DataPtr allocate(size_t bytes) { return allocate_block(bytes); }
  c10::DataPtr allocate(size_t bytes) const { return allocate_block(bytes); }
  void copy_data(void* dest, const void* src, size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  static CachingHostAllocator& instance() {
    static auto* a = new CachingHostAllocator;  // never destroyed: tensors may outlive statics
    return *a;
  }
  HostCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  c10::DataPtr allocate_block(size_t bytes) const {
    if (bytes == 0) return {nullptr, nullptr, &release, c10::Device(c10::DeviceType::CPU)};
    const size_t size = bytes < kMinCachedBytes ? bytes : (bytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
    void* block = size >= kMinCachedBytes ? take(size) : nullptr;
    if (!block) block = fresh(size);
    return {static_cast<char*>(block) + kAlignment, block, &release, c10::Device(c10::DeviceType::CPU)};
  }
  // A block is [header of kAlignment bytes holding its size][the tensor's bytes].
  static size_t& size_of(void* block) { return *static_cast<size_t*>(block); }

  void* fresh(size_t size) const {
    void* block = nullptr;
    if (::posix_memalign(&block, kAlignment, size + kAlignment) != 0) throw std::bad_alloc();
    size_of(block) = size;
    return block;
  }
  void* take(size_t size) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      stats_.cached_free_bytes -= size;
      ++stats_.hits;
      return block;
    }
    ++stats_.misses;
    if (stats_.cached_free_bytes > kReleaseAboveBytes) release_all_locked();
    return nullptr;
  }
  void release_all_locked() const {
    for (auto& [size, blocks] : free_)
      for (void* b : blocks) std::free(b);
    free_.clear();
    stats_.cached_free_bytes = 0;
  }
  static void release(void* block) {
    if (!block) return;
    const size_t size = size_of(block);
    if (size < kMinCachedBytes) return std::free(block);
    CachingHostAllocator& a = instance();
    std::lock_guard<std::mutex> lock(a.mutex_);
    a.free_[size].push_back(block);
    a.stats_.cached_free_bytes += size;
  }

  mutable std::mutex mutex_;
  mutable std::map<size_t, std::vector<void*>> free_;
  mutable HostCacheStats stats_;
};

}  // namespace

void keep_freed_host_memory() {
  ::mallopt(M_MMAP_MAX, 0);                 // large blocks from the heap too, reusable once freed
  ::mallopt(M_TRIM_THRESHOLD, 0x7fffffff);  // never give the heap's top back to the kernel
  // Above every allocator LibTorch registers for the CPU (c10's default has priority 0).
  c10::SetAllocator(c10::DeviceType::CPU, &CachingHostAllocator::instance(), 10);
}

HostCacheStats host_cache_stats() { return CachingHostAllocator::instance().stats(); }

}  // namespace starfish::exec
