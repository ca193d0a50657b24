#include "gui/run_panel.h"

#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

QString human_s(double s) { return QString::fromStdString(units::human_seconds(s)); }
QString human_n(double n) { return QString::fromStdString(units::human_count(n)); }

}  // namespace

RunPanel::RunPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* top = new QHBoxLayout;
  status_ = new QLabel("Choose a plan and use Plan > Run to train it with starfish-run.");
  stop_ = new QPushButton("Stop");
  stop_->setEnabled(false);
  top->addWidget(status_, 1);
  top->addWidget(stop_);
  layout->addLayout(top);
  table_ = new QTableWidget(2, 4);
  table_->setHorizontalHeaderLabels({"", "Predicted", "Measured", "Measured / predicted"});
  table_->setVerticalHeaderLabels({"Iteration", "Tokens/s"});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMaximumHeight(90);
  for (int r = 0; r < 2; ++r) table_->setItem(r, 0, new QTableWidgetItem(r == 0 ? "Iteration time" : "Tokens/s"));
  layout->addWidget(table_);
  log_ = new QPlainTextEdit;
  log_->setReadOnly(true);
  log_->setFont(QFont("monospace"));
  log_->setMaximumBlockCount(20000);
  layout->addWidget(log_, 1);

  process_.setProcessChannelMode(QProcess::MergedChannels);
  connect(&process_, &QProcess::readyReadStandardOutput, this,
          [this] { append(QString::fromLocal8Bit(process_.readAllStandardOutput())); });
  connect(&process_, &QProcess::finished, this, &RunPanel::ended);
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e == QProcess::FailedToStart) {
      status_->setText("starfish-run failed to start: " + process_.errorString());
      stop_->setEnabled(false);
      Q_EMIT finished(-1);
    }
  });
  connect(stop_, &QPushButton::clicked, this, &RunPanel::stop);
}

RunPanel::~RunPanel() {
  if (running()) {
    process_.kill();
    process_.waitForFinished(3000);
  }
}

void RunPanel::setExecutable(const QString& path) { program_ = path; }

void RunPanel::start(const QString& plan_path, const QString& report_path, const Prediction& predicted, int iterations) {
  if (program_.isEmpty() || running()) return;
  report_path_ = report_path;
  predicted_ = predicted;
  QFile::remove(report_path);
  log_->clear();
  for (int r = 0; r < 2; ++r)
    for (int c = 1; c < 4; ++c) table_->setItem(r, c, new QTableWidgetItem);
  table_->item(0, 1)->setText(human_s(predicted.iteration_s) + " (" + predicted.source + ")");
  table_->item(1, 1)->setText(human_n(predicted.tokens_per_s));
  QStringList args{plan_path, "--report", report_path};
  if (iterations > 0) args << "--iterations" << QString::number(iterations);
  append("$ " + program_ + " " + args.join(' ') + "\n");
  status_->setText("Running " + plan_path + " ...");
  stop_->setEnabled(true);
  process_.start(program_, args);
}

void RunPanel::stop() {
  if (!running()) return;
  append("\n(stopping)\n");
  process_.terminate();
  if (!process_.waitForFinished(3000)) process_.kill();
}

QString RunPanel::log() const { return log_->toPlainText(); }

void RunPanel::append(const QString& text) {
  log_->moveCursor(QTextCursor::End);
  log_->insertPlainText(text);
  log_->moveCursor(QTextCursor::End);
}

bool RunPanel::read_report(const QString& path, double& iteration_s, double& tokens_per_s, QString& error) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) {
    error = "no report at " + path;
    return false;
  }
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
  if (!doc.isObject()) {
    error = path + ": " + pe.errorString();
    return false;
  }
  const QJsonObject o = doc.object();
  if (!o.contains("iteration_s") || !o.contains("tokens_per_s")) {
    error = path + ": no iteration_s / tokens_per_s";
    return false;
  }
  iteration_s = o.value("iteration_s").toDouble();
  tokens_per_s = o.value("tokens_per_s").toDouble();
  return true;
}

void RunPanel::ended(int code, QProcess::ExitStatus status) {
  stop_->setEnabled(false);
  if (status == QProcess::CrashExit) {
    status_->setText("starfish-run stopped or crashed");
    Q_EMIT finished(-1);
    return;
  }
  double it = 0, tps = 0;
  QString error;
  if (code == 0 && read_report(report_path_, it, tps, error)) {
    table_->item(0, 2)->setText(human_s(it));
    table_->item(1, 2)->setText(human_n(tps));
    if (predicted_.iteration_s > 0) table_->item(0, 3)->setText(QString("%1x").arg(it / predicted_.iteration_s, 0, 'f', 2));
    if (predicted_.tokens_per_s > 0) table_->item(1, 3)->setText(QString("%1x").arg(tps / predicted_.tokens_per_s, 0, 'f', 2));
    status_->setText("Finished: measured against predicted below (report " + report_path_ + ")");
  } else {
    status_->setText(code == 0 ? "Finished, but " + error : QString("starfish-run exited with status %1").arg(code));
  }
  Q_EMIT finished(code);
}

}  // namespace starfish::gui
