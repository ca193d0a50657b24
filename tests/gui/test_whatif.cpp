// What-if: the sliders' hardware, and the panel's numbers are those of max_model_size and the
// search for the sliders' current positions (computed in the background, debounced).
#include <QtTest/QtTest>
#include <QtWidgets>

#include "gui/whatif_eval.h"
#include "gui/whatif_panel.h"
#include "sim/search/search.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

using namespace starfish;

namespace {

Cluster consumer() { return load_cluster(STARFISH_SOURCE_DIR "/hwprofiles/consumer-pc.yaml"); }
Model gpt2_xl() { return load_model(STARFISH_SOURCE_DIR "/configs/models/gpt2-xl.yaml"); }

}  // namespace

class WhatIfTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void settings_change_the_hardware() {
    const Cluster base = consumer();
    gui::WhatIfSettings s = gui::settings_of(base, std::nullopt);
    QCOMPARE(gui::apply_settings(base, s), base);  // its own settings change nothing
    s.nodes = 4;
    s.gpus_per_node = 8;
    s.pcie_generation = 5;
    s.nvlink = true;
    s.host_memory_bytes = int64_t{512} << 30;
    const Cluster c = gui::apply_settings(base, s);
    QCOMPARE(c.total_gpus(), 32);
    QCOMPARE(c.node.pcie.generation, 5);
    QCOMPARE(c.node.pcie.bandwidth_Bps(), 32e9 * 128 / 130 / 8 * 16 * 0.8);
    QVERIFY(c.node.nvlink && c.node.nvlink->bandwidth_Bps == 300e9);
    QVERIFY(c.node.nic.has_value());  // 4 nodes need a fabric
    QCOMPARE(c.node.host.memory_bytes, int64_t{512} << 30);
    QCOMPARE(c.node.gpu, base.node.gpu);
    // The result still parses as a hwprofile (every cross-field rule holds).
    QCOMPARE(parse_cluster_text(to_yaml(c)), c);
  }

  void panel_shows_max_model_and_throughput_for_the_sliders() {
    gui::WhatIfPanel panel;
    QSignalSpy updated(&panel, &gui::WhatIfPanel::updated);
    const Model model = gpt2_xl();
    panel.setBase(consumer(), model, search::default_search_training(model, consumer()));
    QVERIFY(updated.wait(60000));
    const gui::WhatIfResult* r = panel.result();
    QVERIFY(r && r->max_size.found);
    // The same numbers as calling the library for these settings directly.
    const gui::WhatIfResult direct = gui::evaluate_whatif(consumer(), model, search::default_search_training(model, consumer()),
                                                          std::nullopt, panel.settings(), nullptr);
    QCOMPARE(r->max_size.parameters, direct.max_size.parameters);
    QVERIFY(r->best && direct.best);
    QCOMPARE(r->best->tokens_per_s, direct.best->tokens_per_s);
    QVERIFY(panel.maxModelLabel()->text().contains(QString::fromStdString(units::human_count(static_cast<double>(r->max_size.parameters)))));
    QVERIFY(panel.throughputLabel()->text().contains(QString::fromStdString(units::human_count(r->best->tokens_per_s))));
    // One tier on the line: the simulated throughput beside the simulated MFU, named so.
    QVERIFY(r->best->refined.has_value());
    QVERIFY(panel.throughputLabel()->text().contains("best plan (" + QString::fromStdString(r->best->refined->source) + ")"));
    QVERIFY(panel.throughputLabel()->text().contains(QString::number(r->best->refined->mfu * 100, 'f', 1) + "% MFU"));
    const int64_t base_params = r->max_size.parameters;

    // Less host RAM (16 GiB): the largest model cannot grow, and the numbers follow the slider.
    updated.clear();
    panel.ramSlider()->setValue(1);
    QVERIFY(panel.busy());
    QVERIFY(updated.wait(60000));
    QCOMPARE(panel.settings().host_memory_bytes, int64_t{16} << 30);
    QCOMPARE(panel.result()->cluster.node.host.memory_bytes, int64_t{16} << 30);
    QVERIFY(panel.result()->max_size.parameters <= base_params);

    // With a chosen plan, its throughput on the changed hardware is shown too.
    updated.clear();
    Plan p = search::search(model, consumer(), search::default_search_training(model, consumer()), {}).rows.front().plan;
    panel.setPlan(p);
    QVERIFY(updated.wait(60000));
    QVERIFY(panel.throughputLabel()->text().contains("Chosen plan here"));
    QVERIFY(panel.result()->plan_estimate || !panel.result()->plan_error.empty());
  }

  void budget_fields_bound_the_largest_model() {
    gui::WhatIfPanel panel;
    QSignalSpy updated(&panel, &gui::WhatIfPanel::updated);
    const Model model = gpt2_xl();
    panel.setBase(consumer(), model, search::default_search_training(model, consumer()));
    QVERIFY(updated.wait(60000));
    // The default budget, as maxsize's: 20 tokens per parameter within 90 days.
    const search::MaxSizeResult& budgeted = panel.result()->max_size;
    QVERIFY(budgeted.found);
    QVERIFY(budgeted.budget.time_limited);
    QCOMPARE(budgeted.tokens, 20.0 * static_cast<double>(budgeted.parameters));
    QVERIFY(budgeted.days_to_train <= 90.0);
    QVERIFY(panel.maxModelLabel()->text().contains("within the budget (20 tokens per parameter (Chinchilla) within 90 days)"));
    const int64_t within = budgeted.parameters;

    // A fixed token count and a shorter deadline: the fields reach the search.
    updated.clear();
    panel.tokensEdit()->setText("1B");
    Q_EMIT panel.tokensEdit()->editingFinished();
    panel.daysSpin()->setValue(30);
    QVERIFY(updated.wait(60000));
    QCOMPARE(panel.settings().budget.tokens, int64_t{1'000'000'000});
    QCOMPARE(panel.result()->max_size.tokens, 1e9);
    QVERIFY(panel.result()->max_size.days_to_train <= 30.0);

    // Memory alone: at least as large as within any budget.
    updated.clear();
    panel.budgetBox()->setChecked(false);
    QVERIFY(updated.wait(60000));
    QVERIFY(!panel.result()->max_size.budget.time_limited);
    QVERIFY(panel.result()->max_size.parameters >= within);
    QVERIFY(panel.maxModelLabel()->text().contains("(memory alone)"));

    // A token count that does not parse says so and starts nothing.
    panel.budgetBox()->setChecked(true);
    panel.tokensEdit()->setText("lots");
    Q_EMIT panel.tokensEdit()->editingFinished();
    QVERIFY(!panel.busy());
    bool said = false;
    for (QLabel* l : panel.findChildren<QLabel*>()) said |= l->text().startsWith("Tokens: 'lots' is not a token count");
    QVERIFY(said);
  }
};

QTEST_MAIN(WhatIfTest)
#include "test_whatif.moc"
