#pragma once
// Picks a bundled hwprofile or a file, and edits the numbers a capacity planner changes: GPU
// type, GPUs per node, nodes, PCIe, NVLink (and its topology), NICs, host RAM and NVMe. Everything else of the
// profile (efficiency curves, latencies, CPU Adam rate) is kept from the loaded file.
#include <QWidget>
#include <map>

#include "sim/spec/hardware.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QSpinBox;

namespace starfish::gui {

class HardwareEditor : public QWidget {
  Q_OBJECT
 public:
  explicit HardwareEditor(QWidget* parent = nullptr);

  // The profile as loaded plus the edits on screen.
  Cluster cluster() const;
  void setCluster(const Cluster& c, const QString& path);
  // Loads a hwprofile file (or bundled name); throws SpecError on bad input.
  void loadProfile(const QString& name_or_path);
  QString path() const { return path_; }       // the file it came from ("" when none)
  bool modified() const { return !(cluster() == loaded_); }

  QComboBox* profileBox() const { return profile_; }
  QSpinBox* nodesBox() const { return nodes_; }
  QSpinBox* gpusBox() const { return gpus_; }
  QComboBox* gpuTypeBox() const { return gpu_type_; }
  QCheckBox* nvlinkBox() const { return nvlink_; }
  QComboBox* nvlinkTopologyBox() const { return nvlink_topology_; }
  QSpinBox* pcieGenBox() const { return pcie_gen_; }
  QDoubleSpinBox* hostRamBox() const { return host_ram_; }

 Q_SIGNALS:
  void changed();                 // any field, or a new profile
  void loadFailed(const QString& message);

 private:
  void addProfileRows(QFormLayout* form);  // the constructor's parts
  void addLinkRows(QFormLayout* form);
  void connectEdits();
  void fill(const Cluster& c);
  void updateEnabled();
  void updateSummary();

  Cluster loaded_;
  QString path_;
  std::map<QString, GpuSpec> gpu_types_;  // every GPU of the bundled profiles, by name
  bool filling_ = false;

  QComboBox* profile_;
  QComboBox* gpu_type_;
  QSpinBox* gpus_;
  QSpinBox* nodes_;
  QSpinBox* pcie_gen_;
  QComboBox* pcie_lanes_;
  QCheckBox* nvlink_;
  QDoubleSpinBox* nvlink_bw_;
  QComboBox* nvlink_topology_;
  QSpinBox* nic_count_;
  QDoubleSpinBox* nic_gbps_;
  QDoubleSpinBox* host_ram_;
  QCheckBox* nvme_;
  QDoubleSpinBox* nvme_tb_;
  QLabel* summary_;
};

}  // namespace starfish::gui
