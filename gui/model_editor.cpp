#include "gui/model_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

#include "gui/app_paths.h"
#include "gui/form_rows.h"
#include "sim/spec/hf_import.h"
#include "sim/cost/params.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

QSpinBox* spin(int lo, int hi) {
  auto* s = new QSpinBox;
  s->setRange(lo, hi);
  s->setGroupSeparatorShown(true);
  return s;
}

}  // namespace

ModelEditor::ModelEditor(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  preset_ = new QComboBox;
  for (const QString& p : bundled_models()) preset_->addItem(QFileInfo(p).completeBaseName(), p);
  preset_->setToolTip("Bundled models (configs/models/*.yaml)");
  form->addRow("Model", preset_);
  name_ = new QLineEdit;
  form->addRow("Name", name_);
  family_ = new QComboBox;
  family_->addItems({"gpt", "llama"});
  family_->setToolTip("How the what-if's maximum model size grows this model");
  form->addRow("Family", family_);
  addShapeRows(form);
  addMoeRows(form);
  params_ = new QLabel;
  params_->setStyleSheet("font-weight: bold;");
  form->addRow("Parameters", params_);
  connectEdits();
}

// The dense transformer: its sizes, the kinds of its layers, embeddings, biases and dropout.
void ModelEditor::addShapeRows(QFormLayout* form) {
  layers_ = spin(1, 100000);
  hidden_ = spin(1, 1 << 20);
  heads_ = spin(1, 65536);
  kv_heads_ = spin(1, 65536);
  ffn_ = spin(1, 1 << 22);
  seq_ = spin(1, 1 << 22);
  vocab_ = spin(1, 1 << 24);
  form->addRow("Shape", row_of({{"layers", layers_}, {"hidden", hidden_, 1}}));
  form->addRow("Heads", row_of({{nullptr, heads_}, {"kv", kv_heads_}}));
  form->addRow("FFN", row_of({{nullptr, ffn_, 1}, {"seq", seq_}}));
  form->addRow("Vocabulary", vocab_);
  activation_ = new QComboBox;
  activation_->addItems({"gelu", "swiglu"});
  norm_ = new QComboBox;
  norm_->addItems({"layernorm", "rmsnorm"});
  position_ = new QComboBox;
  position_->addItems({"learned", "rope"});
  form->addRow("Layers are", row_of({{nullptr, activation_}, {nullptr, norm_}, {nullptr, position_}}));
  tied_ = new QCheckBox("tied embeddings");
  bias_ = new QCheckBox("biases");
  dropout_ = new QCheckBox("dropout");
  form->addRow("", row_of({{nullptr, tied_}, {nullptr, bias_}, {nullptr, dropout_}}));
  // The layer variants by their model-file names (qkv_bias, qk_norm, ...), as the README lists them.
  QWidget* variants = new QWidget;
  auto* box = new QHBoxLayout(variants);
  box->setContentsMargins(0, 0, 0, 0);
  for (size_t i = 0; i < kLayerSwitches.size(); ++i) box->addWidget(switches_[i] = new QCheckBox(kLayerSwitches[i].field));
  form->addRow("Variants", variants);
  window_ = spin(0, 1 << 22);
  window_->setSpecialValueText("none");
  window_->setToolTip("sliding_window.tokens: the keys a query attends, itself included; none: full causal attention");
  full_every_ = spin(0, 100000);
  full_every_->setSpecialValueText("none");
  full_every_->setToolTip("sliding_window.full_every: layers n, 2n, ... attend fully; none: every layer is windowed");
  form->addRow("Sliding window", row_of({{nullptr, window_}, {"full every", full_every_}}));
}

