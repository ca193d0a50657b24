#pragma once
// Simulates the chosen plan's iteration with the event simulator (spans kept for the Gantt
// view) on a worker thread. Choosing another plan while one runs queues it; only the latest
// choice is simulated next, so fast clicking never piles up work.
#include <QFutureWatcher>
#include <QObject>
#include <optional>

#include "sim/schedule/simulate.h"

namespace starfish::gui {

class SimulationRunner : public QObject {
  Q_OBJECT
 public:
  explicit SimulationRunner(QObject* parent = nullptr);
  ~SimulationRunner() override;

  void start(const Job& job, int tag);  // tag comes back with the result (the plan's row)
  bool running() const { return watcher_.isRunning(); }
  const schedule::SimReport& report() const { return report_; }
  int tag() const { return tag_; }

 Q_SIGNALS:
  void finished(int tag);
  void failed(int tag, const QString& message);

 private:
  struct Outcome {
    schedule::SimReport report;
    QString error;
    int tag = -1;
  };
  void launch(const Job& job, int tag);
  void done();

  QFutureWatcher<Outcome> watcher_;
  std::optional<std::pair<Job, int>> queued_;
  schedule::SimReport report_;
  int tag_ = -1;
};

}  // namespace starfish::gui
