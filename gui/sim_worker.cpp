#include "gui/sim_worker.h"

#include <QtConcurrent/QtConcurrentRun>

namespace starfish::gui {

SimulationRunner::SimulationRunner(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Outcome>::finished, this, &SimulationRunner::done);
}

SimulationRunner::~SimulationRunner() { watcher_.waitForFinished(); }

void SimulationRunner::start(const Job& job, int tag) {
  if (watcher_.isRunning()) {
    queued_.emplace(job, tag);
    return;
  }
  launch(job, tag);
}

void SimulationRunner::launch(const Job& job, int tag) {
  watcher_.setFuture(QtConcurrent::run([job, tag] {
    Outcome o;
    o.tag = tag;
    try {
      schedule::SimOptions opt;
      opt.keep_spans = true;
      o.report = schedule::simulate(job, opt);
    } catch (const std::exception& e) {
      o.error = QString::fromStdString(e.what());
    }
    return o;
  }));
}

void SimulationRunner::done() {
  Outcome o = watcher_.result();
  if (queued_) {
    // A newer choice is waiting: this result is stale.
    auto [job, tag] = std::move(*queued_);
    queued_.reset();
    launch(job, tag);
    return;
  }
  tag_ = o.tag;
  if (!o.error.isEmpty()) {
    Q_EMIT failed(o.tag, o.error);
    return;
  }
  report_ = std::move(o.report);
  Q_EMIT finished(o.tag);
}

}  // namespace starfish::gui
