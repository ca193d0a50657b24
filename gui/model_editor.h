#pragma once
#include <array>
// Picks a bundled model (configs/models), a model file or a Hugging Face config.json, and edits
// its shape. Shows the parameter count as it changes.
#include <QWidget>

#include "sim/spec/model.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QDoubleSpinBox;
class QFormLayout;
class QLineEdit;
class QSpinBox;

namespace starfish::gui {

class ModelEditor : public QWidget {
  Q_OBJECT
 public:
  explicit ModelEditor(QWidget* parent = nullptr);

  Model model() const;
  void setModel(const Model& m, const QString& path);
  void loadModel(const QString& name_or_path);     // YAML model file or bundled name; throws SpecError
  void importHfConfig(const QString& path);        // config.json; throws SpecError
  QString path() const { return path_; }
  bool modified() const { return !(model() == loaded_); }

  QComboBox* modelBox() const { return preset_; }
  QSpinBox* layersBox() const { return layers_; }
  QSpinBox* hiddenBox() const { return hidden_; }
  QSpinBox* headsBox() const { return heads_; }
  QSpinBox* expertsBox() const { return experts_; }
  QCheckBox* switchBox(size_t i) const { return switches_[i]; }  // kLayerSwitches[i]
  QSpinBox* topKBox() const { return top_k_; }
  QSpinBox* windowBox() const { return window_; }
  QSpinBox* fullEveryBox() const { return full_every_; }
  QLabel* paramsLabel() const { return params_; }

 Q_SIGNALS:
  void changed();
  void loadFailed(const QString& message);

 private:
  void addShapeRows(QFormLayout* form);  // the constructor's parts
  void addMoeRows(QFormLayout* form);
  void connectEdits();
  void fill(const Model& m);
  void updateParams();

  Model loaded_;
  QString path_;
  bool filling_ = false;
  QComboBox* preset_;
  QLineEdit* name_;
  QComboBox* family_;
  QSpinBox* layers_;
  QSpinBox* hidden_;
  QSpinBox* heads_;
  QSpinBox* kv_heads_;
  QSpinBox* ffn_;
  QSpinBox* seq_;
  QSpinBox* vocab_;
  QComboBox* activation_;
  QComboBox* norm_;
  QComboBox* position_;
  QCheckBox* tied_;
  QCheckBox* bias_;
  QCheckBox* dropout_;
  std::array<QCheckBox*, kLayerSwitches.size()> switches_;  // the layer variants (kLayerSwitches)
  QSpinBox* window_;      // Model::sliding_window.tokens (0: none)
  QSpinBox* full_every_;  // and its full_every (0: every layer windowed)
  // Mixture of experts (Model::Moe): 0 experts = a dense model.
  QSpinBox* experts_;
  QSpinBox* top_k_;
  QSpinBox* shared_experts_;
  QSpinBox* expert_ffn_;
  QSpinBox* first_dense_;
  QSpinBox* moe_every_;
  QDoubleSpinBox* capacity_;
  QLabel* params_;
};

}  // namespace starfish::gui
