#include "gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QProgressBar>
#include <QRegularExpression>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QVBoxLayout>

#include "gui/app_paths.h"
#include "gui/gantt_view.h"
#include "gui/hardware_editor.h"
#include "gui/link_chart.h"
#include "gui/memory_chart.h"
#include "gui/model_editor.h"
#include "gui/plan_columns.h"
#include "gui/plan_table_model.h"
#include "gui/run_panel.h"
#include "gui/search_worker.h"
#include "gui/sim_worker.h"
#include "gui/whatif_panel.h"
#include "sim/report/report.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

QString q(const std::string& s) { return QString::fromStdString(s); }
QString hb(double b) { return q(units::human_bytes(b)); }
QString hs(double s) { return q(units::human_seconds(s)); }
QString hc(double n) { return q(units::human_count(n)); }

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("Starfish planner");
  confirm_ = dialog_confirm(this);
  searcher_ = new SearchRunner(this);
  simulator_ = new SimulationRunner(this);

  // Centre: the ranked plans above the chosen plan's views.
  buildPlanTable();
  buildPlanTabs();
  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(table_);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  setCentralWidget(split);
  buildDocks();
  buildMenus();
  run_->setExecutable(find_starfish_run());
  connectRunners();
  resize(1600, 980);
  updateActions();
}

// The ranked plans: sortable, one selected at a time, its columns fitted to the width.
void MainWindow::buildPlanTable() {
  plans_ = new PlanTableModel(this);
  table_ = new QTableView;
  table_->setModel(plans_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(PlanTableModel::ColRank, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(22);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  columns_ = new PlanColumns(table_, this);  // fits the columns to the width; the header menu chooses them
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) { selectPlan(cur.row()); });
}

// The chosen plan's views: memory, timeline, links, details, and running it.
void MainWindow::buildPlanTabs() {
  tabs_ = new QTabWidget;
  memory_ = new MemoryChart;
  gantt_ = new GanttPanel;
  links_ = new LinkChart;
  details_ = new QTextBrowser;
  run_ = new RunPanel;
  tabs_->addTab(memory_, "Memory");
  tabs_->addTab(gantt_, "Timeline");
  tabs_->addTab(links_, "Links");
  tabs_->addTab(details_, "Details");
  tabs_->addTab(run_, "Run");
}

// Left, the setup (hardware, model, training); right, the what-if panel.
void MainWindow::buildDocks() {
  auto* setup = new QDockWidget("Setup");
  setup->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  auto* scroll = new QScrollArea;
  scroll->setWidget(buildSetup());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  setup->setWidget(scroll);
  addDockWidget(Qt::LeftDockWidgetArea, setup);

  whatif_ = new WhatIfPanel;
  auto* whatif = new QDockWidget("What if");
  whatif->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable);
  whatif->setWidget(whatif_);
  addDockWidget(Qt::RightDockWidgetArea, whatif);
  connect(whatif_, &WhatIfPanel::applyRequested, this, [this](const Cluster& c) { hardware_->setCluster(c, QString()); });
}

// The search's and the simulation's progress and answers, and the editors' changes.
void MainWindow::connectRunners() {
  connect(searcher_, &SearchRunner::progress, this,
          [this](qint64 done, qint64 total, qint64 fitting, double best, qint64 refined, qint64 refine_total) {
            if (refine_total > 0) {  // the second phase has a bar of its own, not 100% of the first
              progress_->setMaximum(static_cast<int>(refine_total));
              progress_->setValue(static_cast<int>(refined));
              search_status_->setText(QString("Simulating the best plans: %1 / %2 (of %3 fitting)")
                                          .arg(refined).arg(refine_total).arg(hc(fitting)));
              return;
            }
            progress_->setMaximum(static_cast<int>(std::min<qint64>(total, 1 << 30)));
            progress_->setValue(static_cast<int>(std::min<qint64>(done, 1 << 30)));
            search_status_->setText(QString("%1 / %2 plans, %3 fit, best %4 tokens/s").arg(hc(done), hc(total), hc(fitting), hc(best)));
          });
  connect(searcher_, &SearchRunner::finished, this, &MainWindow::searchDone);
  connect(searcher_, &SearchRunner::failed, this, [this](const QString& m) {
    error(m);
    search_status_->setText("Search failed");
    updateActions();
  });
  connect(simulator_, &SimulationRunner::finished, this, &MainWindow::simulationDone);
  connect(simulator_, &SimulationRunner::failed, this, [this](int, const QString& m) { error("simulation: " + m); });
  connect(hardware_, &HardwareEditor::changed, this, &MainWindow::inputsChanged);
  connect(model_, &ModelEditor::changed, this, &MainWindow::inputsChanged);
  connect(hardware_, &HardwareEditor::loadFailed, this, &MainWindow::error);
  connect(model_, &ModelEditor::loadFailed, this, &MainWindow::error);
}

