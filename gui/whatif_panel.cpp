#include "gui/whatif_panel.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>

#include "sim/search/plan_space.h"
#include "sim/search/size_cluster.h"
#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

// Slider positions are indices into these steps (a planner thinks in powers of two).
const std::vector<int> kNodes = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
const std::vector<int> kGpus = {1, 2, 4, 8, 16};
const std::vector<int64_t> kRamGiB = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
const std::vector<int64_t> kChunkMi = {4, 8, 16, 32, 64, 128, 256, 512};
constexpr int64_t kGiB = int64_t{1} << 30;

template <typename T>
int nearest(const std::vector<T>& steps, double v) {
  int best = 0;
  for (int i = 0; i < static_cast<int>(steps.size()); ++i)
    if (std::abs(std::log2(static_cast<double>(steps[i])) - std::log2(std::max(1.0, v))) <
        std::abs(std::log2(static_cast<double>(steps[best])) - std::log2(std::max(1.0, v))))
      best = i;
  return best;
}

QSlider* slider(int steps) {
  auto* s = new QSlider(Qt::Horizontal);
  s->setRange(0, steps - 1);
  s->setPageStep(1);
  s->setTickPosition(QSlider::TicksBelow);
  s->setTickInterval(1);
  return s;
}

QString q(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* box = new QGroupBox("Hardware changes");
  auto* grid = new QGridLayout(box);
  int row = 0;
  auto add = [&](const QString& name, QWidget* w, QLabel*& value) {
    grid->addWidget(new QLabel(name), row, 0);
    grid->addWidget(w, row, 1);
    value = new QLabel;
    value->setMinimumWidth(64);
    value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    grid->addWidget(value, row, 2);
    ++row;
  };
  nodes_ = slider(static_cast<int>(kNodes.size()));
  gpus_ = slider(static_cast<int>(kGpus.size()));
  pcie_ = slider(4);  // gen 3..6
  ram_ = slider(static_cast<int>(kRamGiB.size()));
  chunk_ = slider(static_cast<int>(kChunkMi.size()));
  add("Nodes", nodes_, nodes_value_);
  add("GPUs / node", gpus_, gpus_value_);
  add("PCIe", pcie_, pcie_value_);
  nvlink_ = new QCheckBox("NVLink between the node's GPUs");
  grid->addWidget(nvlink_, row++, 0, 1, 3);
  add("Host RAM", ram_, ram_value_);
  add("Chunk size", chunk_, chunk_value_);
  chunk_->setToolTip("Elements per chunk of the chunk runtime (the chunk sizes the search may use)");
  layout->addWidget(box);
  layout->addWidget(makeBudgetBox());

  status_ = new QLabel;
  status_->setStyleSheet("color: palette(mid);");
  max_model_ = new QLabel("Load hardware and a model");
  max_model_->setWordWrap(true);
  max_model_->setTextFormat(Qt::RichText);
  throughput_ = new QLabel;
  throughput_->setWordWrap(true);
  throughput_->setTextFormat(Qt::RichText);
  apply_ = new QPushButton("Use this hardware");
  apply_->setToolTip("Copy the slider settings into the hardware editor");
  layout->addWidget(max_model_);
  layout->addWidget(throughput_);
  layout->addWidget(status_);
  layout->addWidget(apply_);
  layout->addStretch(1);

  debounce_.setSingleShot(true);
  debounce_.setInterval(350);
  connect(&debounce_, &QTimer::timeout, this, &WhatIfPanel::run);
  connect(&watcher_, &QFutureWatcher<WhatIfResult>::finished, this, &WhatIfPanel::done);
  for (QSlider* s : {nodes_, gpus_, pcie_, ram_, chunk_}) connect(s, &QSlider::valueChanged, this, &WhatIfPanel::changed);
  connect(nvlink_, &QCheckBox::toggled, this, &WhatIfPanel::changed);
  connect(apply_, &QPushButton::clicked, this, [this] {
    if (have_base_) Q_EMIT applyRequested(apply_settings(base_, settings()));
  });
}

