#pragma once
// YAML load and save for every spec. Loading is strict (see yaml_reader.h); saving writes
// canonical unit strings so that load(save(x)) == x.
#include <iosfwd>
#include <optional>
#include <string>

#include "sim/spec/hardware.h"
#include "sim/spec/model.h"
#include "sim/spec/plan.h"
#include "sim/spec/training.h"

namespace YAML {
class Node;
}

namespace starfish {

// A plan file: how to train (training + plan) and, optionally, what on (paths to a model and a
// hardware profile, relative to the plan file).
struct PlanFile {
  std::optional<std::string> model_path;     // resolved against the plan file's folder
  std::optional<std::string> hardware_path;
  std::optional<int> nodes;                  // overrides the hardware file's node count
  Training training;
  Plan plan;
  bool operator==(const PlanFile&) const = default;
};

Cluster load_cluster(const std::string& path);
Model load_model(const std::string& path);
PlanFile load_plan_file(const std::string& path);

// From already-parsed YAML (`file` names the source in errors).
Cluster parse_cluster(const YAML::Node& root, const std::string& file);
Model parse_model(const YAML::Node& root, const std::string& file);
PlanFile parse_plan_file(const YAML::Node& root, const std::string& file);
Cluster parse_cluster_text(const std::string& yaml, const std::string& file = "<text>");
Model parse_model_text(const std::string& yaml, const std::string& file = "<text>");
PlanFile parse_plan_file_text(const std::string& yaml, const std::string& file = "<text>");

// What is wrong with a sliding window's full_every on a model of `layers` layers ("" when
// nothing): the model file's check (field sliding_window.full_every) and the GUI editor's.
std::string sliding_window_full_every_problem(const SlidingWindow& window, int layers);

std::string to_yaml(const Cluster& c);
std::string to_yaml(const Model& m);
std::string to_yaml(const PlanFile& p);

// Writes atomically (temp file + rename) and refuses to replace an existing file unless
// `overwrite` is set: nothing a user wrote is lost by accident.
void save_text_file(const std::string& path, const std::string& text, bool overwrite);

}  // namespace starfish