MainWindow::~MainWindow() = default;

QWidget* MainWindow::buildSetup() {
  auto* w = new QWidget;
  auto* layout = new QVBoxLayout(w);
  auto* hw_box = new QGroupBox("Hardware");
  hardware_ = new HardwareEditor;
  (new QVBoxLayout(hw_box))->addWidget(hardware_);
  auto* model_box = new QGroupBox("Model");
  model_ = new ModelEditor;
  (new QVBoxLayout(model_box))->addWidget(model_);
  auto* train_box = new QGroupBox("Training");
  auto* form = new QFormLayout(train_box);
  batch_ = new QSpinBox;
  batch_->setRange(0, 1 << 24);
  batch_->setSpecialValueText("auto (about 4M tokens)");
  batch_->setSuffix(" sequences");
  batch_->setToolTip("Global batch per iteration; auto: about 4Mi tokens, a multiple of the GPU count");
  form->addRow("Global batch", batch_);
  dtype_ = new QComboBox;
  dtype_->addItems({"auto", "bf16", "fp16", "fp32"});
  dtype_->setToolTip("auto: bf16 where the GPU has it, else fp16, else fp32");
  form->addRow("Precision", dtype_);
  refine_ = new QCheckBox("Re-rank the best 8 plans with the event simulator");
  refine_->setChecked(true);
  refine_->setToolTip("Off: the analytic model alone ranks every plan (faster)");
  form->addRow(refine_);
  connect(batch_, &QSpinBox::valueChanged, this, &MainWindow::inputsChanged);
  connect(dtype_, &QComboBox::currentIndexChanged, this, &MainWindow::inputsChanged);

  auto* search_box = new QGroupBox("Search");
  auto* sl = new QVBoxLayout(search_box);
  auto* buttons = new QHBoxLayout;
  search_button_ = new QPushButton("Search plans");
  search_button_->setDefault(true);
  cancel_button_ = new QPushButton("Cancel");
  buttons->addWidget(search_button_, 1);
  buttons->addWidget(cancel_button_);
  sl->addLayout(buttons);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1);
  progress_->setValue(0);
  sl->addWidget(progress_);
  search_status_ = new QLabel("TP x PP x DP, ZeRO, offload, recompute, chunks: every plan, ranked by tokens/s");
  search_status_->setWordWrap(true);
  sl->addWidget(search_status_);
  connect(search_button_, &QPushButton::clicked, this, &MainWindow::startSearch);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancelSearch);

  layout->addWidget(hw_box);
  layout->addWidget(model_box);
  layout->addWidget(train_box);
  layout->addWidget(search_box);
  layout->addStretch(1);
  w->setMinimumWidth(360);
  return w;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu("&File");
  file->addAction("Open hardware profile...", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open hardware profile", data_root() + "/hwprofiles", "YAML (*.yaml *.yml)");
    if (!p.isEmpty()) loadHardware(p);
  });
  file->addAction("Save hardware profile as...", this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save hardware profile", "hardware.yaml", "YAML (*.yaml)", nullptr,
                                                   QFileDialog::DontConfirmOverwrite);
    if (p.isEmpty()) return;
    try {
      if (save_text(p, to_yaml(hardware_->cluster()), confirm_)) statusBar()->showMessage("Saved " + p, 5000);
    } catch (const std::exception& e) {
      error(e.what());
    }
  });
  file->addSeparator();
  file->addAction("Open model...", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Open model", data_root() + "/configs/models", "YAML (*.yaml *.yml)");
    if (!p.isEmpty()) loadModel(p);
  });
  file->addAction("Import Hugging Face config.json...", this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Import Hugging Face config", QString(), "config.json (*.json)");
    if (!p.isEmpty()) importHfConfig(p);
  });
  file->addAction("Save model as...", this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, "Save model", "model.yaml", "YAML (*.yaml)", nullptr,
                                                   QFileDialog::DontConfirmOverwrite);
    if (p.isEmpty()) return;
    try {
      if (save_text(p, to_yaml(model_->model()), confirm_)) statusBar()->showMessage("Saved " + p, 5000);
    } catch (const std::exception& e) {
      error(e.what());
    }
  });
  file->addSeparator();
  file->addAction("Quit", QKeySequence::Quit, qApp, &QApplication::closeAllWindows);

  QMenu* plan = menuBar()->addMenu("&Plan");
  QAction* search = plan->addAction("Search plans", QKeySequence("Ctrl+R"), this, &MainWindow::startSearch);
  plan->addAction("Cancel search", QKeySequence("Esc"), this, &MainWindow::cancelSearch);
  plan->addSeparator();
  const char* names[kExportFormats] = {"Export plan.yaml...", "Export Megatron-LM arguments...",
                                       "Export Megatron-Bridge command...", "Export DeepSpeed config...",
                                       "Export torchtitan recipe..."};
  const char* icon_texts[kExportFormats] = {"Export plan.yaml", "Megatron args", "Megatron-Bridge", "DeepSpeed JSON",
                                            "torchtitan"};
  for (int i = 0; i < kExportFormats; ++i) {
    const ExportFormat f = static_cast<ExportFormat>(i);
    export_actions_[i] = plan->addAction(names[i], this, [this, f] { exportWithDialog(f); });
    export_actions_[i]->setIconText(icon_texts[i]);
  }
  plan->addSeparator();
  run_action_ = plan->addAction("Run with starfish-run", this, &MainWindow::runSelectedPlan);

  QToolBar* tools = addToolBar("Plan");
  tools->setMovable(false);
  tools->addAction(search);
  tools->addSeparator();
  for (QAction* a : export_actions_) tools->addAction(a);
  tools->addSeparator();
  tools->addAction(run_action_);
  run_action_->setIconText("Run");
}

