#include "gui/hardware_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>

#include <cmath>

#include "gui/app_paths.h"
#include "gui/form_rows.h"
#include "sim/spec/error.h"
#include "sim/spec/spec_io.h"
#include "sim/spec/units.h"

namespace starfish::gui {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Defaults for parts the loaded profile lacks, when the user switches them on. They are
// typical values, stated here and shown in the tooltips, not measurements.
NvlinkSpec default_nvlink() { return NvlinkSpec{300e9, 2e-6, NvlinkTopology::switched}; }          // A100 NVLink3 per direction
NicSpec default_nic() { return NicSpec{1, 200e9 / 8, 5e-6}; }                  // one 200 Gb/s HDR port
NvmeSpec default_nvme() { return NvmeSpec{2'000'000'000'000, 7e9, 5e9, 100e-6}; }  // PCIe gen4 SSD

}  // namespace

HardwareEditor::HardwareEditor(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  addProfileRows(form);
  addLinkRows(form);
  host_ram_ = new QDoubleSpinBox;
  host_ram_->setRange(1, 65536);
  host_ram_->setDecimals(0);
  host_ram_->setSuffix(" GiB");
  form->addRow("Host RAM", host_ram_);
  nvme_ = new QCheckBox("NVMe");
  nvme_tb_ = new QDoubleSpinBox;
  nvme_tb_->setRange(0.01, 10000);
  nvme_tb_->setSuffix(" TB");
  nvme_tb_->setToolTip("Default when switched on: 2 TB, 7 GB/s read, 5 GB/s write (PCIe gen4 SSD)");
  form->addRow("Storage", row_of({{nullptr, nvme_}, {nullptr, nvme_tb_, 1}}));
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setStyleSheet("color: palette(mid);");
  form->addRow(summary_);
  connectEdits();
}

// The bundled profiles (and the GPU types they hold), the GPU, and how many per node and nodes.
void HardwareEditor::addProfileRows(QFormLayout* form) {
  profile_ = new QComboBox;
  for (const QString& p : bundled_hwprofiles()) {
    profile_->addItem(QFileInfo(p).completeBaseName(), p);
    try {
      const Cluster c = load_cluster(p.toStdString());
      gpu_types_.emplace(QString::fromStdString(c.node.gpu.name), c.node.gpu);
    } catch (const std::exception&) {
      // A broken bundled profile is reported when the user picks it, not here.
    }
  }
  profile_->setToolTip("Bundled hardware profiles (hwprofiles/*.yaml)");
  form->addRow("Profile", profile_);
  gpu_type_ = new QComboBox;
  for (const auto& [name, spec] : gpu_types_) gpu_type_->addItem(name);
  gpu_type_->setToolTip("Replaces the GPU (memory, peak FLOP/s, HBM, efficiency curve) with that of a bundled profile");
  form->addRow("GPU", gpu_type_);
  gpus_ = new QSpinBox;
  gpus_->setRange(1, 64);
  form->addRow("GPUs per node", gpus_);
  nodes_ = new QSpinBox;
  nodes_->setRange(1, 65536);
  form->addRow("Nodes", nodes_);
}

