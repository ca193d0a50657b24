#include "exec/fp16_support.h"

#include <torch/torch.h>

#include "exec/gpt_model.h"

namespace starfish::exec {

bool cpu_trains_fp16() {
  Model m;
  m.name = "fp16-probe";
  m.layers = 1;
  m.hidden = 8;
  m.heads = 2;
  m.seq_len = 4;
  m.vocab = 16;
  const Gpt gpt(m);
  try {
    std::map<std::string, at::Tensor> params;
    for (const GptParam& p : gpt.params()) params[p.name] = gpt.initial_value(p, 1).to(at::kHalf).requires_grad_(true);
    const at::Tensor tokens = at::arange(4, at::kLong).remainder(m.vocab).reshape({1, 4});
    at::Tensor h = tokens;
    for (int s = 0; s < gpt.segments(); ++s) {
      std::vector<at::Tensor> p;
      for (const std::string& n : gpt.segment_params(s)) p.push_back(params.at(n));
      h = gpt.forward_segment(s, h, p, tokens);
    }
    h.backward();
    return true;
  } catch (const c10::Error&) {
    return false;  // a kernel without a Half implementation
  }
}

}  // namespace starfish::exec
