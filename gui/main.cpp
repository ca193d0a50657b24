// starfish-gui [--hw H] [--model M] [--nodes N] [--search] [--select N] [--tab NAME]
//              [--screenshot out.png]
// The planner's window. The options script it: load a bundled (or any) hwprofile and model,
// run the search, choose the N-th best plan, show a tab, and with --screenshot save a PNG of
// the window once the plan is simulated and the what-if has settled, then quit.
#include <QApplication>
#include <QCommandLineParser>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>
#include <cstdio>

#include <fmt/core.h>

#include "gui/hardware_editor.h"
#include "gui/main_window.h"
#include "gui/whatif_panel.h"

using starfish::gui::MainWindow;

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("starfish-gui");
  QCommandLineParser cli;
  cli.setApplicationDescription("Starfish: plan, simulate and run the training of large transformers");
  cli.addHelpOption();
  const QCommandLineOption hw(QString("hw"), "Hardware profile: bundled name or file.", "H");
  const QCommandLineOption model(QString("model"), "Model: bundled name or file.", "M");
  const QCommandLineOption hf(QString("hf-config"), "Import the model from a Hugging Face config.json.", "FILE");
  const QCommandLineOption nodes(QString("nodes"), "Number of nodes.", "N");
  const QCommandLineOption search(QString("search"), "Run the plan search at start.");
  const QCommandLineOption select(QString("select"), "After the search, choose the N-th plan (1 = best).", "N");
  const QCommandLineOption tab(QString("tab"), "Show this tab: Memory, Timeline, Links, Details, Run.", "NAME");
  const QCommandLineOption shot(QString("screenshot"), "Save a PNG of the window after the flow, then quit.", "PNG");
  cli.addOptions({hw, model, hf, nodes, search, select, tab, shot});
  cli.process(app);

  MainWindow w;
  auto fail = [&](const QString& what) {
    fmt::print(stderr, "starfish-gui: {}\n", qPrintable(what));
    return 1;
  };
  if (!w.loadHardware(cli.isSet(hw) ? cli.value(hw) : "dgx-a100-80gb")) return fail(w.lastError());
  if (cli.isSet(hf)) {
    if (!w.importHfConfig(cli.value(hf))) return fail(w.lastError());
  } else if (!w.loadModel(cli.isSet(model) ? cli.value(model) : "gpt2-xl")) {
    return fail(w.lastError());
  }
  if (cli.isSet(nodes)) w.hardwareEditor()->nodesBox()->setValue(cli.value(nodes).toInt());
  w.show();

  const QString png = cli.value(shot);
  const int choose = cli.isSet(select) ? cli.value(select).toInt() : (png.isEmpty() ? 0 : 1);
  auto show_tab = [&] {
    if (!cli.isSet(tab)) return;
    for (int i = 0; i < w.tabs()->count(); ++i)
      if (w.tabs()->tabText(i).compare(cli.value(tab), Qt::CaseInsensitive) == 0) w.tabs()->setCurrentIndex(i);
  };
  auto grab = [&] {
    // Let the what-if finish for the chosen plan, then paint and save.
    auto* poll = new QTimer(&w);
    QObject::connect(poll, &QTimer::timeout, &w, [&, poll] {
      if (w.whatIf()->busy()) return;
      poll->stop();
      show_tab();
      QTimer::singleShot(300, &w, [&] {
        const bool ok = w.grab().save(png);
        if (!ok) fmt::print(stderr, "starfish-gui: cannot write {}\n", qPrintable(png));
        else fmt::print("starfish-gui: wrote {}\n", qPrintable(png));
        app.exit(ok ? 0 : 1);
      });
    });
    poll->start(200);
  };
  QObject::connect(&w, &MainWindow::searchFinished, &w, [&] {
    if (choose > 0) w.selectPlan(choose - 1);
    else show_tab();
    if (!png.isEmpty() && choose == 0) grab();
  });
  QObject::connect(&w, &MainWindow::planSimulated, &w, [&](int) {
    show_tab();
    if (!png.isEmpty()) grab();
  });
  if (cli.isSet(search) || !png.isEmpty()) QTimer::singleShot(0, &w, [&] { w.startSearch(); });
  else show_tab();
  return app.exec();
}
