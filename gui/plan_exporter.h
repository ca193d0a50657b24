#pragma once
// Exports the chosen plan through the search's exporters (sim/search/plan_export.h): a Starfish
// plan file, Megatron-LM arguments, a Megatron-Bridge command, a DeepSpeed JSON config or a
// torchtitan recipe module. A plan file names its model and
// hardware by paths relative to itself; when the model or hardware on screen is not a saved
// file (edited, imported), it is written next to the plan as <stem>.model.yaml /
// <stem>.hardware.yaml so the plan loads back to the same job.
#include <QString>
#include <QStringList>

#include "gui/file_io.h"
#include "sim/spec/job.h"

namespace starfish::gui {

enum class ExportFormat { plan_yaml, megatron, megatron_bridge, deepspeed, torchtitan };
inline constexpr int kExportFormats = 5;

QString export_filter(ExportFormat f);        // file dialog filter
QString default_export_name(ExportFormat f);  // "plan.yaml", "megatron-args.sh", ..., "starfish_plan.py"

struct ExportSources {
  QString model_path;     // the saved file the job's model is exactly; "" = write a companion
  QString hardware_path;  // likewise for the hardware
};

// Writes the export (and any companions) to `path`. Returns the files written, empty when the
// user declined to overwrite. Throws SpecError when the framework cannot express the plan
// (Megatron: ZeRO-2/3, offload, chunks; DeepSpeed: chunks, interleaving; torchtitan: ZeRO-1,
// non-LLaMA models) or a write fails.
QStringList export_plan(const Job& job, ExportFormat format, const QString& path, const ExportSources& sources,
                        const ConfirmOverwrite& confirm);

}  // namespace starfish::gui
