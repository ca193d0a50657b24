#include "gui/gantt_view.h"

#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QPainter>
#include <QPaintEvent>
#include <QScrollArea>
#include <QResizeEvent>
#include <QScrollBar>
#include <QShowEvent>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

constexpr double kBasePixelsPerIteration = 1000;  // zoom 1: the iteration is 1000 px wide
constexpr double kMinStackPixels = 2;             // a category in a binned pixel column: at least this tall

const std::vector<std::pair<std::string, QColor>>& category_palette() {
  static const std::vector<std::pair<std::string, QColor>> p = {
      {"fwd", QColor(0x4c, 0x8b, 0xd6)},     {"bwd", QColor(0x3f, 0xa3, 0x5b)},  {"recompute", QColor(0xf2, 0xa1, 0x3b)},
      {"optimizer", QColor(0x8e, 0x5c, 0xc2)}, {"tp", QColor(0xd9, 0x4f, 0x4f)},  {"pp", QColor(0xe0, 0xc0, 0x1a)},
      {"dp", QColor(0xa0, 0x6a, 0x3c)},      {"offload", QColor(0x80, 0x80, 0x80)}};
  return p;
}

int category_index(const std::string& c) {
  const auto& p = category_palette();
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i].first == c) return static_cast<int>(i);
  return 8;
}

// Union length of sorted spans, clipped to [0, end].
double busy_time(const std::vector<schedule::TaskSpan>& spans) {
  double busy = 0, cur_start = 0, cur_end = -1;
  for (const auto& s : spans) {
    if (s.start_s > cur_end) {
      if (cur_end > cur_start) busy += cur_end - cur_start;
      cur_start = s.start_s;
      cur_end = s.end_s;
    } else {
      cur_end = std::max(cur_end, s.end_s);
    }
  }
  if (cur_end > cur_start) busy += cur_end - cur_start;
  return busy;
}

double nice_step(double span_s, double pixels) {
  const double target = span_s / std::max(1.0, pixels / 110);
  const double p = std::pow(10, std::floor(std::log10(target)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= target) return m * p;
  return 10 * p;
}

}  // namespace

GanttView::GanttView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setBackgroundRole(QPalette::Base);
  setAutoFillBackground(true);
}

bool GanttView::isCompute(const std::string& c) { return c == "fwd" || c == "bwd" || c == "recompute" || c == "optimizer"; }

QColor GanttView::colour(const std::string& category) {
  for (const auto& [name, c] : category_palette())
    if (name == category) return c;
  return QColor(0xb0, 0xb0, 0xb0);
}

void GanttView::setReport(const schedule::SimReport& report) {
  rows_.clear();
  iteration_s_ = report.iteration_s;
  std::map<int, Row> by_stage;
  for (const auto& s : report.spans) {
    Row& r = by_stage[s.stage];
    r.stage = s.stage;
    (isCompute(s.category) ? r.compute : r.comm).push_back(s);
    iteration_s_ = std::max(iteration_s_, s.end_s);
  }
  for (auto& [stage, r] : by_stage) {
    auto by_start = [](const auto& a, const auto& b) { return a.start_s < b.start_s; };
    std::stable_sort(r.compute.begin(), r.compute.end(), by_start);
    std::stable_sort(r.comm.begin(), r.comm.end(), by_start);
    r.idle_fraction = iteration_s_ > 0 ? 1 - busy_time(r.compute) / iteration_s_ : 0;
    if (stage >= 0) rows_.push_back(std::move(r));
  }
  if (auto it = by_stage.find(-1); it != by_stage.end()) rows_.push_back(std::move(it->second));  // "other" last
  updateGeometry();
  resize(sizeHint());
  update();
}

void GanttView::clear() {
  rows_.clear();
  iteration_s_ = 0;
  updateGeometry();
  update();
}

int GanttView::spanCount() const {
  int n = 0;
  for (const Row& r : rows_) n += static_cast<int>(r.compute.size() + r.comm.size());
  return n;
}

QString GanttView::rowLabel(int row) const {
  const Row& r = rows_.at(row);
  const QString name = r.stage >= 0 ? QString("stage %1").arg(r.stage) : QString("other");
  return QString("%1  idle %2%").arg(name).arg(r.idle_fraction * 100, 0, 'f', 0);
}

double GanttView::idleFraction(int row) const { return rows_.at(row).idle_fraction; }

void GanttView::setZoom(double z) {
  z = std::clamp(z, 0.05, 5000.0);
  if (z == zoom_) return;
  zoom_ = z;
  updateGeometry();
  resize(sizeHint());
  update();
  Q_EMIT zoomChanged(zoom_);
}

void GanttView::fitWidth(int pixels) { setZoom(std::max(0.05, (pixels - kGutter - 12) / kBasePixelsPerIteration)); }

QSize GanttView::sizeHint() const {
  const int w = kGutter + static_cast<int>(std::ceil(kBasePixelsPerIteration * zoom_)) + 12;
  return QSize(w, rowTop(rowCount()) + 4);
}

