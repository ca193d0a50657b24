#pragma once
// Small models built in code whose every move can be worked out by hand.
#include <string>
#include <vector>

#include "sim/cost/params.h"

namespace starfish::test {

// `layers` layers of one tensor each, `elements` long, in order.
inline std::vector<ParamTensor> one_tensor_layers(int layers, int64_t elements) {
  std::vector<ParamTensor> ts;
  for (int l = 0; l < layers; ++l)
    ts.push_back(ParamTensor{"layers." + std::to_string(l) + ".w", elements, l, ParamRole::mlp_in, true});
  return ts;
}

}  // namespace starfish::test
