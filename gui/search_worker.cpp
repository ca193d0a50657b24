#include "gui/search_worker.h"

#include <exception>
#include <string>

#include "sim/search/des_refiner.h"

namespace starfish::gui {

SearchRunner::SearchRunner(QObject* parent) : QObject(parent) {}

SearchRunner::~SearchRunner() {
  if (thread_) {
    cancel_ = true;
    thread_->wait();
  }
}

void SearchRunner::start(SearchRequest request) {
  if (thread_) return;
  cancel_ = false;
  request.options.cancel = &cancel_;
  // Cancel stops the simulation in progress too, not only between plans.
  if (request.simulate_best) request.options.refiner = search::des_refiner(&cancel_);
  request.options.progress = [this](const search::Progress& p) {
    // Called on the search thread: hop to the GUI thread through the event loop.
    const qint64 done = p.done, total = p.total, fitting = p.fitting;
    const double best = p.best_tokens_per_s;
    const bool refining = std::string(p.phase) == "refine";
    const qint64 refined = refining ? p.refined : 0, refine_total = refining ? p.refine_total : 0;
    QMetaObject::invokeMethod(
        this, [=, this] { Q_EMIT progress(done, total, fitting, best, refined, refine_total); }, Qt::QueuedConnection);
  };
  thread_.reset(QThread::create([this, request = std::move(request)] {
    std::shared_ptr<const search::SearchResult> result;
    QString error;
    try {
      result = std::make_shared<const search::SearchResult>(
          search::search(request.model, request.cluster, request.training, request.options));
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this,
        [this, result, error] {
          joined();
          if (result) {
            result_ = result;
            Q_EMIT finished();
          } else {
            Q_EMIT failed(error);
          }
        },
        Qt::QueuedConnection);
  }));
  thread_->start();
  Q_EMIT started();
}

void SearchRunner::cancel() { cancel_ = true; }

void SearchRunner::joined() {
  if (thread_) thread_->wait();
  thread_.reset();
}

}  // namespace starfish::gui