int GanttView::rowTop(int row) const { return kHeader + row * (2 * kLane + kRowGap); }

double GanttView::x_of(double t) const {
  return kGutter + (iteration_s_ > 0 ? t / iteration_s_ : 0) * kBasePixelsPerIteration * zoom_;
}

void GanttView::paintEvent(QPaintEvent* e) {
  QPainter p(this);
  const QRect clip = e->rect();
  p.fillRect(clip, palette().color(QPalette::Base));
  if (rows_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, "Choose a plan to simulate its iteration");
    return;
  }
  paintTimeAxis(p, clip);
  for (int i = 0; i < rowCount(); ++i) {
    const int top = rowTop(i);
    if (top > clip.bottom() || top + 2 * kLane < clip.top()) continue;
    paintRow(p, clip, rows_[i], top);
  }
}

// The time axis: a tick and its time at each nice step of the iteration.
void GanttView::paintTimeAxis(QPainter& p, const QRect& clip) const {
  const double x0 = x_of(0), x1 = x_of(iteration_s_);
  const double step = nice_step(iteration_s_, x1 - x0);
  p.setPen(palette().color(QPalette::Mid));
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);
  p.setFont(small);
  for (double t = 0; t <= iteration_s_ * 1.0001; t += step) {
    const int x = static_cast<int>(x_of(t));
    if (x < clip.left() - 60 || x > clip.right() + 60) continue;
    p.drawLine(x, kHeader - 5, x, height());
    p.drawText(QRect(x - 50, 2, 100, kHeader - 8), Qt::AlignCenter, QString::fromStdString(units::human_seconds(t)));
  }
}

// One stage's row: its compute lane over a hatched idle background, its comm lane, and labels.
void GanttView::paintRow(QPainter& p, const QRect& clip, const Row& r, int top) const {
  const double x0 = x_of(0), x1 = x_of(iteration_s_);
  // Compute lane background = idle time (the bubble); tasks paint over it.
  p.fillRect(QRectF(x0, top, x1 - x0, kLane), QColor(0xfa, 0xf3, 0xf3));
  p.fillRect(QRectF(x0, top, x1 - x0, kLane), QBrush(QColor(0xd8, 0xd8, 0xd8), Qt::BDiagPattern));
  p.fillRect(QRectF(x0, top + kLane, x1 - x0, kLane), QColor(0xf6, 0xf6, 0xf6));
  for (int lane = 0; lane < 2; ++lane) {
    const std::vector<schedule::TaskSpan>& spans = lane == 0 ? r.compute : r.comm;
    const int y = top + lane * kLane + 1;
    paintBinnedSpans(p, clip, spans, y);
    paintWideSpans(p, clip, spans, y);
  }
  p.setPen(palette().color(QPalette::Text));
  p.fillRect(QRect(0, top - 2, kGutter - 4, 2 * kLane + 4), palette().color(QPalette::Base));
  p.drawText(QRect(4, top, kGutter - 8, kLane), Qt::AlignVCenter | Qt::AlignLeft,
             r.stage >= 0 ? QString("stage %1").arg(r.stage) : QString("other"));
  p.setPen(palette().color(QPalette::Mid));
  p.drawText(QRect(4, top + kLane, kGutter - 8, kLane), Qt::AlignVCenter | Qt::AlignLeft,
             QString("comm   idle %1%").arg(r.idle_fraction * 100, 0, 'f', 0));
}

// Tasks narrower than a few pixels are binned per pixel column: the column's height is the busy
// fraction of its time, so a stage that is 65% idle never looks solid at low zoom, and it stacks
// every category that ran in it (at least 2 px each), so forward, backward and recompute all
// stay visible however far out the view is zoomed.
void GanttView::paintBinnedSpans(QPainter& p, const QRect& clip, const std::vector<schedule::TaskSpan>& spans,
                                 int y) const {
  const int c0 = std::max(0, clip.left()), c1 = clip.right() + 1;
  std::vector<std::array<float, 9>> bins(static_cast<size_t>(std::max(0, c1 - c0)));
  for (auto& b : bins) b.fill(0);
  for (const auto& s : spans) {
    const double a = x_of(s.start_s), b = x_of(s.end_s);
    if (b < clip.left() || a > clip.right() || b - a >= 3) continue;
    const int k = category_index(s.category);
    for (int col = std::max(c0, static_cast<int>(a)); col <= std::min(c1 - 1, static_cast<int>(b)); ++col)
      bins[col - c0][k] += static_cast<float>(std::min(b, col + 1.0) - std::max(a, static_cast<double>(col)));
  }
  for (int col = c0; col < c1; ++col) {
    const auto& b = bins[col - c0];
    float total = 0;
    for (float t : b) total += t;
    if (total <= 0) continue;
    const double height = (kLane - 2) * std::min(1.0f, total);
    double bottom = y + (kLane - 2);
    for (int k = 0; k < 9 && bottom > y; ++k) {
      if (b[k] <= 0) continue;
      const double h = std::min(bottom - y, std::max(kMinStackPixels, height * b[k] / total));
      p.fillRect(QRectF(col, bottom - h, 1, h), k < 8 ? category_palette()[k].second : QColor(0xb0, 0xb0, 0xb0));
      bottom -= h;
    }
  }
}