void MainWindow::error(const QString& message) {
  last_error_ = message;
  statusBar()->showMessage(message, 15000);
}

bool MainWindow::loadHardware(const QString& name_or_path) {
  try {
    hardware_->loadProfile(name_or_path);
    return true;
  } catch (const std::exception& e) {
    error(e.what());
    return false;
  }
}

bool MainWindow::loadModel(const QString& name_or_path) {
  try {
    model_->loadModel(name_or_path);
    return true;
  } catch (const std::exception& e) {
    error(e.what());
    return false;
  }
}

bool MainWindow::importHfConfig(const QString& path) {
  try {
    model_->importHfConfig(path);
    statusBar()->showMessage("Imported " + path, 5000);
    return true;
  } catch (const std::exception& e) {
    error(e.what());
    return false;
  }
}

std::optional<Cluster> MainWindow::checkedCluster() {
  // The editor can produce what a file could not say (8 nodes and no NIC): the YAML parser's
  // checks are the one place those rules live, so go through it.
  try {
    return parse_cluster_text(to_yaml(hardware_->cluster()), "hardware");
  } catch (const std::exception& e) {
    // The line numbers are of a text the user never saw: keep only the field and the reason.
    error(QString(e.what()).replace(QRegularExpression("^hardware:\\d+:\\d+: "), "hardware: "));
    return std::nullopt;
  }
}

Training MainWindow::training() const {
  Training t = search::default_search_training(model_->model(), hardware_->cluster());
  if (batch_->value() > 0) t.global_batch = batch_->value();
  if (dtype_->currentIndex() > 0) parse_dtype(dtype_->currentText().toStdString(), t.dtype);
  return t;
}

