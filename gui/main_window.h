#pragma once
// The planner's main window: hardware, model and training on the left; the ranked plans of a
// background search in the middle, with the chosen plan's memory per tier, simulated timeline,
// link utilisation, details and a real run below; what-if sliders on the right.
#include <QMainWindow>
#include <QTemporaryDir>
#include <memory>
#include <optional>

#include "gui/file_io.h"
#include "gui/plan_exporter.h"
#include "sim/search/search.h"

class QAction;
class QCheckBox;
class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QTextBrowser;

namespace starfish::gui {

class GanttPanel;
class PlanColumns;
class HardwareEditor;
class LinkChart;
class MemoryChart;
class ModelEditor;
class PlanTableModel;
class RunPanel;
class SearchRunner;
class SimulationRunner;
class WhatIfPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Flows, callable from menus, the command line and tests (errors go to the status bar and
  // lastError(); nothing here opens a modal dialog except file choosers from the menus).
  bool loadHardware(const QString& name_or_path);
  bool loadModel(const QString& name_or_path);
  bool importHfConfig(const QString& path);
  void startSearch();
  void cancelSearch();
  void selectPlan(int table_row);
  QStringList exportPlan(ExportFormat format, const QString& path);  // files written
  void runSelectedPlan();
  void setConfirmOverwrite(ConfirmOverwrite c) { confirm_ = std::move(c); }
  QString lastError() const { return last_error_; }

  Training training() const;  // what the search uses: the batch and dtype fields, or defaults
  int selectedSearchRow() const { return selected_; }
  const search::SearchResult* searchResult() const { return result_.get(); }

  HardwareEditor* hardwareEditor() const { return hardware_; }
  ModelEditor* modelEditor() const { return model_; }
  QTableView* planTable() const { return table_; }
  PlanTableModel* planModel() const { return plans_; }
  PlanColumns* planColumns() const { return columns_; }
  QTextBrowser* details() const { return details_; }
  MemoryChart* memoryChart() const { return memory_; }
  GanttPanel* gantt() const { return gantt_; }
  LinkChart* linkChart() const { return links_; }
  WhatIfPanel* whatIf() const { return whatif_; }
  RunPanel* runPanel() const { return run_; }
  QTabWidget* tabs() const { return tabs_; }
  QProgressBar* progressBar() const { return progress_; }
  QPushButton* searchButton() const { return search_button_; }
  QPushButton* cancelButton() const { return cancel_button_; }
  QAction* runAction() const { return run_action_; }
  QAction* exportAction(ExportFormat f) const { return export_actions_[static_cast<int>(f)]; }
  QSpinBox* batchBox() const { return batch_; }
  QCheckBox* refineBox() const { return refine_; }

 Q_SIGNALS:
  void searchFinished();
  void planSimulated(int search_row);

 private:
  void buildPlanTable();  // the constructor's parts
  void buildPlanTabs();
  void buildDocks();
  void connectRunners();
  void buildMenus();
  QWidget* buildSetup();
  void inputsChanged();
  void searchDone();
  void simulationDone(int search_row);
  void showDetails();
  void updateActions();
  void error(const QString& message);
  void exportWithDialog(ExportFormat format);
  std::optional<Cluster> checkedCluster();

  HardwareEditor* hardware_;
  ModelEditor* model_;
  QSpinBox* batch_;
  QComboBox* dtype_;
  QCheckBox* refine_;
  QPushButton* search_button_;
  QPushButton* cancel_button_;
  QProgressBar* progress_;
  QLabel* search_status_;
  QTableView* table_;
  PlanTableModel* plans_;
  PlanColumns* columns_;
  QTabWidget* tabs_;
  MemoryChart* memory_;
  GanttPanel* gantt_;
  LinkChart* links_;
  QTextBrowser* details_;
  RunPanel* run_;
  WhatIfPanel* whatif_;
  QAction* export_actions_[kExportFormats];
  QAction* run_action_;

  SearchRunner* searcher_;
  SimulationRunner* simulator_;
  std::shared_ptr<const search::SearchResult> result_;
  int selected_ = -1;
  bool simulated_ = false;
  ConfirmOverwrite confirm_;
  QString last_error_;
  std::unique_ptr<QTemporaryDir> run_dir_;
};

}  // namespace starfish::gui
