#pragma once
// The range of every number a spec may hold, enforced when a file is loaded (README, "Input
// limits"), and overflow-checked integer arithmetic for the products of those numbers.
//
// Why limits at all: every later stage multiplies fields together (GPUs = nodes x GPUs per
// node, tokens = batch x sequence, bytes = parameters x bytes each) in 64-bit integers or
// doubles, and loops over layers, stages and micro-batches. The limits are set far beyond any
// model or cluster built to date (Megatron-1T: 128 layers, hidden 25,600; the largest machines:
// ~10^5 GPUs) yet low enough that no product of them overflows and no loop runs for hours.
#include <cstdint>
#include <optional>

namespace starfish::limits {

// Model shape.
inline constexpr int64_t kMaxLayers = 100'000;
inline constexpr int64_t kMaxHidden = int64_t{1} << 17;      // 131,072
inline constexpr int64_t kMaxHeads = int64_t{1} << 14;       // 16,384
inline constexpr int64_t kMaxFfnHidden = int64_t{1} << 19;   // 524,288
// Attention's width, heads x head_dim (the Q and output projections' inner size), when a model
// gives head_dim: at most the widest hidden (16,384 heads of 131,072 would overflow an int).
inline constexpr int64_t kMaxAttentionWidth = kMaxHidden;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;      // 65,536 routed (or shared) experts
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 22;      // 4,194,304 tokens
inline constexpr int64_t kMaxVocab = int64_t{1} << 22;       // 4,194,304 tokens

// Hardware.
inline constexpr int64_t kMaxGpus = 10'000'000;              // in a cluster: nodes x GPUs per node
inline constexpr int64_t kMaxGpusPerNode = 1'024;
inline constexpr int64_t kMaxCpuCores = 65'536;
inline constexpr int64_t kMaxCopyEngines = 64;
inline constexpr int64_t kMaxNics = 64;
inline constexpr int64_t kMaxBytes = int64_t{1} << 60;       // any size: 1 EiB
inline constexpr double kMaxRate_Bps = 1e18;                 // any bandwidth: 1 EB/s
inline constexpr double kMaxFlops = 1e21;                    // a GPU's peak: 1 ZFLOP/s
inline constexpr double kMaxFlopCount = 1e24;                // a point of the GEMM efficiency curve
inline constexpr double kMaxLatency_s = 3600;

// Training and plan.
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 30;   // sequences per iteration
inline constexpr int64_t kMaxTokensPerIteration = int64_t{1} << 40;  // global batch x seq_len
inline constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;    // sequences per micro-batch
inline constexpr int64_t kMaxIterations = int64_t{1} << 40;
inline constexpr int64_t kMaxTrainMetricPasses = 64;          // a trainer's metrics over the logits
inline constexpr int64_t kMaxSeed = (int64_t{1} << 53) - 1;    // integers a YAML number holds exactly
inline constexpr int64_t kMinChunkElements = 1'024;
inline constexpr int64_t kMaxChunkElements = int64_t{1} << 40;
// Micro-batches per pipeline x layers: the forward and backward passes the simulator models
// one event each (and the executor runs). 4 x 10^6 simulate in ~20 s and ~2 GB on one core of
// the CI machine; GPT-3 175B on 1,024 GPUs needs 192 x 96 = 18,432.
inline constexpr int64_t kMaxMicroBatchLayers = 4'000'000;
// Plans x layers: the search estimates every plan layer by layer. 2 x 10^8 take ~25 s on two
// cores (45,000 plans of a 4,000-layer model); the default space of a 100-layer model is ~4 x 10^6.
inline constexpr int64_t kMaxSearchPlanLayers = 200'000'000;

// Whether an iteration of `micro_batches` per pipeline over `layers` stays within
// kMaxMicroBatchLayers (make_job refuses it otherwise, and the search skips it).
bool within_pass_limit(int64_t micro_batches, int64_t layers);

// a * b, or nothing when the product leaves [0, max]; a and b must be non-negative.
std::optional<int64_t> checked_mul(int64_t a, int64_t b, int64_t max);

}  // namespace starfish::limits