// PCIe, the GPUs' NVLink, and the network's NICs.
void HardwareEditor::addLinkRows(QFormLayout* form) {
  pcie_gen_ = new QSpinBox;
  pcie_gen_->setRange(1, 6);
  pcie_gen_->setPrefix("gen ");
  pcie_lanes_ = new QComboBox;
  for (int l : {1, 2, 4, 8, 16}) pcie_lanes_->addItem(QString("x%1").arg(l), l);
  form->addRow("PCIe", row_of({{nullptr, pcie_gen_}, {nullptr, pcie_lanes_}}));
  nvlink_ = new QCheckBox("NVLink");
  nvlink_bw_ = new QDoubleSpinBox;
  nvlink_bw_->setRange(1, 10000);
  nvlink_bw_->setSuffix(" GB/s");
  nvlink_bw_->setToolTip("Per GPU, per direction, over all its links (default when switched on: 300 GB/s, NVSwitch)");
  nvlink_topology_ = new QComboBox;
  for (NvlinkTopology t : {NvlinkTopology::switched, NvlinkTopology::ring, NvlinkTopology::mesh})
    nvlink_topology_->addItem(to_string(t), static_cast<int>(t));
  nvlink_topology_->setToolTip("switch: an NVSwitch, any pair at the GPU's rate; ring: direct links to two neighbours; "
                               "mesh: a direct link to every other GPU (AMD MI300X xGMI), bandwidth / (GPUs - 1) each");
  form->addRow("GPU link", row_of({{nullptr, nvlink_}, {nullptr, nvlink_bw_, 1}, {nullptr, nvlink_topology_}}));
  nic_count_ = new QSpinBox;
  nic_count_->setRange(0, 32);
  nic_count_->setSuffix(" NICs");
  nic_count_->setToolTip("0: no fabric (a single node only)");
  nic_gbps_ = new QDoubleSpinBox;
  nic_gbps_->setRange(1, 3200);
  nic_gbps_->setSuffix(" Gb/s");
  form->addRow("Network", row_of({{nullptr, nic_count_}, {nullptr, nic_gbps_, 1}}));
}

// A bundled profile picked loads it; any field edited updates what is enabled and the summary.
void HardwareEditor::connectEdits() {
  connect(profile_, &QComboBox::activated, this, [this](int i) {
    try {
      loadProfile(profile_->itemData(i).toString());
    } catch (const std::exception& e) {
      Q_EMIT loadFailed(QString::fromStdString(e.what()));
    }
  });
  auto edited = [this] {
    if (filling_) return;
    updateEnabled();
    updateSummary();
    Q_EMIT changed();
  };
  for (QSpinBox* s : {gpus_, nodes_, pcie_gen_, nic_count_}) connect(s, &QSpinBox::valueChanged, this, edited);
  for (QDoubleSpinBox* s : {nvlink_bw_, nic_gbps_, host_ram_, nvme_tb_}) connect(s, &QDoubleSpinBox::valueChanged, this, edited);
  for (QCheckBox* b : {nvlink_, nvme_}) connect(b, &QCheckBox::toggled, this, edited);
  connect(pcie_lanes_, &QComboBox::currentIndexChanged, this, edited);
  connect(nvlink_topology_, &QComboBox::currentIndexChanged, this, edited);
  connect(gpu_type_, &QComboBox::currentIndexChanged, this, edited);
}

void HardwareEditor::loadProfile(const QString& name_or_path) {
  const QString path = resolve_hwprofile(name_or_path);
  setCluster(load_cluster(path.toStdString()), path);
}

void HardwareEditor::setCluster(const Cluster& c, const QString& path) {
  loaded_ = c;
  path_ = path;
  const int i = profile_->findData(path);
  if (i >= 0) profile_->setCurrentIndex(i);
  fill(c);
  Q_EMIT changed();
}

void HardwareEditor::fill(const Cluster& c) {
  filling_ = true;
  const QString gpu = QString::fromStdString(c.node.gpu.name);
  if (!gpu_types_.count(gpu)) {
    gpu_types_.emplace(gpu, c.node.gpu);
    gpu_type_->addItem(gpu);
  }
  gpu_types_[gpu] = c.node.gpu;  // the loaded file's own numbers win for its GPU
  gpu_type_->setCurrentText(gpu);
  gpus_->setValue(c.node.gpus);
  nodes_->setValue(c.nodes);
  pcie_gen_->setValue(c.node.pcie.generation);
  pcie_lanes_->setCurrentIndex(std::max(0, pcie_lanes_->findData(c.node.pcie.lanes)));
  nvlink_->setChecked(c.node.nvlink.has_value());
  const NvlinkSpec shown = c.node.nvlink.value_or(default_nvlink());
  nvlink_bw_->setValue(shown.bandwidth_Bps / 1e9);
  nvlink_topology_->setCurrentIndex(std::max(0, nvlink_topology_->findData(static_cast<int>(shown.topology))));
  nic_count_->setValue(c.node.nic ? c.node.nic->count : 0);
  nic_gbps_->setValue((c.node.nic ? *c.node.nic : default_nic()).bandwidth_Bps * 8 / 1e9);
  host_ram_->setValue(std::round(static_cast<double>(c.node.host.memory_bytes) / kGiB));
  nvme_->setChecked(c.node.nvme.has_value());
  nvme_tb_->setValue(static_cast<double>((c.node.nvme ? *c.node.nvme : default_nvme()).capacity_bytes) / 1e12);
  filling_ = false;
  updateEnabled();
  updateSummary();
}