QWidget* WhatIfPanel::makeBudgetBox() {
  budget_ = new QGroupBox("Train within a budget");
  budget_->setCheckable(true);
  budget_->setChecked(true);
  budget_->setToolTip("The largest model is the largest that trains within it; unchecked: memory alone");
  auto* form = new QFormLayout(budget_);
  tokens_ = new QLineEdit;
  tokens_->setPlaceholderText("20 per parameter (Chinchilla)");
  tokens_->setToolTip("Tokens to train on: 300B, 1T, 300e9; empty: 20 per parameter");
  auto spin = [](double max, double value, const QString& special, const QString& suffix) {
    auto* d = new QDoubleSpinBox;
    d->setRange(0, max);
    d->setDecimals(1);
    d->setValue(value);
    d->setSpecialValueText(special);  // shown at 0
    d->setSuffix(suffix);
    return d;
  };
  days_ = spin(100000, 90, "no deadline", " days");
  min_tps_ = spin(1e12, 0, "none", " tokens/s");
  max_iteration_ = spin(1e6, 0, "none", " s");
  form->addRow("Tokens", tokens_);
  form->addRow("Within", days_);
  form->addRow("At least", min_tps_);
  form->addRow("Iteration at most", max_iteration_);
  connect(budget_, &QGroupBox::toggled, this, &WhatIfPanel::changed);
  connect(tokens_, &QLineEdit::editingFinished, this, &WhatIfPanel::changed);
  for (QDoubleSpinBox* d : {days_, min_tps_, max_iteration_})
    connect(d, &QDoubleSpinBox::valueChanged, this, &WhatIfPanel::changed);
  return budget_;
}

std::optional<search::TrainingBudget> WhatIfPanel::budget(std::string* error) const {
  search::TrainingBudget b;
  b.time_limited = budget_->isChecked();
  b.days = days_->value();
  b.min_tokens_per_s = min_tps_->value();
  b.max_iteration_s = max_iteration_->value();
  const std::string tokens = tokens_->text().trimmed().toStdString();
  if (!tokens.empty()) {
    try {
      b.tokens = search::parse_token_count(tokens);
    } catch (const std::exception& e) {
      if (error) *error = std::string("Tokens: ") + e.what();
      return std::nullopt;
    }
  }
  return b;
}

WhatIfPanel::~WhatIfPanel() {
  if (cancel_) *cancel_ = true;
  watcher_.waitForFinished();
}

void WhatIfPanel::setBase(const Cluster& cluster, const Model& model, const Training& training) {
  base_ = cluster;
  model_ = model;
  training_ = training;
  have_base_ = true;
  const WhatIfSettings s = settings_of(cluster, plan_);
  resetting_ = true;
  nodes_->setValue(nearest(kNodes, s.nodes));
  gpus_->setValue(nearest(kGpus, s.gpus_per_node));
  pcie_->setValue(std::clamp(s.pcie_generation, 3, 6) - 3);
  nvlink_->setChecked(s.nvlink);
  ram_->setValue(nearest(kRamGiB, static_cast<double>(s.host_memory_bytes) / kGiB));
  chunk_->setValue(nearest(kChunkMi, static_cast<double>(s.chunk_elements >> 20)));
  resetting_ = false;
  changed();
}

void WhatIfPanel::setPlan(const std::optional<Plan>& plan) {
  plan_ = plan;
  if (plan && plan->chunked()) {
    resetting_ = true;
    chunk_->setValue(nearest(kChunkMi, static_cast<double>(plan->chunk_elements >> 20)));
    resetting_ = false;
  }
  if (have_base_) changed();
}

WhatIfSettings WhatIfPanel::settings() const {
  WhatIfSettings s;
  s.nodes = kNodes[nodes_->value()];
  s.gpus_per_node = kGpus[gpus_->value()];
  s.pcie_generation = pcie_->value() + 3;
  s.nvlink = nvlink_->isChecked();
  s.host_memory_bytes = kRamGiB[ram_->value()] * kGiB;
  s.chunk_elements = kChunkMi[chunk_->value()] << 20;
  if (auto b = budget(nullptr)) s.budget = *b;
  // The base's own exact values where the slider sits on them (a 240 GiB host stays 240 GiB).
  if (have_base_) {
    const WhatIfSettings b = settings_of(base_, plan_);
    if (nearest(kNodes, b.nodes) == nodes_->value()) s.nodes = b.nodes;
    if (nearest(kGpus, b.gpus_per_node) == gpus_->value()) s.gpus_per_node = b.gpus_per_node;
    if (nearest(kRamGiB, static_cast<double>(b.host_memory_bytes) / kGiB) == ram_->value()) s.host_memory_bytes = b.host_memory_bytes;
  }
  return s;
}