// Tasks at least 3 pixels wide: a box in their category's colour, outlined, named when it fits.
void GanttView::paintWideSpans(QPainter& p, const QRect& clip, const std::vector<schedule::TaskSpan>& spans,
                               int y) const {
  for (const auto& s : spans) {
    const double a = x_of(s.start_s), b = x_of(s.end_s);
    if (b < clip.left() || a > clip.right() || b - a < 3) continue;
    const QRectF box(a, y, b - a, kLane - 2);
    const QColor c = colour(s.category);
    p.fillRect(box, c);
    if (box.width() > 4) {
      p.setPen(c.darker(135));
      p.drawRect(box);
    }
    if (box.width() > 60) {
      p.setPen(Qt::white);
      p.drawText(box.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft, QString::fromStdString(s.name));
    }
  }
}

void GanttView::wheelEvent(QWheelEvent* e) {
  if (!(e->modifiers() & Qt::ControlModifier)) {
    e->ignore();  // the scroll area scrolls
    return;
  }
  setZoom(zoom_ * (e->angleDelta().y() > 0 ? 1.25 : 0.8));
  e->accept();
}

const schedule::TaskSpan* GanttView::spanAt(QPoint pt) const {
  for (int i = 0; i < rowCount(); ++i) {
    const int top = rowTop(i);
    if (pt.y() < top || pt.y() >= top + 2 * kLane) continue;
    const auto& spans = pt.y() < top + kLane ? rows_[i].compute : rows_[i].comm;
    const schedule::TaskSpan* best = nullptr;
    for (const auto& s : spans)
      if (pt.x() >= x_of(s.start_s) - 1 && pt.x() <= x_of(s.end_s) + 1) best = &s;
    return best;
  }
  return nullptr;
}

bool GanttView::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* help = static_cast<QHelpEvent*>(e);
    if (const schedule::TaskSpan* s = spanAt(help->pos()))
      QToolTip::showText(help->globalPos(),
                         QString("%1 [%2]\n%3 .. %4 (%5)")
                             .arg(QString::fromStdString(s->name), QString::fromStdString(s->category),
                                  QString::fromStdString(units::human_seconds(s->start_s)),
                                  QString::fromStdString(units::human_seconds(s->end_s)),
                                  QString::fromStdString(units::human_seconds(s->end_s - s->start_s))),
                         this);
    else
      QToolTip::hideText();
    return true;
  }
  return QWidget::event(e);
}

GanttPanel::GanttPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  auto button = [&](const QString& text, const QString& tip) {
    auto* b = new QToolButton;
    b->setText(text);
    b->setToolTip(tip);
    bar->addWidget(b);
    return b;
  };
  QToolButton* out = button("-", "Zoom out (Ctrl+wheel)");
  QToolButton* in = button("+", "Zoom in (Ctrl+wheel)");
  QToolButton* fit = button("Fit", "Show the whole iteration");
  bar->addSpacing(12);
  for (const auto& [name, c] : category_palette()) {
    auto* chip = new QLabel;
    chip->setFixedSize(12, 12);
    chip->setStyleSheet(QString("background: %1; border: 1px solid %2;").arg(c.name(), c.darker(135).name()));
    bar->addWidget(chip);
    bar->addWidget(new QLabel(QString::fromStdString(name)));
    bar->addSpacing(6);
  }
  auto* hatch = new QLabel("hatched = idle (bubble)");
  hatch->setStyleSheet("color: palette(mid);");
  bar->addWidget(hatch);
  bar->addStretch(1);
  layout->addLayout(bar);
  view_ = new GanttView;
  scroll_ = new QScrollArea;
  scroll_->setWidget(view_);
  scroll_->setWidgetResizable(false);
  scroll_->setBackgroundRole(QPalette::Base);
  layout->addWidget(scroll_, 1);
  connect(in, &QToolButton::clicked, view_, [this] { view_->setZoom(view_->zoom() * 1.5); });
  connect(out, &QToolButton::clicked, view_, [this] { view_->setZoom(view_->zoom() / 1.5); });
  connect(fit, &QToolButton::clicked, view_, [this] {
    fit_ = true;
    this->fit();
  });
  connect(view_, &GanttView::zoomChanged, this, [this] {
    if (!fitting_) fit_ = false;
  });
}

void GanttPanel::setReport(const schedule::SimReport& report) {
  view_->setReport(report);
  fit_ = true;
  fit();
}

void GanttPanel::fit() {
  fitting_ = true;
  view_->fitWidth(std::max(400, scroll_->viewport()->width()));
  fitting_ = false;
}

void GanttPanel::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  if (fit_) fit();
}

void GanttPanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (fit_) fit();
}

}  // namespace starfish::gui
