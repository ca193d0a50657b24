#pragma once
// The ranked plans of a search as a table. Sorting happens here (QTableView calls sort()):
// numeric columns sort by value, not by their rendered text. searchRow() maps a table row back
// to the search result's row.
#include <QAbstractTableModel>
#include <memory>
#include <vector>

#include "sim/search/search.h"

namespace starfish::gui {

class PlanTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ColRank, ColPlan, ColTP, ColPP, ColDP, ColMicro, ColZeRO, ColSchedule, ColRecompute, ColOffload, ColChunk, ColFramework, ColTokensPerS, ColSource, ColMFU, ColIteration, ColGpuMem, ColCpuMem, ColCost, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // the raw number behind a cell

  explicit PlanTableModel(QObject* parent = nullptr);

  void setResult(std::shared_ptr<const search::SearchResult> result);
  const search::SearchResult* result() const { return result_.get(); }
  int searchRow(int table_row) const;  // -1 when out of range
  int tableRow(int search_row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  void sort(int column, Qt::SortOrder order) override;

 private:
  QVariant display(const search::Row& r, int rank, int column) const;
  QVariant value(const search::Row& r, int rank, int column) const;
  std::shared_ptr<const search::SearchResult> result_;
  std::vector<int> order_;  // table row -> search row
};

}  // namespace starfish::gui
