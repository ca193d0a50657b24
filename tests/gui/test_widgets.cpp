// The GUI's pieces on real data: editors reproduce every bundled profile and model exactly,
// the plan table shows and sorts a real search, the memory chart's bars are the estimate's
// bytes over capacity, the Gantt view has one row per pipeline stage with every simulated span,
// and the link chart lists the busiest links in order.
#include <QtCharts/QBarSet>
#include <QtTest/QtTest>
#include <QtWidgets>
#include <algorithm>
#include <map>
#include <set>

#include "gui/app_paths.h"
#include "gui/gantt_view.h"
#include "gui/hardware_editor.h"
#include "gui/link_chart.h"
#include "gui/memory_chart.h"
#include "gui/model_editor.h"
#include "gui/plan_table_model.h"
#include "gui/run_panel.h"
#include "sim/cost/params.h"
#include "sim/schedule/simulate.h"
#include "sim/search/search.h"
#include "sim/spec/spec_io.h"

using namespace starfish;

namespace {

std::string src(const char* rel) { return std::string(STARFISH_SOURCE_DIR) + "/" + rel; }

Job pipeline_job() {
  // GPT-2 large (36 layers, 20 heads) on one DGX A100: TP 2 x 4 pipeline stages, 1F1B: a bubble exists.
  Plan p;
  p.tp = 2;
  p.pp = 4;
  p.micro_batch = 4;
  p.schedule = Schedule::one_f_one_b;
  Training t;
  t.global_batch = 32;
  return make_job(load_model(src("configs/models/gpt2-large.yaml")), load_cluster(src("hwprofiles/dgx-a100-80gb.yaml")), t, p);
}

}  // namespace

class WidgetsTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void hardware_editor_reproduces_every_bundled_profile() {
    gui::HardwareEditor ed;
    QVERIFY(gui::bundled_hwprofiles().size() >= 7);
    for (const QString& path : gui::bundled_hwprofiles()) {
      ed.loadProfile(path);
      const Cluster loaded = load_cluster(path.toStdString());
      QVERIFY2(ed.cluster() == loaded, qPrintable(path));
      QVERIFY(!ed.modified());
    }
  }

  void hardware_editor_edits_the_fields_it_shows() {
    gui::HardwareEditor ed;
    ed.loadProfile("consumer-pc");
    QVERIFY(!ed.cluster().node.nvlink);
    ed.nvlinkBox()->setChecked(true);
    QVERIFY(ed.cluster().node.nvlink.has_value());
    QCOMPARE(ed.cluster().node.nvlink->bandwidth_Bps, 300e9);
    ed.pcieGenBox()->setValue(5);
    QCOMPARE(ed.cluster().node.pcie.generation, 5);
    ed.gpusBox()->setValue(4);
    QCOMPARE(ed.cluster().node.gpus, 4);
    ed.hostRamBox()->setValue(256);
    QCOMPARE(ed.cluster().node.host.memory_bytes, int64_t{256} << 30);
    ed.gpuTypeBox()->setCurrentText("A100-SXM4-80GB");
    QCOMPARE(ed.cluster().node.gpu, load_cluster(src("hwprofiles/dgx-a100-80gb.yaml")).node.gpu);
    QVERIFY(ed.modified());
    // What is not on screen stays as loaded.
    QCOMPARE(ed.cluster().node.host.cpu_adam_params_per_s, load_cluster(src("hwprofiles/consumer-pc.yaml")).node.host.cpu_adam_params_per_s);
  }

  void hardware_editor_shows_and_edits_the_gpu_link_topology() {
    gui::HardwareEditor ed;
    ed.loadProfile("amd-mi300x");
    QCOMPARE(ed.nvlinkTopologyBox()->currentText(), QString("mesh"));
    QVERIFY(ed.cluster().node.nvlink->topology == NvlinkTopology::mesh);
    ed.nvlinkTopologyBox()->setCurrentText("switch");
    QVERIFY(ed.cluster().node.nvlink->topology == NvlinkTopology::switched);
    QVERIFY(ed.modified());
    ed.nvlinkBox()->setChecked(false);
    QVERIFY(!ed.nvlinkTopologyBox()->isEnabled());
  }

  void model_editor_reproduces_every_bundled_model() {
    gui::ModelEditor ed;
    QVERIFY(gui::bundled_models().size() >= 30);
    for (const QString& path : gui::bundled_models()) {
      ed.loadModel(path);
      QVERIFY2(ed.model() == load_model(path.toStdString()), qPrintable(path));
    }
    ed.loadModel("gpt3-175b");
    QCOMPARE(ed.paramsLabel()->text().left(5), QString("175 B"));
    ed.layersBox()->setValue(48);
    QCOMPARE(ed.model().layers, 48);
    QVERIFY(ed.modified());
    // The MoE fields: Mixtral's 8 experts, top-2, and its total and active parameters.
    ed.loadModel("mixtral-8x7b");
    QCOMPARE(ed.expertsBox()->value(), 8);
    QCOMPARE(ed.topKBox()->value(), 2);
    QVERIFY2(ed.paramsLabel()->text().startsWith("46.7 B, 12.9 B active"), qPrintable(ed.paramsLabel()->text()));
    ed.topKBox()->setValue(1);
    QCOMPARE(ed.model().moe.top_k, 1);
    ed.expertsBox()->setValue(0);  // a dense model
    QVERIFY(!ed.model().is_moe());
    // The layer variants: Qwen3's per-head q/k norms (kLayerSwitches[1]) on screen and editable.
    ed.loadModel("qwen3-30b-a3b");
    QCOMPARE(QString(kLayerSwitches[1].field), QString("qk_norm"));
    QVERIFY(ed.switchBox(1)->isChecked());
    const int64_t with_norms = count_parameters(ed.model()).total;
    ed.switchBox(1)->setChecked(false);
    QVERIFY(!ed.model().qk_norm);
    QCOMPARE(with_norms - count_parameters(ed.model()).total, int64_t{48 * 2 * 128});
    ed.loadModel("gpt2-small");  // biases on every linear: qkv_bias beside them is said, not counted
    ed.switchBox(0)->setChecked(true);
    QVERIFY2(ed.paramsLabel()->text().startsWith("qkv_bias applies"), qPrintable(ed.paramsLabel()->text()));
    // GPT-OSS's 128-token window on every other layer, on screen and editable; a full_every of
    // 1 is said as the model file's check says it.
    ed.loadModel("gpt-oss-120b");
    QCOMPARE(ed.windowBox()->value(), 128);
    QCOMPARE(ed.fullEveryBox()->value(), 2);
    QVERIFY(!ed.modified());
    ed.fullEveryBox()->setValue(0);
    QCOMPARE(ed.model().sliding_window, (SlidingWindow{128, 0}));
    ed.fullEveryBox()->setValue(1);
    QVERIFY2(ed.paramsLabel()->text().startsWith("full every 1 makes every layer full attention"),
             qPrintable(ed.paramsLabel()->text()));
    ed.windowBox()->setValue(0);
    QCOMPARE(ed.model().sliding_window, SlidingWindow{});
  }

  void plan_table_shows_and_sorts_a_search() {
    const Model m = load_model(src("configs/models/gpt2-xl.yaml"));
    const Cluster c = load_cluster(src("hwprofiles/dgx-a100-80gb.yaml"));
    search::SearchOptions o;
    o.top_k = 20;
    auto r = std::make_shared<const search::SearchResult>(search::search(m, c, search::default_search_training(m, c), o));
    QCOMPARE(static_cast<int>(r->rows.size()), 20);
    gui::PlanTableModel model;
    model.setResult(r);
    QCOMPARE(model.rowCount(), 20);
    QCOMPARE(model.data(model.index(0, gui::PlanTableModel::ColTP), Qt::DisplayRole).toInt(), r->rows[0].plan.tp);
    QCOMPARE(model.data(model.index(3, gui::PlanTableModel::ColTokensPerS), gui::PlanTableModel::SortRole).toDouble(),
             r->rows[3].tokens_per_s);
    // Sort by GPU memory ascending: the values come out ordered, and each row still maps to its plan.
    model.sort(gui::PlanTableModel::ColGpuMem, Qt::AscendingOrder);
    double prev = -1;
    for (int i = 0; i < model.rowCount(); ++i) {
      const double v = model.data(model.index(i, gui::PlanTableModel::ColGpuMem), gui::PlanTableModel::SortRole).toDouble();
      QVERIFY(v >= prev);
      prev = v;
      QCOMPARE(v, r->rows[model.searchRow(i)].analytic.gpu.total());
    }
    model.sort(gui::PlanTableModel::ColRank, Qt::DescendingOrder);
    QCOMPARE(model.searchRow(0), 19);
    // A row recomputing Megatron-core's modules says which.
    search::SearchResult modules = *r;
    modules.rows[0].plan.recompute = Recompute::selective;
    modules.rows[0].plan.recompute_modules = recompute_module::moe_act | recompute_module::layernorm;
    model.setResult(std::make_shared<const search::SearchResult>(modules));
    QCOMPARE(model.data(model.index(0, gui::PlanTableModel::ColRecompute), Qt::DisplayRole).toString(),
             QString("selective (moe_act, layernorm)"));
  }

  void memory_chart_bars_are_bytes_over_capacity() {
    const Job job = pipeline_job();
    const Estimate e = estimate(job);
    gui::MemoryChart chart;
    chart.setEstimate(e, "plan");
    QVERIFY(chart.set("params") && chart.set("optimizer") && chart.set("activations"));
    QCOMPARE(chart.set("params")->at(0), e.gpu.params_bytes / e.gpu.capacity_bytes * 100);
    QCOMPARE(chart.set("optimizer")->at(0), e.gpu.optimizer_bytes / e.gpu.capacity_bytes * 100);
    QCOMPARE(chart.set("activations")->at(0), e.gpu.activations_bytes / e.gpu.capacity_bytes * 100);
    QCOMPARE(chart.set("buffers")->at(1), e.cpu.buffers_bytes / e.cpu.capacity_bytes * 100);
    QVERIFY(chart.set("params")->at(0) > 0);
    QCOMPARE(chart.categories().size(), 3);
    QVERIFY(chart.categories()[0].startsWith("GPU: "));
  }

  void gantt_has_a_row_per_stage_and_every_span() {
    const Job job = pipeline_job();
    schedule::SimOptions opt;
    opt.keep_spans = true;
    const schedule::SimReport rep = schedule::simulate(job, opt);
    QVERIFY(!rep.spans.empty());
    std::set<int> stages;
    for (const auto& s : rep.spans) stages.insert(s.stage);
    gui::GanttView g;
    g.setReport(rep);
    QCOMPARE(g.rowCount(), static_cast<int>(stages.size()));
    QCOMPARE(g.spanCount(), static_cast<int>(rep.spans.size()));
    QVERIFY(stages.count(0) && stages.count(3));  // 4 pipeline stages
    QVERIFY(g.rowLabel(0).startsWith("stage 0"));
    // 1F1B with 4 stages: every stage idles part of the iteration (the bubble), and no more than all of it.
    for (int i = 0; i < 4; ++i) QVERIFY(g.idleFraction(i) > 0 && g.idleFraction(i) < 1);
    const double z = g.zoom();
    g.setZoom(z * 4);
    QCOMPARE(g.zoom(), z * 4);
    QVERIFY(g.sizeHint().width() > 3000);
    g.clear();
    QCOMPARE(g.rowCount(), 0);
  }

  void gantt_shows_forward_backward_and_recompute_at_every_zoom() {
    // One stage's compute lane: forward, recompute and twice as long a backward, each span far
    // narrower than a pixel at the fitted zoom (3000 of each in one second over ~1000 px).
    schedule::SimReport rep;
    const int n = 3000;
    const double slot_s = 1.0 / n;
    for (int i = 0; i < n; ++i) {
      const double t = i * slot_s;
      rep.spans.push_back({0, "fwd", "F", t, t + 0.25 * slot_s});
      rep.spans.push_back({0, "recompute", "R", t + 0.25 * slot_s, t + 0.5 * slot_s});
      rep.spans.push_back({0, "bwd", "B", t + 0.5 * slot_s, t + slot_s});
    }
    rep.iteration_s = 1.0;
    gui::GanttView g;
    g.setReport(rep);
    for (double zoom : {1.0, 0.3, 0.05}) {
      g.setZoom(zoom);
      g.resize(g.sizeHint());
      const QImage image = g.grab().toImage();
      std::map<std::string, int> pixels;
      for (const char* kind : {"fwd", "bwd", "recompute"}) {
        const QRgb want = gui::GanttView::colour(kind).rgb();
        for (int y = 0; y < image.height(); ++y)
          for (int x = 0; x < image.width(); ++x) pixels[kind] += image.pixel(x, y) == want;
      }
      // Every kind shows in (nearly) every pixel column of the iteration: at least 2 px each.
      const int columns = static_cast<int>(1000 * zoom);
      for (const char* kind : {"fwd", "bwd", "recompute"})
        QVERIFY2(pixels[kind] >= 2 * columns * 9 / 10,
                 qPrintable(QString("%1: %2 pixels at zoom %3").arg(kind).arg(pixels[kind]).arg(zoom)));
      QVERIFY(pixels["bwd"] >= pixels["fwd"]);  // the longer kind is at least as tall
    }
  }

  void link_chart_lists_the_busiest_links_first() {
    const schedule::SimReport rep = schedule::simulate(pipeline_job());
    QVERIFY(rep.links.size() >= 3);
    gui::LinkChart chart;
    chart.setLinks(rep.links, 5);
    const int n = std::min<int>(5, static_cast<int>(rep.links.size()));
    QCOMPARE(chart.utilisation()->count(), n);
    std::vector<double> u;
    for (const auto& l : rep.links) u.push_back(l.utilisation * 100);
    std::sort(u.rbegin(), u.rend());
    // The axis runs bottom-up, so the busiest link is the last bar.
    QCOMPARE(chart.utilisation()->at(n - 1), u[0]);
    QCOMPARE(chart.utilisation()->at(0), u[n - 1]);
    QCOMPARE(chart.linkNames().size(), n);
  }

  void run_report_is_read_in_the_executors_format() {
    // The fields exec/run.cpp writes for `starfish-run --report`.
    QTemporaryDir dir;
    const QString path = dir.filePath("run.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\n  \"kind\": \"starfish.run\",\n  \"iteration_s\": 0.25,\n  \"tokens_per_s\": 1024,\n  \"iterations\": []\n}\n");
    f.close();
    double it = 0, tps = 0;
    QString error;
    QVERIFY(gui::RunPanel::read_report(path, it, tps, error));
    QCOMPARE(it, 0.25);
    QCOMPARE(tps, 1024.0);
    QVERIFY(!gui::RunPanel::read_report(dir.filePath("none.json"), it, tps, error));
    QCOMPARE(error, "no report at " + dir.filePath("none.json"));
    QFile g(path);
    QVERIFY(g.open(QIODevice::WriteOnly));
    g.write("{\"kind\": \"run\"}");
    g.close();
    QVERIFY(!gui::RunPanel::read_report(path, it, tps, error));
    QCOMPARE(error, path + ": no iteration_s / tokens_per_s");
  }

