#include "gui/plan_table_model.h"

#include <algorithm>
#include <numeric>

#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }

QString tier_letter(Tier t) { return t == Tier::gpu ? "G" : t == Tier::cpu ? "C" : "N"; }

}  // namespace

PlanTableModel::PlanTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PlanTableModel::setResult(std::shared_ptr<const search::SearchResult> result) {
  beginResetModel();
  result_ = std::move(result);
  order_.resize(result_ ? result_->rows.size() : 0);
  std::iota(order_.begin(), order_.end(), 0);
  endResetModel();
}

int PlanTableModel::searchRow(int table_row) const {
  return table_row >= 0 && table_row < static_cast<int>(order_.size()) ? order_[table_row] : -1;
}

int PlanTableModel::tableRow(int search_row) const {
  const auto it = std::find(order_.begin(), order_.end(), search_row);
  return it == order_.end() ? -1 : static_cast<int>(it - order_.begin());
}

int PlanTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(order_.size()); }
int PlanTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* names[ColumnCount] = {"#", "Plan", "TP", "PP", "DP", "mb", "ZeRO", "Schedule", "Recompute",
                                           "Offload p/g/o", "Chunk", "Framework", "Tokens/s", "by", "MFU", "Iteration", "GPU mem", "CPU mem/node", "$ / M tokens"};
  static const char* tips[ColumnCount] = {
      "Rank by throughput", "Short label", "Tensor parallel", "Pipeline parallel (x virtual stages)", "Data parallel",
      "Micro-batch (sequences)", "ZeRO stage", "Pipeline schedule", "Activation recompute",
      "Tier of params / grads / optimizer states: G = GPU, C = CPU, N = NVMe", "Chunk runtime chunk size in elements (static: no chunks)",
      "Who runs it as costed: the search's framework, or the one that runs its chunks (starfish) or offload (deepspeed, fsdp)",
      "Predicted tokens per second", "Which model predicted it: des = the event simulator, analytic = closed forms", "Model FLOP utilisation", "One iteration",
      "Peak per GPU, most loaded stage", "Per node", "With the profile's price per GPU hour"};
  if (role == Qt::DisplayRole) return names[section];
  if (role == Qt::ToolTipRole) return tips[section];
  return {};
}

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
  const int sr = searchRow(index.row());
  if (sr < 0 || !result_) return {};
  const search::Row& r = result_->rows[sr];
  if (role == Qt::DisplayRole) return display(r, sr + 1, index.column());
  if (role == SortRole) return value(r, sr + 1, index.column());
  if (role == Qt::TextAlignmentRole)
    return index.column() >= ColTokensPerS || (index.column() >= ColTP && index.column() <= ColZeRO)
               ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
  return {};
}

QVariant PlanTableModel::value(const search::Row& r, int rank, int column) const {
  const Plan& p = r.plan;
  switch (column) {
    case ColRank: return rank;
    case ColPlan: return q(r.label());
    case ColTP: return p.tp;
    case ColPP: return p.pp * p.virtual_stages;
    case ColDP: return p.dp;
    case ColMicro: return p.micro_batch;
    case ColZeRO: return p.zero_stage;
    case ColSchedule: return QString(to_string(p.schedule));
    case ColRecompute: return q(recompute_text(p));
    case ColOffload: return tier_letter(p.offload.params) + tier_letter(p.offload.grads) + tier_letter(p.offload.optimizer);
    case ColChunk: return static_cast<qlonglong>(p.chunk_elements);
    case ColFramework: return QString(to_string(p.framework));
    case ColTokensPerS: return r.tokens_per_s;
    case ColSource: return r.refined ? QString::fromStdString(r.refined->source) : QString("analytic");
    case ColMFU: return r.refined ? r.refined->mfu : r.analytic.mfu;
    case ColIteration: return r.refined ? r.refined->iteration_s : r.analytic.time.iteration_s;
    case ColGpuMem: return r.analytic.gpu.total();
    case ColCpuMem: return r.analytic.cpu.total();
    case ColCost: return r.cost_per_million_tokens;
  }
  return {};
}

QVariant PlanTableModel::display(const search::Row& r, int rank, int column) const {
  const QVariant v = value(r, rank, column);
  switch (column) {
    case ColPP:
      return r.plan.virtual_stages > 1 ? QString("%1x%2").arg(r.plan.pp).arg(r.plan.virtual_stages) : v;
    case ColChunk:
      return r.plan.chunk_elements > 0 ? q(units::format_count(r.plan.chunk_elements)) : QString("static");
    case ColTokensPerS: return q(units::human_count(v.toDouble()));
    case ColMFU: return QString("%1%").arg(v.toDouble() * 100, 0, 'f', 1);
    case ColIteration: return q(units::human_seconds(v.toDouble()));
    case ColGpuMem:
    case ColCpuMem: return q(units::human_bytes(v.toDouble()));
    case ColCost: return v.toDouble() > 0 ? QString("%1").arg(v.toDouble(), 0, 'f', 2) : QString("-");
    default: return v;
  }
}

void PlanTableModel::sort(int column, Qt::SortOrder order) {
  if (!result_) return;
  Q_EMIT layoutAboutToBeChanged();
  const QModelIndexList before = persistentIndexList();
  std::vector<int> rows_before;
  for (const QModelIndex& i : before) rows_before.push_back(searchRow(i.row()));
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    const QVariant va = value(result_->rows[a], a + 1, column), vb = value(result_->rows[b], b + 1, column);
    const QPartialOrdering c = QVariant::compare(va, vb);
    if (c == QPartialOrdering::Equivalent || c == QPartialOrdering::Unordered) return a < b;
    return order == Qt::AscendingOrder ? c == QPartialOrdering::Less : c == QPartialOrdering::Greater;
  });
  for (int i = 0; i < before.size(); ++i)
    changePersistentIndex(before[i], index(tableRow(rows_before[i]), before[i].column()));
  Q_EMIT layoutChanged();
}

}  // namespace starfish::gui
