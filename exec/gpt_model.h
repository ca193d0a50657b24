#pragma once
// A GPT decoder (starfish::Model) written as a sequence of segments: the embeddings, one segment
// per transformer layer, and the head (final norm, output projection, cross-entropy). A segment
// is a pure function of its input activation and its parameter tensors, which it is handed
// explicitly, so the same code runs on ordinary LibTorch parameters (the reference path) and on
// views into chunk payloads (the chunked path, see segment_function.h).
// Parameter names, order and sizes are those of sim/cost/params.h, so the chunk layout the
// runtime builds from parameter_tensors() describes exactly these tensors.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "sim/cost/params.h"
#include "sim/spec/model.h"

namespace starfish::exec {

struct GptParam {
  std::string name;
  std::vector<int64_t> shape;
  int64_t elements = 0;
  ParamRole role = ParamRole::norm;
  int layer = -1;
};

class Gpt {
 public:
  // Throws SpecError for model features the executor does not implement (RoPE).
  // `embedding_output`: the hidden states' dtype when the embeddings are held in another (a CPU
  // embedding's fp32 tables: the lookup runs in fp32 and its output is cast, as PatrickStar's
  // patrickstar/ops/embedding.py does); unset, the embeddings' own dtype.
  explicit Gpt(Model model, std::optional<at::ScalarType> embedding_output = std::nullopt);

  const Model& model() const { return model_; }
  const std::vector<GptParam>& params() const { return params_; }  // order of first use
  const GptParam& param(const std::string& name) const;
  int64_t parameter_count() const;  // unique elements

  // Segments: 0 = embeddings, 1..layers = transformer layers, layers+1 = head and loss.
  int segments() const { return model_.layers + 2; }
  const std::vector<std::string>& segment_params(int segment) const { return segment_params_.at(segment); }
  std::string segment_name(int segment) const;

  // Segment 0 takes tokens [B, T] (int64) and returns hidden states [B, T, H] on the tokens'
  // device (the embeddings may be on another: the lookup runs where they are); layers map
  // hidden to hidden; the head takes hidden states and `targets` [B, T] and returns the mean
  // cross-entropy (fp32 scalar). `params` are in segment_params(segment) order.
  at::Tensor forward_segment(int segment, const at::Tensor& input, const std::vector<at::Tensor>& params,
                             const at::Tensor& targets) const;

  // GPT-2 initialisation, deterministic in (seed, tensor name): N(0, 0.02) weights, residual
  // output projections N(0, 0.02/sqrt(2L)), norms 1 and biases 0. fp32, model shape.
  at::Tensor initial_value(const GptParam& p, uint64_t seed) const;

 private:
  at::Tensor layer_forward(const at::Tensor& x, const std::vector<at::Tensor>& p) const;
  at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor* b) const;

  Model model_;
  std::optional<at::ScalarType> embedding_output_;
  std::vector<GptParam> params_;
  std::vector<std::vector<std::string>> segment_params_;
};

}  // namespace starfish::exec
