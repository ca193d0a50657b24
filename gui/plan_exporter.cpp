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
    case ExportFormat::deepspeed: return "DeepSpeed config (*.json)";
  }
  return {};
}

QString default_export_name(ExportFormat f) {
  switch (f) {
    case ExportFormat::plan_yaml: return "plan.yaml";
    case ExportFormat::megatron: return "megatron-args.sh";
    case ExportFormat::deepspeed: return "deepspeed.json";
  }
  return {};
}

QStringList export_plan(const Job& job, ExportFormat format, const QString& path, const ExportSources& sources,
                        const ConfirmOverwrite& confirm) {
  QStringList written;
  if (format == ExportFormat::megatron || format == ExportFormat::deepspeed) {
    const std::string why = format == ExportFormat::megatron ? search::megatron_unsupported(job) : search::deepspeed_unsupported(job);
    if (!why.empty()) throw SpecError(why);
    const std::string text = format == ExportFormat::megatron ? search::megatron_arguments(job) : search::deepspeed_config(job);
    if (save_text(path, text, confirm)) written << path;
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
