// The Torch Backend of the chunk runtime on this CPU machine: a capacity-limited "GPU" pool,
// host memory, NVMe as files; copies between any two tiers, byte accounting, collectives.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "exec/dist.h"
#include "exec/torch_backend.h"
#include "exec_test_util.h"
#include "support/backend_conformance.h"

namespace starfish::exec {
namespace {

using testing::TempDir;

// The Backend contract every implementation honours (tests/support/backend_conformance.h), on
// this backend: a "GPU" tier of the capacity asked, NVMe files in a scratch folder of its own.
struct TorchBackendOwner {
  TempDir dir;
  Comm comm{RankEnv{}};
  TorchBackend backend;
  TorchBackendOwner(int64_t gpu_bytes, int n)
      : dir("backend-conformance-" + std::to_string(n)), backend(TierCapacity{gpu_bytes, 0, 0}, dir.path.string(), comm) {}
};

starfish::testing::BackendMaker torch_backend() {
  return {"TorchBackend", [](int64_t gpu_bytes) {
            static int made = 0;
            auto owner = std::make_shared<TorchBackendOwner>(gpu_bytes, ++made);
            return std::shared_ptr<Backend>(owner, &owner->backend);
          }};
}

using starfish::testing::BackendCapacityConformance;
using starfish::testing::BackendConformance;
INSTANTIATE_TEST_SUITE_P(Executor, BackendConformance, ::testing::Values(torch_backend()), starfish::testing::backend_maker_name);
INSTANTIATE_TEST_SUITE_P(Executor, BackendCapacityConformance, ::testing::Values(torch_backend()), starfish::testing::backend_maker_name);

TEST(TorchBackend, GpuTierIsACapacityLimitedCpuPoolAndSaysSo) {
  TempDir dir("backend-cap");
  Comm solo(RankEnv{});
  TorchBackend b(TierCapacity{1000, 0, 0}, dir.path.string(), solo);
  // A CUDA build on a GPU machine (scripts/device-check.sh) has the real device instead.
  EXPECT_EQ(b.gpu_tier_description(), b.uses_cuda() ? "gpu tier: cuda:" + std::to_string(b.compute_device().index())
                                                   : "gpu tier: CPU pool (no CUDA)");
  const Buffer x = b.allocate(Tier::gpu, 600);
  EXPECT_EQ(b.bytes(x).device().type(), b.uses_cuda() ? at::kCUDA : at::kCPU);
  try {
    b.allocate(Tier::gpu, 500);
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), std::string("torch backend: out of memory on the gpu tier") + (b.uses_cuda() ? "" : " (CPU pool)") +
                                         ": 500 bytes requested, 600 of 1000 in use");
  }
  b.release(x);
  const Buffer y = b.allocate(Tier::gpu, 1000);
  EXPECT_NE(y.id, x.id) << "ids are never reused";
  EXPECT_EQ(b.usage(Tier::gpu).peak_bytes, 1000);
  EXPECT_EQ(b.usage(Tier::gpu).in_use_bytes, 1000);
}

TEST(TorchBackend, BytesSurviveARoundTripThroughEveryTierAndAreCountedPerDirection) {
  TempDir dir("backend-copy");
  Comm solo(RankEnv{});
  std::string scratch;
  {
    TorchBackend b(TierCapacity{1 << 20, 0, 0}, dir.path.string(), solo);
    scratch = b.scratch_dir();
    const Buffer g = b.allocate(Tier::gpu, 4096), c = b.allocate(Tier::cpu, 4096), n = b.allocate(Tier::nvme, 4096),
                 back = b.allocate(Tier::gpu, 4096);
    b.bytes(g).view(at::kFloat).copy_(torch::arange(1024, torch::kFloat));
    b.wait(b.copy(g, c, 4096, MoveTag{0, 3, MoveReason::eviction, Queue::copy}));
    b.wait(b.copy(c, n, 4096, MoveTag{0, 3, MoveReason::eviction, Queue::copy}));
    EXPECT_EQ(std::filesystem::file_size(scratch + "/buffer-" + std::to_string(n.id) + ".bin"), 4096u) << "NVMe is a real file";
    b.bytes(c).zero_();
    b.wait(b.copy(n, c, 4096, MoveTag{1, 3, MoveReason::access, Queue::compute}));
    b.wait(b.copy(c, back, 2048, MoveTag{1, 3, MoveReason::access, Queue::compute}));
    EXPECT_TRUE(torch::equal(b.bytes(back).view(at::kFloat).narrow(0, 0, 512).cpu(), torch::arange(512, torch::kFloat)));
    EXPECT_EQ(b.copied_bytes(Tier::gpu, Tier::cpu), 4096);
    EXPECT_EQ(b.copied_bytes(Tier::cpu, Tier::nvme), 4096);
    EXPECT_EQ(b.copied_bytes(Tier::nvme, Tier::cpu), 4096);
    EXPECT_EQ(b.copied_bytes(Tier::cpu, Tier::gpu), 2048);
    EXPECT_EQ(b.copied_bytes(Tier::gpu, Tier::nvme), 0);
    EXPECT_EQ(b.copies(), 4);
    EXPECT_THROW(b.copy(g, c, 4097, MoveTag{}), std::out_of_range);
    EXPECT_THROW(b.bytes(n), std::logic_error);
  }
  EXPECT_FALSE(std::filesystem::exists(scratch)) << "the NVMe scratch folder goes with the backend";
}

TEST(TorchBackend, CollectivesOfOneRankFollowTheBufferContract) {
  TempDir dir("backend-coll");
  Comm solo(RankEnv{});
  TorchBackend b(TierCapacity{1 << 20, 0, 0}, dir.path.string(), solo);
  const Group g{1, {0}, 0, 0};
  const Buffer in = b.allocate(Tier::gpu, 64), out = b.allocate(Tier::gpu, 64);
  b.bytes(in).view(at::kFloat).fill_(2.5);
  b.collective(CollectiveKind::all_gather, g, {in}, {out}, DType::fp32, MoveTag{});
  EXPECT_TRUE(torch::equal(b.bytes(out).cpu(), b.bytes(in).cpu()));
  b.collective(CollectiveKind::all_reduce, g, {in}, {in}, DType::fp32, MoveTag{});
  EXPECT_EQ(b.bytes(in).view(at::kFloat)[3].item<float>(), 2.5f);
  try {
    b.collective(CollectiveKind::all_gather, g, {in}, {in, out}, DType::fp32, MoveTag{});
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "torch backend: all-gather over 1 ranks needs 1 inputs and 1 outputs");
  }
}

}  // namespace
}  // namespace starfish::exec
