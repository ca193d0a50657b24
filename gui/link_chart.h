#pragma once
// The busiest links of the simulated iteration: utilisation (bytes / (bandwidth x iteration))
// as horizontal bars, busiest at the top, with the bytes each carried in the tooltip.
#include <QtCharts/QChartView>
#include <vector>

#include "sim/schedule/simulate.h"

class QBarSet;
class QBarCategoryAxis;
class QValueAxis;

namespace starfish::gui {

class LinkChart : public QChartView {
  Q_OBJECT
 public:
  explicit LinkChart(QWidget* parent = nullptr);
  void setLinks(const std::vector<schedule::LinkReport>& links, int max_links = 12);
  void clear();

  QBarSet* utilisation() const { return set_; }  // percent, busiest last (bottom-up axis)
  QStringList linkNames() const;                 // in the same order as the set

 private:
  QBarSet* set_;
  QBarCategoryAxis* axis_y_;
  QValueAxis* axis_x_;
};

}  // namespace starfish::gui
