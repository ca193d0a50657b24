#include "gui/link_chart.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QHorizontalBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

#include "sim/spec/units.h"

namespace starfish::gui {

LinkChart::LinkChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->hide();
  chart->setMargins(QMargins(4, 4, 4, 4));
  auto* series = new QHorizontalBarSeries;
  set_ = new QBarSet("utilisation");
  set_->setColor(QColor(0x2a, 0x9d, 0x8f));
  series->append(set_);
  series->setBarWidth(0.7);
  chart->addSeries(series);
  axis_y_ = new QBarCategoryAxis;
  axis_x_ = new QValueAxis;
  axis_x_->setRange(0, 100);
  axis_x_->setLabelFormat("%.0f%%");
  axis_x_->setTitleText("busy fraction of the iteration (bytes / bandwidth)");
  chart->addAxis(axis_y_, Qt::AlignLeft);
  chart->addAxis(axis_x_, Qt::AlignBottom);
  series->attachAxis(axis_y_);
  series->attachAxis(axis_x_);
  chart->setTitle("Busiest links (choose a plan)");
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  connect(set_, &QBarSet::hovered, this, [this](bool on, int i) {
    setToolTip(on && i >= 0 && i < axis_y_->count() ? axis_y_->at(i) + QString(": %1%").arg(set_->at(i), 0, 'f', 1) : QString());
  });
}

void LinkChart::setLinks(const std::vector<schedule::LinkReport>& links, int max_links) {
  std::vector<const schedule::LinkReport*> top;
  for (const auto& l : links) top.push_back(&l);
  std::stable_sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->utilisation > b->utilisation; });
  if (static_cast<int>(top.size()) > max_links) top.resize(max_links);
  std::reverse(top.begin(), top.end());  // the axis runs bottom-up: busiest on top
  set_->remove(0, set_->count());
  axis_y_->clear();
  double hi = 0;
  for (const auto* l : top) {
    set_->append(l->utilisation * 100);
    hi = std::max(hi, l->utilisation * 100);
    axis_y_->append(QString("%1 (%2, %3)")
                        .arg(QString::fromStdString(l->name), QString::fromStdString(l->kind),
                             QString::fromStdString(units::human_bytes(l->bytes))));
  }
  axis_x_->setRange(0, std::max(5.0, std::min(100.0, hi * 1.15)));
  chart()->setTitle(top.empty() ? "No link carried bytes" : QString("Busiest %1 of %2 links").arg(top.size()).arg(links.size()));
}

void LinkChart::clear() {
  set_->remove(0, set_->count());
  axis_y_->clear();
  chart()->setTitle("Busiest links (choose a plan)");
}

QStringList LinkChart::linkNames() const { return axis_y_->categories(); }

}  // namespace starfish::gui
