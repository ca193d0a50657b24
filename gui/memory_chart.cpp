#include "gui/memory_chart.h"

#include <QtCharts/QBarCategoryAxis>
#include <QtCharts/QBarSet>
#include <QtCharts/QLineSeries>
#include <QtCharts/QStackedBarSeries>
#include <QtCharts/QValueAxis>
#include <algorithm>

#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

const char* kClasses[] = {"params", "grads", "optimizer", "activations", "buffers"};
const QColor kColours[] = {QColor(0x3b, 0x75, 0xaf), QColor(0xef, 0x8a, 0x3c), QColor(0x51, 0x9e, 0x3e),
                           QColor(0xc5, 0x3a, 0x32), QColor(0x8d, 0x69, 0xb8)};

double part(const TierUse& t, int i) {
  switch (i) {
    case 0: return t.params_bytes;
    case 1: return t.grads_bytes;
    case 2: return t.optimizer_bytes;
    case 3: return t.activations_bytes;
    default: return t.buffers_bytes;
  }
}

QString tier_label(const char* name, const TierUse& t) {
  const QString used = QString::fromStdString(units::human_bytes(t.total()));
  if (t.capacity_bytes <= 0) return QString("%1: none").arg(name);
  return QString("%1: %2 / %3").arg(name, used, QString::fromStdString(units::human_bytes(t.capacity_bytes)));
}

}  // namespace

MemoryChart::MemoryChart(QWidget* parent) : QChartView(parent) {
  auto* chart = new QChart;
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  auto* series = new QStackedBarSeries;
  for (int i = 0; i < 5; ++i) {
    auto* s = new QBarSet(kClasses[i]);
    s->setColor(kColours[i]);
    s->setBorderColor(kColours[i].darker(120));
    s->append({0, 0, 0});
    series->append(s);
    sets_ << s;
  }
  series->setBarWidth(0.55);
  chart->addSeries(series);
  axis_x_ = new QBarCategoryAxis;
  axis_x_->append({"GPU", "CPU", "NVMe"});
  axis_y_ = new QValueAxis;
  axis_y_->setRange(0, 100);
  axis_y_->setLabelFormat("%.0f%%");
  axis_y_->setTitleText("of usable capacity");
  chart->addAxis(axis_x_, Qt::AlignBottom);
  chart->addAxis(axis_y_, Qt::AlignLeft);
  series->attachAxis(axis_x_);
  series->attachAxis(axis_y_);
  // The capacity line: x runs over category indices (-0.5 .. 2.5 spans the three bars).
  auto* cap = new QLineSeries;
  cap->setName("capacity");
  cap->append(-0.5, 100);
  cap->append(2.5, 100);
  QPen pen(QColor(0x90, 0x20, 0x20));
  pen.setStyle(Qt::DashLine);
  pen.setWidth(2);
  cap->setPen(pen);
  chart->addSeries(cap);
  auto* axis_cap = new QValueAxis;
  axis_cap->setRange(-0.5, 2.5);
  axis_cap->setVisible(false);
  chart->addAxis(axis_cap, Qt::AlignTop);
  cap->attachAxis(axis_cap);
  cap->attachAxis(axis_y_);
  chart->setTitle("Memory per tier (choose a plan)");
  setChart(chart);
  setRenderHint(QPainter::Antialiasing);
  setMinimumHeight(220);
}

void MemoryChart::setEstimate(const Estimate& e, const QString& title) {
  const TierUse* tiers[3] = {&e.gpu, &e.cpu, &e.nvme};
  double top = 100;
  for (int c = 0; c < 3; ++c) {
    const double cap = tiers[c]->capacity_bytes;
    double sum = 0;
    for (int i = 0; i < 5; ++i) {
      const double pct = cap > 0 ? part(*tiers[c], i) / cap * 100 : 0;
      sets_[i]->replace(c, pct);
      sum += pct;
    }
    top = std::max(top, sum);
  }
  axis_y_->setRange(0, top > 100 ? top * 1.05 : 110);
  axis_y_->applyNiceNumbers();
  axis_x_->clear();
  axis_x_->append({tier_label("GPU", e.gpu), tier_label("CPU/node", e.cpu), tier_label("NVMe/node", e.nvme)});
  chart()->setTitle(title);
}

void MemoryChart::clear() {
  for (QBarSet* s : sets_)
    for (int c = 0; c < 3; ++c) s->replace(c, 0);
  chart()->setTitle("Memory per tier (choose a plan)");
}

QBarSet* MemoryChart::set(const QString& label) const {
  for (QBarSet* s : sets_)
    if (s->label() == label) return s;
  return nullptr;
}

QStringList MemoryChart::categories() const { return axis_x_->categories(); }

}  // namespace starfish::gui
