// The GUI under bad input (issue 14): broken files opened from the GUI, a Hugging Face config
// that is not JSON or holds a number past Starfish's limits, and a search cancelled mid-way and
// started again. Each gives one located message in lastError(), never a crash, and leaves the
// window usable.
#include <QtTest/QtTest>
#include <QtWidgets>

#include "gui/main_window.h"
#include "gui/model_editor.h"

using namespace starfish;

namespace {

QString write(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (f.open(QIODevice::WriteOnly)) f.write(text);
  return path;
}

}  // namespace

class BadInputTest : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void broken_files_are_reported_in_one_located_line() {
    QTemporaryDir dir;
    gui::MainWindow w;
    QVERIFY(w.loadModel("gpt2-small"));
    const QString base = "name: m\nlayers: 24\nhidden: 1024\nheads: 16\nseq_len: 1024\nvocab: 50257\n";
    const struct {
      QString file;
      QByteArray text;
      QString error;
    } cases[] = {
        {"dup.yaml", (base + "layers: 96\n").toUtf8(), "dup.yaml:7:1: field 'layers' appears twice (first on line 2): keep one"},
        {"syntax.yaml", "name: [m\nlayers: 2\n", "syntax.yaml:"},
        {"huge.yaml", QString(base).replace("heads: 16", "heads: 4294967296").toUtf8(),
         "huge.yaml:4:1: field 'heads': must be at most 16384 (Starfish's limit), got '4294967296'"},
        {"binary.yaml", QByteArray("\x00\xff\x01\x02---\n\x7f", 9), "binary.yaml:"},
    };
    for (const auto& c : cases) {
      const QString path = write(dir, c.file, c.text);
      QVERIFY2(!w.loadModel(path), qPrintable(c.file));
      QVERIFY2(w.lastError().contains(c.error), qPrintable(w.lastError()));
      QVERIFY2(!w.lastError().contains('\n'), qPrintable(w.lastError()));
    }
    QVERIFY(!w.loadHardware(dir.path()));
    QVERIFY2(w.lastError().contains(dir.path() + ": is a folder, not a file"), qPrintable(w.lastError()));
    QVERIFY(w.loadModel("gpt2-medium"));  // still usable
    QCOMPARE(w.modelEditor()->layersBox()->value(), 24);
  }

  void a_hugging_face_config_that_is_not_json_is_refused() {
    QTemporaryDir dir;
    gui::MainWindow w;
    const QString not_json = write(dir, "config.json", "<html>not a config</html>\n{");
    QVERIFY(!w.importHfConfig(not_json));
    QVERIFY2(w.lastError().contains(not_json), qPrintable(w.lastError()));
    QVERIFY(!w.lastError().contains('\n'));
    QDir(dir.path()).mkpath("big");
    const QString too_big = write(dir, "big/config.json",
                                  R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 2147483647, "n_head": 12, )"
                                  R"("n_positions": 1024, "vocab_size": 50257})");
    QVERIFY(!w.importHfConfig(too_big));
    QVERIFY2(w.lastError().contains(too_big + ":1:") &&
                 w.lastError().contains("field 'n_layer': must be at most 100000 (Starfish's limit)"),
             qPrintable(w.lastError()));
  }

  void a_cancelled_search_can_be_started_again() {
    gui::MainWindow w;
    w.refineBox()->setChecked(false);
    QVERIFY(w.loadHardware("dgx-a100-80gb-128nodes"));
    QVERIFY(w.loadModel("gpt3-175b"));
    QSignalSpy done(&w, &gui::MainWindow::searchFinished);
    w.startSearch();
    w.cancelButton()->click();
    w.cancelButton()->click();  // a second click while it winds down changes nothing
    QVERIFY(done.wait(120000));
    QVERIFY(w.searchResult()->cancelled);
    // Again, on a smaller job, to the end.
    QVERIFY(w.loadHardware("dgx-a100-80gb"));
    QVERIFY(w.loadModel("gpt2-small"));
    w.startSearch();
    QVERIFY(done.wait(120000));
    QCOMPARE(done.count(), 2);
    QVERIFY(!w.searchResult()->cancelled);
    QVERIFY(w.searchResult()->fitting > 0);
    QVERIFY(w.planTable()->model()->rowCount() > 0);
    QVERIFY(w.lastError().isEmpty() || !w.lastError().contains("cancel"));
  }
};

QTEST_MAIN(BadInputTest)
#include "test_bad_input.moc"