void MainWindow::inputsChanged() {
  const Cluster c = hardware_->cluster();
  const Model m = model_->model();
  setWindowTitle(QString("Starfish planner - %1 on %2 x %3").arg(q(m.name)).arg(c.nodes).arg(q(c.name)));
  if (!m.name.empty() && c.node.gpus > 0 && m.heads > 0 && m.hidden % m.heads == 0) whatif_->setBase(c, m, training());
}

void MainWindow::startSearch() {
  if (searcher_->running()) return;
  const std::optional<Cluster> cluster = checkedCluster();
  if (!cluster) return;
  SearchRequest r;
  r.model = model_->model();
  r.cluster = *cluster;
  r.training = training();
  r.options.top_k = 40;
  if (refine_->isChecked()) {
    // The search's second tier: the best plans re-ranked by the event simulator.
    r.simulate_best = true;
    r.options.refine_top = 8;
  }
  progress_->setRange(0, 1);
  progress_->setValue(0);
  search_status_->setText("Enumerating plans...");
  last_error_.clear();
  searcher_->start(std::move(r));
  updateActions();
}

void MainWindow::cancelSearch() { searcher_->cancel(); }

void MainWindow::searchDone() {
  result_ = searcher_->result();
  selected_ = -1;
  simulated_ = false;
  table_->sortByColumn(PlanTableModel::ColRank, Qt::AscendingOrder);
  plans_->setResult(result_);
  memory_->clear();
  gantt_->view()->clear();
  links_->clear();
  const search::SearchResult& r = *result_;
  progress_->setMaximum(1);
  progress_->setValue(1);
  search_status_->setText(QString("%1 plans, %2 fit, %3 s%4")
                              .arg(hc(static_cast<double>(r.enumerated)), hc(static_cast<double>(r.fitting)))
                              .arg(r.elapsed_s, 0, 'f', 2)
                              .arg(r.cancelled ? " (cancelled: best so far)" : ""));
  if (r.rows.empty()) error("No plan fits: " + q(constraint_name(r.binding_constraint())));
  showDetails();
  updateActions();
  Q_EMIT searchFinished();
}

void MainWindow::selectPlan(int table_row) {
  const int row = plans_->searchRow(table_row);
  if (row < 0 || !result_ || row == selected_) return;
  selected_ = row;
  simulated_ = false;
  if (table_->currentIndex().row() != table_row) table_->selectRow(table_row);
  const search::Row& r = result_->rows[row];
  memory_->setEstimate(r.analytic, QString("Memory of plan #%1: %2").arg(row + 1).arg(q(r.label())));
  whatif_->setPlan(r.plan);
  gantt_->view()->clear();
  links_->clear();
  try {
    simulator_->start(result_->job(r), row);
  } catch (const std::exception& e) {
    error(e.what());
  }
  showDetails();
  updateActions();
}

void MainWindow::simulationDone(int search_row) {
  if (search_row != selected_) return;
  simulated_ = true;
  gantt_->setReport(simulator_->report());
  links_->setLinks(simulator_->report().links);
  showDetails();
  Q_EMIT planSimulated(search_row);
}

