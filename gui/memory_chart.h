#pragma once
// Memory of the chosen plan per tier as stacked bars (params, grads, optimizer, activations,
// buffers) on GPU (per GPU, most loaded stage), CPU and NVMe (per node). Each bar is a
// percentage of the tier's usable capacity, so a 80 GiB GPU and a 2 TiB host read on one axis;
// the 100% line is the capacity and the category labels carry the absolute numbers.
#include <QtCharts/QChartView>

#include "sim/cost/estimate.h"

class QBarSet;
class QBarCategoryAxis;
class QValueAxis;

namespace starfish::gui {

class MemoryChart : public QChartView {
  Q_OBJECT
 public:
  explicit MemoryChart(QWidget* parent = nullptr);
  void setEstimate(const Estimate& e, const QString& title);
  void clear();

  // For tests and tooltips: the set of one state class ("params", "grads", "optimizer",
  // "activations", "buffers"); values are % of capacity in the order GPU, CPU, NVMe.
  QBarSet* set(const QString& label) const;
  QStringList categories() const;

 private:
  QList<QBarSet*> sets_;
  QBarCategoryAxis* axis_x_;
  QValueAxis* axis_y_;
};

}  // namespace starfish::gui