// Mixture of experts: the experts of a MoE layer, which layers are MoE, and their capacity.
void ModelEditor::addMoeRows(QFormLayout* form) {
  experts_ = spin(0, 65536);
  experts_->setToolTip("Routed experts per MoE layer; 0: a dense model");
  top_k_ = spin(0, 65536);
  top_k_->setToolTip("Experts each token is routed to");
  shared_experts_ = spin(0, 65536);
  expert_ffn_ = spin(0, 1 << 19);
  form->addRow("Experts", row_of({{nullptr, experts_}, {"top-k", top_k_}, {"shared", shared_experts_},
                                  {"FFN", expert_ffn_, 1}}));
  first_dense_ = spin(0, 100000);
  first_dense_->setToolTip("Layers before the first MoE layer stay dense");
  moe_every_ = spin(1, 100000);
  moe_every_->setToolTip("After them, every n-th layer is MoE");
  capacity_ = new QDoubleSpinBox;
  capacity_->setRange(0, 1000);
  capacity_->setDecimals(2);
  capacity_->setSpecialValueText("dropless");
  capacity_->setToolTip("Capacity factor: tokens beyond it x the mean per expert are dropped; dropless computes them all");
  form->addRow("MoE layers", row_of({{"first dense", first_dense_}, {"every", moe_every_}, {"capacity", capacity_, 1}}));
}

// A bundled model picked loads it; any field edited updates the parameter count and says so.
void ModelEditor::connectEdits() {
  connect(preset_, &QComboBox::activated, this, [this](int i) {
    try {
      loadModel(preset_->itemData(i).toString());
    } catch (const std::exception& e) {
      Q_EMIT loadFailed(QString::fromStdString(e.what()));
    }
  });
  auto edited = [this] {
    if (filling_) return;
    updateParams();
    Q_EMIT changed();
  };
  for (QSpinBox* s : {layers_, hidden_, heads_, kv_heads_, ffn_, seq_, vocab_, experts_, top_k_, shared_experts_, expert_ffn_,
                      first_dense_, moe_every_, window_, full_every_})
    connect(s, &QSpinBox::valueChanged, this, edited);
  connect(capacity_, &QDoubleSpinBox::valueChanged, this, edited);
  for (QComboBox* c : {family_, activation_, norm_, position_}) connect(c, &QComboBox::currentIndexChanged, this, edited);
  for (QCheckBox* b : {tied_, bias_, dropout_}) connect(b, &QCheckBox::toggled, this, edited);
  for (QCheckBox* b : switches_) connect(b, &QCheckBox::toggled, this, edited);
  connect(name_, &QLineEdit::textEdited, this, edited);
}

void ModelEditor::loadModel(const QString& name_or_path) {
  const QString path = resolve_model(name_or_path);
  setModel(load_model(path.toStdString()), path);
}

// The CLI's import (sim/spec/hf_import.h): the training sequence is the default 4096 (capped by
// learned positions), never the model's maximum context; the editor shows and edits it.
void ModelEditor::importHfConfig(const QString& path) {
  setModel(import_hf_config_file(path.toStdString()).model, QString());
}

void ModelEditor::setModel(const Model& m, const QString& path) {
  loaded_ = m;
  path_ = path;
  const int i = preset_->findData(path);
  if (i >= 0) preset_->setCurrentIndex(i);
  else preset_->setCurrentIndex(-1), preset_->setPlaceholderText(QString::fromStdString(m.name) + " (imported)");
  fill(m);
  Q_EMIT changed();
}

void ModelEditor::fill(const Model& m) {
  filling_ = true;
  name_->setText(QString::fromStdString(m.name));
  family_->setCurrentText(QString::fromStdString(m.family));
  layers_->setValue(m.layers);
  hidden_->setValue(m.hidden);
  heads_->setValue(m.heads);
  kv_heads_->setValue(m.kv_heads);
  ffn_->setValue(m.ffn_hidden);
  seq_->setValue(m.seq_len);
  vocab_->setValue(m.vocab);
  activation_->setCurrentIndex(m.activation == Activation::swiglu ? 1 : 0);
  norm_->setCurrentIndex(m.norm == Norm::rmsnorm ? 1 : 0);
  position_->setCurrentIndex(m.position == PositionEmbedding::rope ? 1 : 0);
  tied_->setChecked(m.tied_embeddings);
  bias_->setChecked(m.bias);
  dropout_->setChecked(m.dropout);
  for (size_t i = 0; i < kLayerSwitches.size(); ++i) switches_[i]->setChecked(m.*kLayerSwitches[i].member);
  window_->setValue(m.sliding_window.tokens);
  full_every_->setValue(m.sliding_window.full_every);
  experts_->setValue(m.moe.experts);
  top_k_->setValue(m.moe.top_k);
  shared_experts_->setValue(m.moe.shared_experts);
  expert_ffn_->setValue(m.moe.expert_ffn_hidden);
  first_dense_->setValue(m.moe.first_dense_layers);
  moe_every_->setValue(m.moe.every);
  capacity_->setValue(m.moe.capacity_factor);
  filling_ = false;
  updateParams();
}