void MainWindow::showDetails() {
  QString html;
  if (result_ && selected_ >= 0) {
    const search::Row& row = result_->rows[selected_];
    const Estimate& e = row.analytic;
    const Plan& p = row.plan;
    html += QString("<h3>Plan #%1: %2</h3>").arg(selected_ + 1).arg(q(row.label()).toHtmlEscaped());
    html += QString("<p>TP %1, PP %2 (x%3 virtual), DP %4, micro-batch %5, %6 micro-batches, schedule %7, ZeRO-%8, "
                    "recompute %9, offload params/grads/optimizer: %10/%11/%12, %13.</p>")
                .arg(p.tp).arg(p.pp).arg(p.virtual_stages).arg(p.dp).arg(p.micro_batch).arg(e.micro_batches)
                .arg(to_string(p.schedule)).arg(p.zero_stage).arg(q(recompute_text(p)))
                .arg(to_string(p.offload.params), to_string(p.offload.grads), to_string(p.offload.optimizer))
                .arg(p.chunked() ? "chunks of " + q(units::format_count(p.chunk_elements)) + " elements" +
                                  (p.cpu_embedding ? ", embeddings on the CPU" : "")
                            : QString("static placement"));
    html += QString("<p>Costed as %1 runs it.</p>").arg(to_string(p.framework));
    if (p.cp > 1) html += QString("<p>Context parallel %1: each sequence split over %1 ranks (ring attention).</p>").arg(p.cp);
    if (p.recompute_layers > 0)
      html += QString("<p>Block recomputation: the first %1 layers of each virtual stage recompute, the others keep "
                      "their activations.</p>").arg(p.recompute_layers);
    if (p.stage_layers.slots())
      html += QString("<p>The embedding and the loss each take a layer's place in the pipeline split (Megatron-core's "
                      "--account-for-embedding/loss-in-pipeline-split): the first and last virtual stage hold one "
                      "layer fewer.</p>");
    if (p.fp8 != Fp8::none)
      html += QString("<p>GEMMs in fp8 (TransformerEngine): %1 format, %2 scaling%3.</p>")
                  .arg(to_string(p.fp8), to_string(p.fp8_recipe), p.fp8_params ? "; the GEMM weights kept and gathered in fp8" : "");
    if (p.fp4 != Fp4::none) html += QString("<p>GEMMs in fp4 (TransformerEngine): %1.</p>").arg(to_string(p.fp4));
    html += "<table cellspacing=6><tr><th></th><th align=right>analytic</th><th align=right>simulated</th></tr>";
    const schedule::SimReport* s = simulated_ ? &simulator_->report() : nullptr;
    auto line = [&](const QString& name, const QString& a, const QString& b) {
      html += QString("<tr><td>%1</td><td align=right>%2</td><td align=right>%3</td></tr>").arg(name, a, b);
    };
    line("iteration", hs(e.time.iteration_s), s ? hs(s->iteration_s) : "...");
    line("tokens/s", hc(e.tokens_per_s), s ? hc(s->tokens_per_s) : "...");
    // Both are in TFLOP/s already (Estimate::tflops_per_gpu, SimReport::tflops_per_gpu).
    line("TFLOP/s per GPU", QString::number(e.tflops_per_gpu, 'f', 1), s ? QString::number(s->tflops_per_gpu, 'f', 1) : "...");
    line("MFU", QString::number(e.mfu * 100, 'f', 1) + "%", s ? QString::number(s->mfu * 100, 'f', 1) + "%" : "...");
    line("pipeline bubble", QString::number(e.bubble_fraction * 100, 'f', 1) + "%",
         s ? QString::number(s->bubble_fraction * 100, 'f', 1) + "%" : "...");
    line("GPU memory (peak)", hb(e.gpu.total()), s ? hb(s->peak_gpu_bytes) : "...");
    html += "</table><p><b>Analytic time per component:</b> ";
    const TimeBreakdown& t = e.time;
    html += QString("compute %1, bubble %2, TP %3, CP %4, PP %5, DP %6, optimizer %7, offload %8</p>")
                .arg(hs(t.compute_s), hs(t.bubble_s), hs(t.tp_comm_s), hs(t.cp_comm_s), hs(t.pp_comm_s), hs(t.dp_comm_s),
                     hs(t.optimizer_s), hs(t.offload_s));
    if (s) {
      html += "<p><b>Simulated communication</b> (lead GPU of each stage, mean):</p><ul>";
      for (const auto& c : s->comm)
        html += QString("<li>%1: %2 (%3 exposed), compute/comm %4</li>")
                    .arg(q(c.group), hs(c.comm_s), hs(c.exposed_s))
                    .arg(c.comm_s > 0 ? QString::number(c.ratio, 'f', 1) : QString("-"));
      html += QString("</ul><p>%1 tasks, %2 events, simulated in %3.</p>")
                  .arg(s->tasks).arg(s->events).arg(hs(s->build_wall_s + s->run_wall_s));
    }
  }
  if (result_) {
    html += QString("<h3>Search</h3><p>%1 plans enumerated, %2 evaluated, %3 pruned by the memory bound, %4 fit (%5 s on %6 threads).</p>")
                .arg(result_->enumerated).arg(result_->evaluated).arg(result_->pruned).arg(result_->fitting)
                .arg(result_->elapsed_s, 0, 'f', 2).arg(result_->threads);
    if (!result_->simulator_rejected.empty()) {
      html += "<p><b>Ranked high by the analytic model but rejected by the simulator:</b></p><ul>";
      for (const auto& [label, why] : result_->simulator_rejected)
        html += "<li>" + (q(label) + ": " + q(why)).toHtmlEscaped() + "</li>";
      html += "</ul>";
    }
    if (!result_->rejected.empty()) {
      html += "<p><b>Rejected families</b> (closest plan of each):</p><ul>";
      int n = 0;
      for (const auto& f : result_->rejected) {
        if (++n > 15) break;
        html += "<li>" + q(f.text()).toHtmlEscaped() + "</li>";
      }
      html += "</ul>";
    }
  }
  details_->setHtml(html);
}

