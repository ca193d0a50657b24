#include "gui/plan_columns.h"

#include <QAction>
#include <QEvent>
#include <QHeaderView>
#include <QMenu>
#include <QScrollBar>
#include <QTableView>
#include <QTimer>
#include <algorithm>

namespace starfish::gui {
namespace {

// Hidden first when the table is too wide: what the Details tab and the other columns already
// say (the label, which model predicted, the chunk size, the schedule, the framework), then the secondary numbers.
constexpr int kDropOrder[] = {PlanTableModel::ColPlan,     PlanTableModel::ColSource,   PlanTableModel::ColChunk,
                              PlanTableModel::ColSchedule, PlanTableModel::ColFramework, PlanTableModel::ColCpuMem,
                              PlanTableModel::ColIteration,
                              PlanTableModel::ColCost,     PlanTableModel::ColRecompute, PlanTableModel::ColMicro};

}  // namespace

PlanColumns::PlanColumns(QTableView* table, QObject* parent) : QObject(parent), table_(table) {
  choice_.fill(Choice::automatic);
  choice_[PlanTableModel::ColPlan] = Choice::hidden;  // the columns say it all; the label is in Details
  QHeaderView* header = table_->horizontalHeader();
  header->setContextMenuPolicy(Qt::CustomContextMenu);
  header->setToolTip("Right-click to choose the columns");
  connect(header, &QHeaderView::customContextMenuRequested, this, &PlanColumns::showMenu);
  table_->viewport()->installEventFilter(this);
  // After a new result the contents' widths change: fit once the view has laid them out.
  connect(table_->model(), &QAbstractItemModel::modelReset, this, [this] { QTimer::singleShot(0, this, &PlanColumns::fit); });
  fit();
}

void PlanColumns::choose(int column, bool shown) {
  if (column == PlanTableModel::ColRank) return;  // the rank always shows
  choice_[column] = shown ? Choice::shown : Choice::hidden;
  fit();
}

bool PlanColumns::shown(int column) const { return !table_->isColumnHidden(column); }

int PlanColumns::contentWidth() const {
  // QTableView's override is protected; QAbstractItemView's is public (same virtual).
  const QAbstractItemView* view = table_;
  int width = 0;
  for (int c = 0; c < PlanTableModel::ColumnCount; ++c)
    if (!table_->isColumnHidden(c))
      width += std::max(view->sizeHintForColumn(c), table_->horizontalHeader()->sectionSizeHint(c));
  return width;
}

void PlanColumns::fit() {
  if (fitting_) return;
  fitting_ = true;
  for (int c = 0; c < PlanTableModel::ColumnCount; ++c) table_->setColumnHidden(c, choice_[c] == Choice::hidden);
  const int room = table_->viewport()->width();
  for (int c : kDropOrder) {
    if (contentWidth() <= room) break;
    if (choice_[c] == Choice::automatic) table_->setColumnHidden(c, true);
  }
  fitting_ = false;
}

bool PlanColumns::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_->viewport() && event->type() == QEvent::Resize) fit();
  return QObject::eventFilter(watched, event);
}

void PlanColumns::showMenu(const QPoint& at) {
  QMenu menu;
  for (int c = PlanTableModel::ColRank + 1; c < PlanTableModel::ColumnCount; ++c) {
    QAction* a = menu.addAction(table_->model()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    a->setCheckable(true);
    a->setChecked(shown(c));
    connect(a, &QAction::toggled, this, [this, c](bool on) { choose(c, on); });
  }
  menu.exec(table_->horizontalHeader()->mapToGlobal(at));
}

}  // namespace starfish::gui
