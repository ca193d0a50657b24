// The main window driven as a user would: load hardware and a model, search in the background,
// choose a plan, read its charts and timeline, export it, cancel a search, import a Hugging Face
// config, and see the Run action's state.
#include <QtCharts/QBarSet>
#include <QtTest/QtTest>
#include <QtWidgets>

#include "gui/app_paths.h"
#include "gui/gantt_view.h"
#include "gui/hardware_editor.h"
#include "gui/link_chart.h"
#include "gui/main_window.h"
#include "gui/memory_chart.h"
#include "gui/model_editor.h"
#include "gui/plan_columns.h"
#include "gui/plan_table_model.h"
#include "sim/search/plan_export.h"
#include "sim/spec/spec_io.h"

using namespace starfish;

namespace {

QString read(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

// Loads, searches and chooses the best plan; returns once its simulation is shown.
void search_and_choose(gui::MainWindow& w, const QString& hw, const QString& model) {
  QVERIFY(w.loadHardware(hw));
  QVERIFY(w.loadModel(model));
  QSignalSpy done(&w, &gui::MainWindow::searchFinished);
  w.startSearch();
  QVERIFY(!w.searchButton()->isEnabled());
  QVERIFY(w.cancelButton()->isEnabled());
  QVERIFY(done.wait(120000));
  QSignalSpy simulated(&w, &gui::MainWindow::planSimulated);
  w.selectPlan(0);
  QVERIFY(simulated.wait(120000));
}

}  // namespace

class MainFlowTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void search_choose_and_inspect_a_plan() {
    gui::MainWindow w;
    w.resize(1600, 1000);  // the window's usual size (README screenshot)
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.refineBox()->setChecked(true);
    search_and_choose(w, "dgx-a100-80gb", "gpt2-large");
    const search::SearchResult* r = w.searchResult();
    QVERIFY(r && !r->rows.empty() && !r->cancelled);
    QCOMPARE(r->cluster, load_cluster(STARFISH_SOURCE_DIR "/hwprofiles/dgx-a100-80gb.yaml"));
    QVERIFY(r->refined > 0);  // the simulator re-ranked the best plans
    // The table shows every returned row, best first.
    QCOMPARE(w.planTable()->model()->rowCount(), static_cast<int>(r->rows.size()));
    QCOMPARE(w.planModel()->data(w.planModel()->index(0, gui::PlanTableModel::ColTokensPerS), gui::PlanTableModel::SortRole).toDouble(),
             r->rows[0].tokens_per_s);
    QCOMPARE(w.progressBar()->value(), w.progressBar()->maximum());
    QVERIFY(w.searchButton()->isEnabled());
    // The chosen plan's memory is its estimate, as % of capacity.
    const Estimate& e = r->rows[0].analytic;
    QCOMPARE(w.selectedSearchRow(), 0);
    QCOMPARE(w.memoryChart()->set("params")->at(0), e.gpu.params_bytes / e.gpu.capacity_bytes * 100);
    QCOMPARE(w.memoryChart()->set("activations")->at(0), e.gpu.activations_bytes / e.gpu.capacity_bytes * 100);
    // Its timeline: a row per pipeline stage (plus "other" for work on no stage), spans present.
    gui::GanttView* g = w.gantt()->view();
    QVERIFY(g->spanCount() > 0);
    QVERIFY(g->rowCount() == r->rows[0].plan.pp || g->rowCount() == r->rows[0].plan.pp + 1);
    QVERIFY(w.linkChart()->utilisation()->count() > 0);
    QVERIFY(w.exportAction(gui::ExportFormat::plan_yaml)->isEnabled());
    // Details: TFLOP/s per GPU as the estimate and the simulation give it (both in TFLOP/s).
    QVERIFY(r->rows[0].analytic.tflops_per_gpu > 1);
    const QString details = w.details()->toPlainText();
    const QRegularExpressionMatch m = QRegularExpression(R"(TFLOP/s per GPU\s+([0-9.]+)\s+([0-9.]+))").match(details);
    QVERIFY2(m.hasMatch(), qPrintable(details));
    QCOMPARE(m.captured(1), QString::number(r->rows[0].analytic.tflops_per_gpu, 'f', 1));
    QVERIFY2(m.captured(2).toDouble() > 1, qPrintable(details));  // the simulated value, in TFLOP/s too
    // The GEMMs' precision is said when the plan quantizes them, and only then.
    QCOMPARE(details.contains("GEMMs in fp8"), r->rows[0].plan.fp8 != Fp8::none);
    // The plan table fits the window: no horizontal scrolling, the throughput and memory shown.
    QTRY_COMPARE(w.planTable()->horizontalScrollBar()->maximum(), 0);
    QVERIFY(w.planColumns()->shown(gui::PlanTableModel::ColTokensPerS));
    QVERIFY(w.planColumns()->shown(gui::PlanTableModel::ColGpuMem));
    QVERIFY(w.planColumns()->shown(gui::PlanTableModel::ColTP));
    // A column the user chooses from the header menu shows, whatever the width.
    w.planColumns()->choose(gui::PlanTableModel::ColPlan, true);
    QVERIFY(w.planColumns()->shown(gui::PlanTableModel::ColPlan));
    w.planColumns()->choose(gui::PlanTableModel::ColPlan, false);
    QVERIFY(!w.planColumns()->shown(gui::PlanTableModel::ColPlan));

