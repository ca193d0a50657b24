#pragma once
// Saving from the GUI: never overwrite a file without asking. The question is a hook so tests
// (and scripted runs) can answer it without a modal dialog.
#include <QString>
#include <functional>

class QWidget;

namespace starfish::gui {

// Asked when `path` exists; true = replace it. The default shows a QMessageBox.
using ConfirmOverwrite = std::function<bool(const QString& path)>;
ConfirmOverwrite dialog_confirm(QWidget* parent);

// Writes `text` through starfish::save_text_file (atomic). Returns false when the user declined
// to overwrite; throws SpecError / std::exception when the write fails.
bool save_text(const QString& path, const std::string& text, const ConfirmOverwrite& confirm);

QString read_text(const QString& path);  // throws SpecError when unreadable

}  // namespace starfish::gui
