#pragma once
// Which columns of the plan table are shown. The user chooses them from the header's context
// menu; unless chosen, the least telling columns are hidden, one by one, while the table is
// wider than its viewport (no horizontal scrolling at the window's usual 1600x1000), and shown
// again when there is room. A column the user turned on stays on.
#include <QObject>
#include <array>

#include "gui/plan_table_model.h"

class QTableView;

namespace starfish::gui {

class PlanColumns : public QObject {
  Q_OBJECT
 public:
  PlanColumns(QTableView* table, QObject* parent = nullptr);

  // The user's choice (what the header menu does): shown stays shown whatever the width.
  void choose(int column, bool shown);
  bool shown(int column) const;
  void fit();  // hide or show the unchosen columns for the viewport's width

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void showMenu(const QPoint& at);
  int contentWidth() const;  // of the visible columns

  enum class Choice { automatic, shown, hidden };
  QTableView* table_;
  std::array<Choice, PlanTableModel::ColumnCount> choice_{};
  bool fitting_ = false;
};

}  // namespace starfish::gui