    // Choosing another row (through the table, as a click would) updates the charts.
    QSignalSpy simulated(&w, &gui::MainWindow::planSimulated);
    w.planTable()->selectRow(1);
    QCOMPARE(w.selectedSearchRow(), w.planModel()->searchRow(1));
    QVERIFY(simulated.wait(120000));
    const Estimate& e1 = r->rows[w.selectedSearchRow()].analytic;
    QCOMPARE(w.memoryChart()->set("optimizer")->at(0), e1.gpu.optimizer_bytes / e1.gpu.capacity_bytes * 100);
  }

  void exports_write_files_that_load_back() {
    gui::MainWindow w;
    w.refineBox()->setChecked(false);
    search_and_choose(w, "dgx-a100-80gb", "gpt2-large");
    const search::SearchResult* r = w.searchResult();
    const search::Row& row = r->rows[0];
    QTemporaryDir dir;
    bool asked = false;
    w.setConfirmOverwrite([&](const QString&) {
      asked = true;
      return false;
    });
    // plan.yaml names the bundled files (unchanged on screen) and loads back to the same plan.
    const QString plan = dir.filePath("plan.yaml");
    QCOMPARE(w.exportPlan(gui::ExportFormat::plan_yaml, plan), QStringList{plan});
    const PlanFile pf = load_plan_file(plan.toStdString());
    QCOMPARE(pf.plan, row.plan);
    QCOMPARE(pf.training.global_batch, r->training.global_batch);
    QVERIFY(pf.model_path && pf.hardware_path);
    QVERIFY(read(plan).contains("configs/models/gpt2-large.yaml"));
    QVERIFY(read(plan).contains("hwprofiles/dgx-a100-80gb.yaml"));
    QVERIFY(!asked);
    // Never overwrite without asking: declined, the file stays as it was.
    const QString before = read(plan);
    QVERIFY(w.exportPlan(gui::ExportFormat::plan_yaml, plan).isEmpty());
    QVERIFY(asked);
    QCOMPARE(read(plan), before);

    // Megatron and DeepSpeed: the search's exporters' text, or their refusal in the status.
    const Job job = r->job(row);
    const QString mega = dir.filePath("args.sh");
    const QStringList m = w.exportPlan(gui::ExportFormat::megatron, mega);
    if (search::megatron_unsupported(job).empty()) {
      QCOMPARE(m, QStringList{mega});
      QCOMPARE(read(mega).toStdString(), search::megatron_arguments(job));
      QVERIFY(read(mega).contains(QString("--tensor-model-parallel-size %1").arg(row.plan.tp)));
    } else {
      QVERIFY(m.isEmpty());
      QCOMPARE(w.lastError().toStdString(), search::megatron_unsupported(job));
    }
    const QString ds = dir.filePath("ds.json");
    if (search::deepspeed_unsupported(job).empty()) {
      QCOMPARE(w.exportPlan(gui::ExportFormat::deepspeed, ds), QStringList{ds});
      const QJsonObject o = QJsonDocument::fromJson(read(ds).toUtf8()).object();
      QCOMPARE(o.value("train_batch_size").toInteger(), r->training.global_batch);
      QCOMPARE(o.value("train_micro_batch_size_per_gpu").toInteger(), row.plan.micro_batch);
    }

    // Megatron-Bridge and torchtitan likewise: the exporter's text, or its refusal in the status.
    const std::pair<gui::ExportFormat, std::string> others[] = {
        {gui::ExportFormat::megatron_bridge, search::megatron_bridge_unsupported(job)},
        {gui::ExportFormat::torchtitan, search::torchtitan_unsupported(job)}};
    for (const auto& [format, why] : others) {
      const QString file = dir.filePath(gui::default_export_name(format));
      const QStringList out = w.exportPlan(format, file);
      if (why.empty()) {
        QCOMPARE(out, QStringList{file});
        const std::string text = format == gui::ExportFormat::torchtitan ? search::torchtitan_recipe(job).text
                                                                         : search::megatron_bridge_command(job);
        QCOMPARE(read(file).toStdString(), text);
      } else {
        QVERIFY(out.isEmpty());
        QCOMPARE(w.lastError().toStdString(), why);
      }
    }

    // Edited hardware is not the bundled file: the plan gets a companion hardware file.
    w.hardwareEditor()->nodesBox()->setValue(2);
    const QString plan2 = dir.filePath("two.yaml");
    const QStringList written = w.exportPlan(gui::ExportFormat::plan_yaml, plan2);
    QCOMPARE(written, (QStringList{dir.filePath("two.hardware.yaml"), plan2}));
    QCOMPARE(load_cluster(dir.filePath("two.hardware.yaml").toStdString()).nodes, r->cluster.nodes);  // the searched job's cluster
    QVERIFY(read(plan2).contains("hardware: two.hardware.yaml"));
  }

