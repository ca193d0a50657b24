#pragma once
// One-line and JSON renderings of a job's plan, shared by the CLI verbs.
#include <string>

#include "sim/spec/job.h"
#include "sim/spec/json_writer.h"

namespace starfish::cli {

// "TP8 PP16 DP8 1f1b v1 micro-batch 1 (192 per pipeline) ZeRO-0 recompute full bf16 adam"
std::string plan_summary(const Job& job);
void write_plan_json(JsonWriter& w, const Job& job);

}  // namespace starfish::cli
