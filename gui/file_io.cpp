#include "gui/file_io.h"

#include <QFile>
#include <QFileInfo>
#include <QMessageBox>

#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"

namespace starfish::gui {

ConfirmOverwrite dialog_confirm(QWidget* parent) {
  return [parent](const QString& path) {
    return QMessageBox::question(parent, "Replace file?",
                                 QString("%1 already exists.\nReplace it?").arg(path),
                                 QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
  };
}

bool save_text(const QString& path, const std::string& text, const ConfirmOverwrite& confirm) {
  const bool exists = QFileInfo::exists(path);
  if (exists && !(confirm && confirm(path))) return false;
  save_text_file(path.toStdString(), text, exists);
  return true;
}

QString read_text(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) throw SpecError(path.toStdString() + ": cannot open the file");
  return QString::fromUtf8(f.readAll());
}

}  // namespace starfish::gui
