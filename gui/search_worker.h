#pragma once
// Runs starfish::search::search() on a thread of its own, so the window stays live: progress
// arrives as a signal (about every 100 ms, from the search's own callback), Cancel sets the
// search's cancel flag (it then returns the best plans found so far), and the result is handed
// back on the GUI thread.
#include <QObject>
#include <QThread>
#include <atomic>
#include <memory>

#include "sim/search/search.h"

namespace starfish::gui {

struct SearchRequest {
  Model model;
  Cluster cluster;
  Training training;
  search::SearchOptions options;  // progress and cancel are set by the runner
  bool simulate_best = false;     // the runner sets options.refiner to the event simulator (cancellable)
};

class SearchRunner : public QObject {
  Q_OBJECT
 public:
  explicit SearchRunner(QObject* parent = nullptr);
  ~SearchRunner() override;  // cancels and joins a running search

  void start(SearchRequest request);  // ignored while running
  void cancel();
  bool running() const { return thread_ != nullptr; }
  std::shared_ptr<const search::SearchResult> result() const { return result_; }

 Q_SIGNALS:
  void started();
  // refine_total > 0 while the event simulator re-ranks the best plans (done == total then).
  void progress(qint64 done, qint64 total, qint64 fitting, double best_tokens_per_s, qint64 refined, qint64 refine_total);
  void finished();                   // result() holds it (cancelled ones too)
  void failed(const QString& message);

 private:
  void joined();
  std::unique_ptr<QThread> thread_;
  std::atomic<bool> cancel_{false};
  std::shared_ptr<const search::SearchResult> result_;
};

}  // namespace starfish::gui