#ifdef STARFISH_RUN  // built with the executor (LibTorch); without it the Run action is disabled
  void run_panel_trains_a_plan_with_the_real_executor() {
    gui::RunPanel panel;
    panel.setExecutable(STARFISH_RUN);
    QTemporaryDir dir;
    const QString report = dir.filePath("run.json");
    QSignalSpy done(&panel, &gui::RunPanel::finished);
    panel.start(QString(STARFISH_SOURCE_DIR) + "/exec/configs/tiny-gpt-chunked-plan.yaml", report,
                gui::Prediction{0.5, 500, "simulated"}, 2);
    QVERIFY(done.wait(240000));
    QCOMPARE(done.takeFirst().at(0).toInt(), 0);
    QVERIFY2(panel.log().contains("iter    2/2"), qPrintable(panel.log()));
    double it = 0, tps = 0;
    QString error;
    QVERIFY2(gui::RunPanel::read_report(report, it, tps, error), qPrintable(error));
    QVERIFY(it > 0 && tps > 0);
    // The comparison shows measured beside predicted, and their ratio.
    QVERIFY(!panel.comparison()->item(0, 2)->text().isEmpty());
    QCOMPARE(panel.comparison()->item(0, 3)->text(), QString("%1x").arg(it / 0.5, 0, 'f', 2));
  }
#endif
};

QTEST_MAIN(WidgetsTest)
#include "test_widgets.moc"
