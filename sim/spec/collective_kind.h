#pragma once
// The one enum of collectives, shared by the cost model, the chunk runtime's Backend and the
// event simulator (it lives in spec, the part every other one builds on).
namespace starfish {

enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all, send_recv };

// "all-reduce", "all-gather", ... as written in move logs and traces.
const char* to_string(CollectiveKind k);

}  // namespace starfish
