#pragma once
// The one precompiled header of every target that uses LibTorch (see exec/CMakeLists.txt).
#include <torch/torch.h>