  void cancel_returns_the_best_so_far() {
    gui::MainWindow w;
    w.refineBox()->setChecked(false);
    QVERIFY(w.loadHardware("dgx-a100-80gb-128nodes"));
    QVERIFY(w.loadModel("gpt3-175b"));
    QSignalSpy done(&w, &gui::MainWindow::searchFinished);
    w.startSearch();
    w.cancelButton()->click();
    QVERIFY(done.wait(120000));
    QVERIFY(w.searchResult()->cancelled);
    QVERIFY(w.searchResult()->evaluated < w.searchResult()->enumerated);
    QCOMPARE(w.planTable()->model()->rowCount(), static_cast<int>(w.searchResult()->rows.size()));
    QVERIFY(w.searchButton()->isEnabled());
    QVERIFY(!w.cancelButton()->isEnabled());
  }

  void bad_input_is_reported_not_searched() {
    gui::MainWindow w;
    QVERIFY(w.loadHardware("consumer-pc"));
    QVERIFY(w.loadModel("gpt2-small"));
    QVERIFY(!w.loadHardware("/nonexistent/hw.yaml"));
    QVERIFY(w.lastError().contains("/nonexistent/hw.yaml"));
    w.hardwareEditor()->nodesBox()->setValue(4);  // the consumer PC has no NIC
    QSignalSpy done(&w, &gui::MainWindow::searchFinished);
    w.startSearch();
    QCOMPARE(w.lastError(), QString("hardware: field 'nodes': more than one node needs node.nic for the inter-node fabric"));
    QVERIFY(w.searchButton()->isEnabled());
    QCOMPARE(done.count(), 0);
  }

  void hugging_face_import_fills_the_model_editor() {
    QTemporaryDir dir;
    const QString path = dir.filePath("config.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 22, "num_attention_heads": 32,
                "num_key_value_heads": 4, "intermediate_size": 5632, "max_position_embeddings": 2048,
                "vocab_size": 32000, "hidden_act": "silu", "_name_or_path": "TinyLlama/TinyLlama-1.1B"})");
    f.close();
    gui::MainWindow w;
    QVERIFY(w.importHfConfig(path));
    QCOMPARE(w.modelEditor()->layersBox()->value(), 22);
    QCOMPARE(w.modelEditor()->hiddenBox()->value(), 2048);
    QCOMPARE(w.modelEditor()->model().kv_heads, 4);
    QCOMPARE(w.modelEditor()->model().name, std::string("tinyllama-1.1b"));
    QVERIFY(w.modelEditor()->paramsLabel()->text().startsWith("1.1"));
    QVERIFY(!w.importHfConfig(dir.filePath("missing.json")));
  }

  void run_action_follows_the_executor() {
    gui::MainWindow w;
    QAction* run = w.runAction();
    QVERIFY(!run->isEnabled());  // no plan chosen yet
    if (gui::find_starfish_run().isEmpty())
      QVERIFY(run->toolTip().contains("starfish-run was not found"));
    else
      QVERIFY(run->toolTip().contains(gui::find_starfish_run()));
  }
};

QTEST_MAIN(MainFlowTest)
#include "test_main_flow.moc"