void WhatIfPanel::showSettings() {
  const WhatIfSettings s = settings();
  nodes_value_->setText(QString::number(s.nodes));
  gpus_value_->setText(QString::number(s.gpus_per_node));
  pcie_value_->setText(QString("gen %1").arg(s.pcie_generation));
  ram_value_->setText(q(units::human_bytes(static_cast<double>(s.host_memory_bytes))));
  chunk_value_->setText(q(units::format_count(s.chunk_elements)));
}

void WhatIfPanel::changed() {
  showSettings();
  if (resetting_ || !have_base_) return;
  std::string error;
  if (!budget(&error)) {
    debounce_.stop();  // nothing runs until the fields parse
    status_->setText(q(error));
    return;
  }
  status_->setText("updating...");
  debounce_.start();
}

void WhatIfPanel::run() {
  if (watcher_.isRunning()) {
    // The running evaluation is for old settings: stop it and start again when it returns.
    if (cancel_) *cancel_ = true;
    rerun_ = true;
    return;
  }
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  auto cancel = cancel_;
  const Cluster base = base_;
  const Model model = model_;
  const Training training = training_;
  const std::optional<Plan> plan = plan_;
  const WhatIfSettings s = settings();
  watcher_.setFuture(QtConcurrent::run([=] { return evaluate_whatif(base, model, training, plan, s, cancel.get()); }));
}

void WhatIfPanel::done() {
  if (rerun_) {
    rerun_ = false;
    run();
    return;
  }
  WhatIfResult r = watcher_.result();
  if (r.cancelled) return;
  const search::MaxSizeResult& m = r.max_size;
  const QString within = m.budget.time_limited ? QString(" within the budget (%1)").arg(q(search::describe(m.budget)).toHtmlEscaped())
                                          : QString(" (memory alone)");
  if (m.found) {
    const search::Row& row = m.best.rows.front();
    max_model_->setText(QString("<b>Largest %1 model%2:</b> %3 parameters (%4 layers x %5 hidden)<br>"
                                "%6 at %7 tokens/s, trains on %8 tokens in %9 days; the next size is limited by <b>%10</b>")
                            .arg(q(m.model.family), within, q(units::human_count(static_cast<double>(m.parameters))))
                            .arg(m.model.layers)
                            .arg(m.model.hidden)
                            .arg(q(row.label()), q(units::human_count(row.tokens_per_s)), q(units::human_count(m.tokens)))
                            .arg(QString::number(m.days_to_train, 'f', 1), q(constraint_name(m.binding))));
  } else {
    max_model_->setText(QString("<b>Largest %1 model%2:</b> none (%3)").arg(q(model_.family), within, q(constraint_name(m.binding))));
  }
  QString t;
  if (r.best) {
    // One tier's numbers on the line: the simulator's when it re-ranked the plan, else the analytic.
    const bool simulated = r.best->refined.has_value();
    t = QString("<b>%1, best plan (%2):</b> %3 tokens/s, %4 MFU (%5)")
            .arg(q(model_.name), simulated ? QString::fromStdString(r.best->refined->source) : QString("analytic"),
                 q(units::human_count(r.best->tokens_per_s)))
            .arg(QString::number((simulated ? r.best->refined->mfu : r.best->analytic.mfu) * 100, 'f', 1) + "%",
                 q(r.best->label()));
  }
  else
    t = QString("<b>%1:</b> no plan fits (%2)").arg(q(model_.name), q(r.best_why_not));
  if (plan_) {
    if (r.plan_estimate && r.plan_estimate->fits)
      t += QString("<br><b>Chosen plan here (analytic):</b> %1 tokens/s, iteration %2")
               .arg(q(units::human_count(r.plan_estimate->tokens_per_s)), q(units::human_seconds(r.plan_estimate->time.iteration_s)));
    else if (r.plan_estimate)
      t += QString("<br><b>Chosen plan here:</b> does not fit: %1").arg(q(r.plan_estimate->why_not).toHtmlEscaped());
    else
      t += QString("<br><b>Chosen plan here:</b> %1").arg(q(r.plan_error).toHtmlEscaped());
  }
  throughput_->setText(t);
  status_->setText(QString("%1 GPUs, %2 maxsize probes").arg(r.cluster.total_gpus()).arg(m.probes));
  result_ = std::move(r);
  Q_EMIT updated();
}

}  // namespace starfish::gui
