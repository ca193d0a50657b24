#pragma once
// Small ids and enums shared by the engine, its results and the trace writer.
#include <cstdint>
#include <string>

#include "sim/des/topology.h"

namespace starfish::des {

using TaskId = uint32_t;
using ResourceId = uint32_t;
using GroupId = uint32_t;
using CategoryId = uint16_t;

enum class TaskKind : uint8_t { Compute, Copy, NvmeRead, NvmeWrite, Transfer, Collective, Delay };
const char* to_string(TaskKind k);

enum class ResourceKind : uint8_t { ComputeStream, CopyH2D, CopyD2H, NvmeRead, NvmeWrite, Stream };
const char* to_string(ResourceKind k);

struct ResourceInfo {
  ResourceKind kind = ResourceKind::ComputeStream;
  std::string name;  // "gpu3 compute", "gpu3 H2D", "node1 nvme read", or the stream's own name
  int node = 0;
  int gpu = -1;      // global GPU index, -1 for node-level resources
};

}  // namespace starfish::des
