#pragma once
// The simulated iteration as a Gantt chart: one row per pipeline stage (its lead GPU), each row
// with a compute lane (forward, backward, recompute, optimizer) and a communication lane (TP,
// PP, DP, offload). Idle compute time -- the pipeline bubble -- shows as a hatched background,
// and each row's label gives its idle fraction. Zoom with the buttons or Ctrl+wheel; hover a
// task for its name and times.
#include <QWidget>
#include <vector>

#include "sim/schedule/simulate.h"

class QPainter;
class QScrollArea;

namespace starfish::gui {

class GanttView : public QWidget {
  Q_OBJECT
 public:
  explicit GanttView(QWidget* parent = nullptr);

  void setReport(const schedule::SimReport& report);
  void clear();

  int rowCount() const { return static_cast<int>(rows_.size()); }
  int spanCount() const;
  QString rowLabel(int row) const;
  double idleFraction(int row) const;     // compute lane idle / iteration
  double zoom() const { return zoom_; }   // pixels per second = base_pps * zoom
  void setZoom(double z);
  void fitWidth(int pixels);              // zoom so the iteration fills `pixels`
  static bool isCompute(const std::string& category);
  static QColor colour(const std::string& category);

  QSize sizeHint() const override;

 Q_SIGNALS:
  void zoomChanged(double zoom);

 protected:
  void paintEvent(QPaintEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  bool event(QEvent* e) override;

 private:
  struct Row {
    int stage = -1;
    std::vector<schedule::TaskSpan> compute, comm;  // each sorted by start
    double idle_fraction = 0;
  };
  int rowTop(int row) const;
  double x_of(double t) const;
  void paintTimeAxis(QPainter& p, const QRect& clip) const;  // paintEvent's parts
  void paintRow(QPainter& p, const QRect& clip, const Row& r, int top) const;
  void paintBinnedSpans(QPainter& p, const QRect& clip, const std::vector<schedule::TaskSpan>& spans, int y) const;
  void paintWideSpans(QPainter& p, const QRect& clip, const std::vector<schedule::TaskSpan>& spans, int y) const;
  const schedule::TaskSpan* spanAt(QPoint p) const;

  std::vector<Row> rows_;
  double iteration_s_ = 0;
  double zoom_ = 1;
  static constexpr int kGutter = 118, kHeader = 26, kLane = 15, kRowGap = 7;
};

// GanttView with its zoom buttons, legend and scroll area.
class GanttPanel : public QWidget {
  Q_OBJECT
 public:
  explicit GanttPanel(QWidget* parent = nullptr);
  GanttView* view() const { return view_; }
  void setReport(const schedule::SimReport& report);  // fits the width until the user zooms

 protected:
  void resizeEvent(QResizeEvent* e) override;
  void showEvent(QShowEvent* e) override;

 private:
  void fit();
  bool fit_ = true;      // keep the whole iteration in view as the panel resizes
  bool fitting_ = false;
  GanttView* view_;
  QScrollArea* scroll_;
};

}  // namespace starfish::gui