void MainWindow::updateActions() {
  const bool have_plan = result_ && selected_ >= 0;
  const bool busy = searcher_->running();
  search_button_->setEnabled(!busy);
  cancel_button_->setEnabled(busy);
  for (QAction* a : export_actions_) a->setEnabled(have_plan);
  const bool have_run = !run_->executable().isEmpty();
  run_action_->setEnabled(have_plan && have_run);
  run_action_->setToolTip(have_run ? "Train the chosen plan with " + run_->executable()
                                   : "starfish-run was not found next to starfish-gui or on PATH "
                                     "(it is built when LibTorch is present: -DSTARFISH_EXEC=ON)");
}

QStringList MainWindow::exportPlan(ExportFormat format, const QString& path) {
  if (!result_ || selected_ < 0) {
    error("Choose a plan first");
    return {};
  }
  try {
    ExportSources src;
    if (!model_->modified() && !model_->path().isEmpty()) src.model_path = model_->path();
    if (!hardware_->modified() && !hardware_->path().isEmpty()) src.hardware_path = hardware_->path();
    const QStringList written = export_plan(result_->job(result_->rows[selected_]), format, path, src, confirm_);
    if (!written.isEmpty()) statusBar()->showMessage("Wrote " + written.join(", "), 8000);
    return written;
  } catch (const std::exception& e) {
    error(e.what());
    return {};
  }
}

void MainWindow::exportWithDialog(ExportFormat format) {
  const QString p = QFileDialog::getSaveFileName(this, "Export", default_export_name(format), export_filter(format), nullptr,
                                                 QFileDialog::DontConfirmOverwrite);
  if (!p.isEmpty()) exportPlan(format, p);
}

void MainWindow::runSelectedPlan() {
  if (!result_ || selected_ < 0 || run_->executable().isEmpty() || run_->running()) return;
  if (!run_dir_) run_dir_ = std::make_unique<QTemporaryDir>();
  const QString plan = run_dir_->filePath(QString("plan-%1.yaml").arg(selected_ + 1));
  // The run folder is the GUI's own: replacing its earlier files is expected.
  const ConfirmOverwrite replace = [](const QString&) { return true; };
  try {
    ExportSources src;
    if (!model_->modified() && !model_->path().isEmpty()) src.model_path = model_->path();
    if (!hardware_->modified() && !hardware_->path().isEmpty()) src.hardware_path = hardware_->path();
    const search::Row& row = result_->rows[selected_];
    if (export_plan(result_->job(row), ExportFormat::plan_yaml, plan, src, replace).isEmpty()) return;
    Prediction p;
    if (simulated_) p = {simulator_->report().iteration_s, simulator_->report().tokens_per_s, "simulated"};
    else p = {row.analytic.time.iteration_s, row.analytic.tokens_per_s, "analytic"};
    // Enough iterations for the report to have a steady one whatever the plan
    // (report::unsteady_iterations): its figures are medians over the steady ones.
    const int iterations = report::unsteady_iterations(true) + 1;
    run_->start(plan, run_dir_->filePath("run-report.json"), p, iterations);
    tabs_->setCurrentWidget(run_);
  } catch (const std::exception& e) {
    error(e.what());
  }
}

}  // namespace starfish::gui
