#include "gui/app_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace starfish::gui {
namespace {

QStringList yaml_files(const QString& folder) {
  QDir dir(folder);
  QStringList out;
  for (const QString& f : dir.entryList({"*.yaml"}, QDir::Files, QDir::Name)) out << dir.filePath(f);
  return out;
}

QString resolve(const QString& name_or_path, const QString& folder) {
  if (QFileInfo::exists(name_or_path)) return name_or_path;
  const QString bundled = QDir(folder).filePath(name_or_path + ".yaml");
  return QFileInfo::exists(bundled) ? bundled : name_or_path;
}

}  // namespace

QString data_root() {
  const QString env = qEnvironmentVariable("STARFISH_HOME");
  if (!env.isEmpty()) return env;
  return QStringLiteral(STARFISH_SOURCE_DIR);
}

QStringList bundled_hwprofiles() { return yaml_files(data_root() + "/hwprofiles"); }
QStringList bundled_models() { return yaml_files(data_root() + "/configs/models"); }
QString resolve_hwprofile(const QString& n) { return resolve(n, data_root() + "/hwprofiles"); }
QString resolve_model(const QString& n) { return resolve(n, data_root() + "/configs/models"); }

QString find_starfish_run() {
  const QString app_dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {app_dir + "/starfish-run", app_dir + "/../exec/starfish-run"}) {
    const QFileInfo fi(candidate);
    if (fi.isFile() && fi.isExecutable()) return fi.canonicalFilePath();
  }
  return QStandardPaths::findExecutable("starfish-run");
}

}  // namespace starfish::gui
