#pragma once
// Where the GUI finds the bundled hwprofiles and model configs, and the executor binary.
#include <QString>
#include <QStringList>

namespace starfish::gui {

// The repository root the bundled files come from: $STARFISH_HOME when set, else the source
// tree the program was built from (STARFISH_SOURCE_DIR).
QString data_root();

// "<root>/hwprofiles/<name>.yaml" and "<root>/configs/models/<name>.yaml", sorted by name.
QStringList bundled_hwprofiles();
QStringList bundled_models();

// A bundled name ("dgx-h100") or a path; returns the file path (the name's file when it exists).
QString resolve_hwprofile(const QString& name_or_path);
QString resolve_model(const QString& name_or_path);

// `starfish-run`: next to this program (the build tree puts exec/ beside gui/), then on PATH.
// Empty when absent.
QString find_starfish_run();

}  // namespace starfish::gui
