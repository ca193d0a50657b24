#pragma once
// What-if sliders (nodes, GPUs per node, PCIe generation, NVLink, host RAM, chunk size) over the
// hardware on screen, and the training budget the largest model must train within (tokens,
// days, a tokens/s floor, an iteration ceiling; as `starfish maxsize`). Each change restarts a debounced (350 ms) background evaluation
// (whatif_eval.h); a newer change cancels the running one, so the numbers always belong to the
// sliders' current positions.
#include <QFutureWatcher>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>
#include <optional>

#include "gui/whatif_eval.h"

class QCheckBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;

namespace starfish::gui {

class WhatIfPanel : public QWidget {
  Q_OBJECT
 public:
  explicit WhatIfPanel(QWidget* parent = nullptr);
  ~WhatIfPanel() override;

  // The hardware, model and training the sliders start from; resets the sliders.
  void setBase(const Cluster& cluster, const Model& model, const Training& training);
  void setPlan(const std::optional<Plan>& plan);  // the chosen plan (none: best plan only)

  WhatIfSettings settings() const;
  const WhatIfResult* result() const { return result_ ? &*result_ : nullptr; }
  bool busy() const { return watcher_.isRunning() || debounce_.isActive(); }

  QSlider* nodesSlider() const { return nodes_; }
  QSlider* gpusSlider() const { return gpus_; }
  QSlider* pcieSlider() const { return pcie_; }
  QCheckBox* nvlinkBox() const { return nvlink_; }
  QSlider* ramSlider() const { return ram_; }
  QSlider* chunkSlider() const { return chunk_; }
  QGroupBox* budgetBox() const { return budget_; }
  QLineEdit* tokensEdit() const { return tokens_; }
  QDoubleSpinBox* daysSpin() const { return days_; }
  QDoubleSpinBox* minTokensPerSecondSpin() const { return min_tps_; }
  QDoubleSpinBox* maxIterationSpin() const { return max_iteration_; }
  QLabel* maxModelLabel() const { return max_model_; }
  QLabel* throughputLabel() const { return throughput_; }

 Q_SIGNALS:
  void updated();                          // result() holds the numbers for the sliders
  void applyRequested(const Cluster& c);   // "Use this hardware"

 private:
  void changed();
  void run();
  void done();
  void showSettings();
  QWidget* makeBudgetBox();
  // The budget fields, or the reason they do not parse (a bad token count).
  std::optional<search::TrainingBudget> budget(std::string* error) const;

  Cluster base_;
  Model model_;
  Training training_;
  std::optional<Plan> plan_;
  bool have_base_ = false;
  bool resetting_ = false;
  QTimer debounce_;
  QFutureWatcher<WhatIfResult> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  bool rerun_ = false;
  std::optional<WhatIfResult> result_;

  QSlider* nodes_;
  QSlider* gpus_;
  QSlider* pcie_;
  QCheckBox* nvlink_;
  QSlider* ram_;
  QSlider* chunk_;
  QLabel* nodes_value_;
  QLabel* gpus_value_;
  QLabel* pcie_value_;
  QLabel* ram_value_;
  QLabel* chunk_value_;
  QGroupBox* budget_;
  QLineEdit* tokens_;
  QDoubleSpinBox* days_;
  QDoubleSpinBox* min_tps_;
  QDoubleSpinBox* max_iteration_;
  QLabel* status_;
  QLabel* max_model_;
  QLabel* throughput_;
  QPushButton* apply_;
};

}  // namespace starfish::gui