Model ModelEditor::model() const {
  Model m = loaded_;
  m.name = name_->text().toStdString();
  m.family = family_->currentText().toStdString();
  m.layers = layers_->value();
  m.hidden = hidden_->value();
  m.heads = heads_->value();
  m.kv_heads = kv_heads_->value();
  m.ffn_hidden = ffn_->value();
  m.seq_len = seq_->value();
  m.vocab = vocab_->value();
  m.activation = activation_->currentIndex() == 1 ? Activation::swiglu : Activation::gelu;
  m.norm = norm_->currentIndex() == 1 ? Norm::rmsnorm : Norm::layernorm;
  m.position = position_->currentIndex() == 1 ? PositionEmbedding::rope : PositionEmbedding::learned;
  m.tied_embeddings = tied_->isChecked();
  m.bias = bias_->isChecked();
  m.dropout = dropout_->isChecked();
  for (size_t i = 0; i < kLayerSwitches.size(); ++i) m.*kLayerSwitches[i].member = switches_[i]->isChecked();
  if (m.position != PositionEmbedding::learned) m.max_positions = 0;  // a rotary model has no table
  m.sliding_window = window_->value() > 0 ? SlidingWindow{window_->value(), full_every_->value()} : SlidingWindow{};
  m.moe = Moe{};
  if (experts_->value() > 0)
    m.moe = Moe{experts_->value(), top_k_->value(), shared_experts_->value(),
                expert_ffn_->value() > 0 ? expert_ffn_->value() : m.ffn_hidden, first_dense_->value(), moe_every_->value(),
                capacity_->value()};
  return m;
}

void ModelEditor::updateParams() {
  const Model m = model();
  if (m.heads <= 0 || (m.attention_head_dim == 0 && m.hidden % m.heads != 0) || m.heads % m.kv_heads != 0) {
    params_->setText(QString("heads %1 / kv %2 do not divide hidden %3").arg(m.heads).arg(m.kv_heads).arg(m.hidden));
    return;
  }
  if (m.qkv_bias && m.bias) {
    params_->setText("qkv_bias applies with biases off (biases already include q/k/v)");
    return;
  }
  if (m.max_positions > 0 && m.max_positions < m.seq_len) {
    params_->setText(QString("the learned positions end at %1 tokens, below seq %2").arg(m.max_positions).arg(m.seq_len));
    return;
  }
  if (const std::string why = sliding_window_full_every_problem(m.sliding_window, m.layers); !why.empty()) {
    params_->setText("full every " + QString::fromStdString(why));
    return;
  }
  if (m.is_moe() && (m.moe.top_k < 1 || m.moe.top_k > m.moe.experts || m.moe.first_dense_layers >= m.layers)) {
    params_->setText(QString("top-k %1 of %2 experts, %3 dense of %4 layers: not a mixture of experts")
                         .arg(m.moe.top_k).arg(m.moe.experts).arg(m.moe.first_dense_layers).arg(m.layers));
    return;
  }
  const ParamCount p = count_parameters(m);
  auto count = [](int64_t n) { return QString::fromStdString(units::human_count(static_cast<double>(n))); };
  if (m.is_moe())
    params_->setText(QString("%1, %2 active  (%3 per MoE layer)").arg(count(p.total), count(p.active), count(p.per_moe_layer)));
  else
    params_->setText(QString("%1  (%2 per layer)").arg(count(p.total), count(p.per_layer)));
}

}  // namespace starfish::gui
