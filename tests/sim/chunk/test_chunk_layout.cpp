// Chunk layout: best-fit packing in order of first use, dedicated chunks for big tensors,
// mirrors, bytes per parameter, padding, ZeRO padding and the chunk-size search.
#include <gtest/gtest.h>

#include "sim/cost/chunk_layout.h"
#include "sim/spec/error.h"
#include "tests/sim/chunk/hand_model.h"

namespace starfish {
namespace {

std::vector<ParamTensor> sized(std::vector<int64_t> sizes) {
  std::vector<ParamTensor> ts;
  for (size_t i = 0; i < sizes.size(); ++i) ts.push_back({"t" + std::to_string(i), sizes[i], static_cast<int>(i)});
  return ts;
}

TEST(ChunkLayout, BestFitFillsTheTightestOpenChunkAndBigTensorsGetTheirOwn) {
  // chunk 100: 70 -> c0 (30 left); 50 -> c1 (50 left); 250 -> c2 of 250; 30 -> c0 (tightest
  // fit, exactly); 40 -> c1 (10 left); 20 -> c3.
  const ChunkLayout l = ChunkLayout::build(sized({70, 50, 250, 30, 40, 20}), LayoutOptions{100, DType::fp16, Optimizer::adam, 1});
  ASSERT_EQ(l.param_chunks(), 4);
  const int expect_chunk[] = {0, 1, 2, 0, 1, 3};
  const int64_t expect_offset[] = {0, 0, 0, 70, 50, 0};
  for (int t = 0; t < 6; ++t) {
    EXPECT_EQ(l.place(t).chunk, expect_chunk[t]) << t;
    EXPECT_EQ(l.place(t).offset_elements, expect_offset[t]) << t;
  }
  EXPECT_EQ(l.chunk(2).elements, 250);
  EXPECT_EQ(l.padding_elements(), 0 + 10 + 0 + 80);
  EXPECT_EQ(l.param_elements(), 460);
  // Mixed-precision Adam: 2 + 4 + 4 + 4 bytes per element, padding included.
  EXPECT_DOUBLE_EQ(l.bytes_per_param(), 14.0);
  EXPECT_EQ(l.total_bytes(), 14 * (460 + 90));
  EXPECT_EQ(l.waste_bytes(), 14 * 90);
  EXPECT_EQ(l.chunks().size(), 4u * 4u);
  EXPECT_EQ(l.grad_chunk(1), 1);  // grads reuse the fp16 chunk
  EXPECT_EQ(l.chunk(l.mirror(1, ChunkKind::variance)).kind, ChunkKind::variance);
}

TEST(ChunkLayout, Fp32TrainingHasSeparateGradChunksAndNoMaster) {
  const ChunkLayout l = ChunkLayout::build(sized({100, 100}), LayoutOptions{100, DType::fp32, Optimizer::adam, 1});
  EXPECT_DOUBLE_EQ(l.bytes_per_param(), 16.0);
  EXPECT_EQ(l.mirror(0, ChunkKind::master), -1);
  EXPECT_NE(l.grad_chunk(0), 0);
  EXPECT_EQ(l.chunk(l.grad_chunk(0)).bytes(), 400);
  EXPECT_EQ(l.total_bytes(), 16 * 200);
}

TEST(ChunkLayout, ZeroPadsChunksToGroupsOfOneSize) {
  // 3 chunks (100, 100, 150) over W = 2: a fourth empty chunk; group 1 is sized 150.
  const ChunkLayout l = ChunkLayout::build(sized({100, 100, 150}), LayoutOptions{100, DType::bf16, Optimizer::adam, 2});
  ASSERT_EQ(l.param_chunks(), 4);
  EXPECT_EQ(l.chunk(2).elements, 150);
  EXPECT_EQ(l.chunk(3).elements, 150);
  EXPECT_EQ(l.padding_elements(), 150);
}

TEST(ChunkFootprint, ARankKeepsOneChunkPerGroupAndGathersAWholeGroup) {
  // Chunks (100, 100, 150, pad) over W = 2: groups of 100 and 150 elements; each rank keeps one
  // chunk of each (250 elements), and a moment gathers a group of the largest: 2 x 150 x 2 bytes.
  const ChunkLayout l = ChunkLayout::build(sized({100, 100, 150}), LayoutOptions{100, DType::bf16, Optimizer::adam, 2});
  const ChunkFootprint sharded = chunk_footprint(l, true);
  EXPECT_EQ(sharded.kept_param_elements, 100 + 150);
  EXPECT_EQ(sharded.moment_bytes, 2 * 150 * 2);
  // Unsharded: every chunk kept; a moment holds the two largest.
  const ChunkLayout r = ChunkLayout::build(sized({100, 100, 150}), LayoutOptions{100, DType::bf16, Optimizer::adam, 1});
  const ChunkFootprint replicated = chunk_footprint(r, false);
  EXPECT_EQ(replicated.kept_param_elements, 100 + 100 + 150);
  EXPECT_EQ(replicated.moment_bytes, (150 + 100) * 2);
  // fp32 training: a moment's chunk brings its separate grad chunk.
  const ChunkLayout f = ChunkLayout::build(sized({100, 150}), LayoutOptions{100, DType::fp32, Optimizer::adam, 1});
  EXPECT_EQ(chunk_footprint(f, false).moment_bytes, (150 + 100) * 4 * 2);
}

TEST(ChunkFootprint, TheWorkingSetIsTheRemoteChunksOfTheBusiestStepsGroups) {
  // Tensors of 60 elements: layer 0 (t0), layer 1 (t1, t2), layer 2 (t3); chunks of 100 hold
  // one each (c0..c3), ZeRO groups of W = 2: {c0, c1}, {c2, c3}. Layer 1 straddles both groups:
  // its step gathers all four chunks, two of them the rank's own.
  std::vector<ParamTensor> ts;
  const int layer_of[] = {0, 1, 1, 2};
  for (int i = 0; i < 4; ++i) ts.push_back({"t" + std::to_string(i), 60, layer_of[i]});
  const ChunkLayout l = ChunkLayout::build(ts, LayoutOptions{100, DType::bf16, Optimizer::adam, 2});
  ASSERT_EQ(l.param_chunks(), 4);
  const ChunkWorkingSet w = chunk_working_set(l, true, false);
  EXPECT_EQ(w.step_bytes, 4 * 100 * 2);
  EXPECT_EQ(w.working_bytes, 2 * 100 * 2);  // a single group would leave one remote chunk
  EXPECT_EQ(chunk_working_set(l, false, false).working_bytes, 0) << "unsharded: every chunk is the rank's";
  // fp32 training: the backward brings the grad chunks of the two chunks the step touches.
  const ChunkLayout f = ChunkLayout::build(ts, LayoutOptions{100, DType::fp32, Optimizer::adam, 2});
  const ChunkWorkingSet wf = chunk_working_set(f, true, false);
  EXPECT_EQ(wf.step_bytes, (4 + 2) * 100 * 4);
  EXPECT_EQ(wf.working_bytes, (2 + 2) * 100 * 4);
  // Each rank keeps one unit per group: its master, momentum, variance (12 bytes an element)
  // and its param chunk.
  const ChunkFootprint fp = chunk_footprint(l, true);
  EXPECT_EQ(fp.units, (std::vector<StateUnit>{{1200, 200}, {1200, 200}}));
}

TEST(ChunkLayout, GptLayoutHoldsEveryParameterOnce) {
  Model m;
  m.hidden = 1024, m.layers = 4, m.heads = m.kv_heads = 16, m.ffn_hidden = 4096, m.seq_len = 1024, m.vocab = 50257;
  const auto ts = parameter_tensors(m);
  const ChunkLayout l = ChunkLayout::build(ts, LayoutOptions{int64_t{8} << 20, DType::bf16, Optimizer::adam, 1});
  EXPECT_EQ(l.param_elements(), count_parameters(m).total);
  std::vector<int64_t> filled(l.param_chunks(), 0);
  for (size_t t = 0; t < ts.size(); ++t) {
    const TensorPlace& p = l.place(static_cast<int>(t));
    EXPECT_LE(p.offset_elements + p.elements, l.chunk(p.chunk).elements);
    filled[p.chunk] += p.elements;
  }
  for (int c = 0; c < l.param_chunks(); ++c) EXPECT_EQ(filled[c], l.chunk(c).used_elements);
}

TEST(ChunkSizeSearch, PicksTheLeastPaddingThatFitsAndNamesTheShortfall) {
  // Tensors of 60: chunk 60 or 120 wastes nothing; 90 wastes 30 per chunk. Ties go larger.
  const auto ts = sized({60, 60, 60, 60});
  const LayoutOptions base{0, DType::bf16, Optimizer::adam, 1};
  const ChunkSizeChoice c = search_chunk_size(ts, base, 60, 120, 30, 1 << 20, 1 << 20);
  EXPECT_EQ(c.chunk_elements, 120);
  EXPECT_EQ(c.padding_elements, 0);
  EXPECT_EQ(c.candidates, 3);
  // Two 120-element chunks are 480 bytes of GPU: a 400-byte GPU forces 60.
  EXPECT_EQ(search_chunk_size(ts, base, 60, 120, 30, 400, 1 << 20).chunk_elements, 60);
  try {
    search_chunk_size(ts, base, 60, 120, 30, 200, 1 << 20);
    FAIL() << "expected SpecError";
  } catch (const SpecError& e) {
    EXPECT_STREQ(e.what(), "chunk size search: no chunk size in [60, 120] elements fits the memory budget (GPU 200 "
                           "bytes, total 1048576 bytes); the closest size is 40 bytes short");
  }
}

TEST(ChunkLayout, BadInputIsRejected) {
  EXPECT_THROW(ChunkLayout::build(sized({10}), LayoutOptions{0, DType::bf16, Optimizer::adam, 1}), SpecError);
  EXPECT_THROW(ChunkLayout::build({}, LayoutOptions{10, DType::bf16, Optimizer::adam, 1}), SpecError);
}

}  // namespace
}  // namespace starfish