void HardwareEditor::updateEnabled() {
  nvlink_bw_->setEnabled(nvlink_->isChecked());
  nvlink_topology_->setEnabled(nvlink_->isChecked());
  nic_gbps_->setEnabled(nic_count_->value() > 0);
  nvme_tb_->setEnabled(nvme_->isChecked());
}

void HardwareEditor::updateSummary() {
  const Cluster c = cluster();
  auto rate = [](double Bps) { return QString::fromStdString(units::human_bytes(Bps)) + "/s"; };
  // What each GPU of a collective over the whole node gets (over PCIe: the ring's, each switch's
  // uplink crossed once a direction, not the host-copy share of it).
  const double node_ring_Bps = c.intra_node_group_bandwidth_Bps(c.node.gpus);
  QString gpu_gpu = rate(node_ring_Bps);
  // A mesh's pair has one link of the GPU's several: say what a pair gets too.
  if (c.intra_node_group_bandwidth_Bps(2) < node_ring_Bps) gpu_gpu += ", a pair " + rate(c.intra_node_group_bandwidth_Bps(2));
  summary_->setText(QString("%1 GPUs, %2 GPU memory each; GPU-GPU %3, per-GPU network %4")
                        .arg(c.total_gpus())
                        .arg(QString::fromStdString(units::human_bytes(static_cast<double>(c.node.gpu.memory_bytes))))
                        .arg(gpu_gpu)
                        .arg(c.node.nic ? rate(c.inter_node_bandwidth_per_gpu_Bps()) : QString("none")));
}

Cluster HardwareEditor::cluster() const {
  Cluster c = loaded_;
  NodeSpec& n = c.node;
  if (auto it = gpu_types_.find(gpu_type_->currentText()); it != gpu_types_.end()) n.gpu = it->second;
  n.gpus = gpus_->value();
  c.nodes = nodes_->value();
  n.pcie.generation = pcie_gen_->value();
  n.pcie.lanes = pcie_lanes_->currentData().toInt();
  n.pcie.gpus_per_root = std::min(n.pcie.gpus_per_root, n.gpus);
  if (nvlink_->isChecked()) {
    NvlinkSpec l = loaded_.node.nvlink.value_or(default_nvlink());
    const double bw = nvlink_bw_->value() * 1e9;
    if (std::abs(bw - l.bandwidth_Bps) > 0.5e9) l.bandwidth_Bps = bw;  // the spin box rounds
    l.topology = static_cast<NvlinkTopology>(nvlink_topology_->currentData().toInt());
    if (!l.switched()) l.domain_nodes = 1;  // a domain across nodes needs an NVSwitch
    n.nvlink = l;
  } else {
    n.nvlink.reset();
  }
  if (nic_count_->value() > 0) {
    NicSpec nic = loaded_.node.nic.value_or(default_nic());
    nic.count = nic_count_->value();
    const double bw = nic_gbps_->value() * 1e9 / 8;
    if (std::abs(bw - nic.bandwidth_Bps) > 0.05e9) nic.bandwidth_Bps = bw;
    n.nic = nic;
  } else {
    n.nic.reset();
  }
  const double ram = host_ram_->value() * kGiB;
  if (std::abs(ram - static_cast<double>(n.host.memory_bytes)) > 0.5 * kGiB) n.host.memory_bytes = static_cast<int64_t>(ram);
  if (nvme_->isChecked()) {
    NvmeSpec s = loaded_.node.nvme.value_or(default_nvme());
    const double bytes = nvme_tb_->value() * 1e12;
    if (std::abs(bytes - static_cast<double>(s.capacity_bytes)) > 0.005e12) s.capacity_bytes = static_cast<int64_t>(bytes);
    n.nvme = s;
  } else {
    n.nvme.reset();
  }
  return c;
}

}  // namespace starfish::gui
