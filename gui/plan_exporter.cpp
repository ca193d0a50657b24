#include "gui/plan_exporter.h"

#include <QDir>
#include <QFileInfo>

#include "sim/search/plan_export.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

namespace starfish::gui {

QString export_filter(ExportFormat f) {
  switch (f) {
    case ExportFormat::plan_yaml: return "Starfish plan (*.yaml)";
    case ExportFormat::megatron: return "Megatron-LM arguments (*.sh *.txt)";
    case ExportFormat::megatron_bridge: return "Megatron-Bridge command (*.sh *.txt)";
    case ExportFormat::deepspeed: return "DeepSpeed config (*.json)";
    case ExportFormat::torchtitan: return "torchtitan recipe (*.py)";
  }
  return {};
}

QString default_export_name(ExportFormat f) {
  switch (f) {
    case ExportFormat::plan_yaml: return "plan.yaml";
    case ExportFormat::megatron: return "megatron-args.sh";
    case ExportFormat::megatron_bridge: return "megatron-bridge.sh";
    case ExportFormat::deepspeed: return "deepspeed.json";
    case ExportFormat::torchtitan: return "starfish_plan.py";  // the module its launch line names
  }
  return {};
}

namespace {

// A framework's refusal of the job ("" when it runs it) and its export's text.
std::string framework_refusal(const Job& job, ExportFormat f) {
  switch (f) {
    case ExportFormat::megatron: return search::megatron_unsupported(job);
    case ExportFormat::megatron_bridge: return search::megatron_bridge_unsupported(job);
    case ExportFormat::deepspeed: return search::deepspeed_unsupported(job);
    case ExportFormat::torchtitan: return search::torchtitan_unsupported(job);
    case ExportFormat::plan_yaml: break;
  }
  return "";
}
std::string framework_text(const Job& job, ExportFormat f) {
  switch (f) {
    case ExportFormat::megatron: return search::megatron_arguments(job);
    case ExportFormat::megatron_bridge: return search::megatron_bridge_command(job);
    case ExportFormat::deepspeed: return search::deepspeed_config(job);
    case ExportFormat::torchtitan: return search::torchtitan_recipe(job).text;
    case ExportFormat::plan_yaml: break;
  }
  return "";
}

}  // namespace

QStringList export_plan(const Job& job, ExportFormat format, const QString& path, const ExportSources& sources,
                        const ConfirmOverwrite& confirm) {
  QStringList written;
  if (format != ExportFormat::plan_yaml) {
    if (const std::string why = framework_refusal(job, format); !why.empty()) throw SpecError(why);
    if (save_text(path, framework_text(job, format), confirm)) written << path;
    return written;
  }
  const QFileInfo plan(path);
  const QDir dir = plan.absoluteDir();
  const QString stem = plan.completeBaseName();
  QString model = sources.model_path, hardware = sources.hardware_path;
  // Companions first: a plan naming a file that is not there would not load.
  if (model.isEmpty()) {
    model = dir.filePath(stem + ".model.yaml");
    if (!save_text(model, to_yaml(job.model), confirm)) return {};
    written << model;
  }
  if (hardware.isEmpty()) {
    hardware = dir.filePath(stem + ".hardware.yaml");
    if (!save_text(hardware, to_yaml(job.cluster), confirm)) return {};
    written << hardware;
  }
  const std::string text = search::plan_file_yaml(job, dir.relativeFilePath(QFileInfo(model).absoluteFilePath()).toStdString(),
                                                  dir.relativeFilePath(QFileInfo(hardware).absoluteFilePath()).toStdString());
  if (!save_text(path, text, confirm)) return {};
  written << path;
  return written;
}

}  // namespace starfish::gui
