#pragma once
// "Run": trains the chosen plan for real with `starfish-run` (the executor, a separate program:
// the GUI never links it) as a QProcess, streams its log, and when it ends reads its JSON report
// and shows measured against predicted iteration time and throughput.
#include <QProcess>
#include <QString>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;

namespace starfish::gui {

struct Prediction {
  double iteration_s = 0;
  double tokens_per_s = 0;
  QString source;  // "simulated", "analytic"
};

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunPanel(QWidget* parent = nullptr);
  ~RunPanel() override;

  void setExecutable(const QString& path);  // "" = not available
  QString executable() const { return program_; }
  // Runs `program plan_path --report <dir>/run-report.json [--iterations N]`.
  void start(const QString& plan_path, const QString& report_path, const Prediction& predicted, int iterations);
  void stop();
  bool running() const { return process_.state() != QProcess::NotRunning; }
  QString log() const;
  QTableWidget* comparison() const { return table_; }

  // The report's measured numbers ("iteration_s", "tokens_per_s": the keys `starfish-run
  // --report` shares with the simulator's report); false when unreadable.
  static bool read_report(const QString& path, double& iteration_s, double& tokens_per_s, QString& error);

 Q_SIGNALS:
  void finished(int exit_code);

 private:
  void append(const QString& text);
  void ended(int code, QProcess::ExitStatus status);

  QString program_;
  QString report_path_;
  Prediction predicted_;
  QProcess process_;
  QLabel* status_;
  QPlainTextEdit* log_;
  QTableWidget* table_;
  QPushButton* stop_;
};

}  // namespace starfish::gui
