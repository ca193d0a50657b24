// A hardware profile's `base:`: the profile it starts from, fields given again replace the base's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/spec/spec_io.h"
#include "support/cluster_yaml.h"
#include "support/error_of.h"

namespace starfish {
namespace {

namespace fs = std::filesystem;
using ::starfish::testing::error_of;

// The base every test starts from: a whole profile by itself.
const std::string& kBase = ::starfish::testing::kCluster;

// A folder of its own per test, removed after.
class HardwareBase : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("starfish-base-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "sub");
    write("base.yaml", kBase);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(HardwareBase, FieldsGivenAgainReplaceTheBasesAndTheRestAreKept) {
  const std::string path = write("sub/small.yaml",
                                 "base: ../base.yaml\n"
                                 "name: small\n"
                                 "node:\n"
                                 "  gpus: 2\n"
                                 "  gpu:\n"
                                 "    memory: 6MiB\n"
                                 "    matmul_efficiency: [[2GFLOP, 0.4]]\n"
                                 "  nvlink: {bandwidth: 1.5GB/s}\n");
  const Cluster base = load_cluster((dir_ / "base.yaml").string());
  const Cluster c = load_cluster(path);
  Cluster expected = base;
  expected.name = "small";
  expected.node.gpus = 2;
  expected.node.gpu.memory_bytes = int64_t{6} << 20;
  expected.node.gpu.matmul_efficiency.points = {{2e9, 0.4}};  // a list replaces the base's whole
  expected.node.nvlink->bandwidth_Bps = 1.5e9;  // a map merges: the base's other nvlink fields stay
  expected.provenance = c.provenance;  // where each field was read differs, not what
  EXPECT_EQ(c, expected);
  // The merged profile saves as one whole profile, which loads back equal.
  EXPECT_EQ(parse_cluster_text(to_yaml(c), "saved.yaml").node, c.node);
}

TEST_F(HardwareBase, BasesChainAndAFieldOfTheDerivedProfileIsCheckedWithItsOwnLine) {
  write("mid.yaml", "base: base.yaml\nname: mid\nnode:\n  gpu:\n    memory: 40GiB\n");
  const std::string top = write("top.yaml", "base: mid.yaml\nname: top\nnode:\n  gpus: 4\n");
  const Cluster c = load_cluster(top);
  EXPECT_EQ(c.name, "top");
  EXPECT_EQ(c.node.gpus, 4);
  EXPECT_EQ(c.node.gpu.memory_bytes, int64_t{40} << 30);
  EXPECT_EQ(c.node.host.cpu_cores, 64);
  const std::string bad = write("bad.yaml", "base: base.yaml\nname: bad\nnode:\n  gpu:\n    memroy: 6MiB\n");
  EXPECT_NE(error_of([&] { load_cluster(bad); }).find(bad + ":5:5: field 'node.gpu.memroy': unknown field"), std::string::npos)
      << error_of([&] { load_cluster(bad); });
}

TEST_F(HardwareBase, AnErrorInTheBaseNamesTheBaseFile) {
  const std::string broken = write("broken.yaml", std::string(kBase).replace(kBase.find("80GiB"), 5, "eighty"));
  const std::string path = write("derived.yaml", "base: broken.yaml\nname: d\n");
  EXPECT_EQ(error_of([&] { load_cluster(path); }).rfind(broken + ":7:", 0), 0u) << error_of([&] { load_cluster(path); });
}

TEST_F(HardwareBase, AMissingBaseACycleAndABaseInTextAreOneLineErrors) {
  const std::string missing = write("missing.yaml", "name: m\nbase: nowhere.yaml\n");
  const std::string e = error_of([&] { load_cluster(missing); });
  EXPECT_EQ(e.rfind(missing + ":2:7: field 'base': ", 0), 0u) << e;
  EXPECT_NE(e.find("nowhere.yaml"), std::string::npos) << e;

  const std::string a = write("a.yaml", "base: b.yaml\nname: a\n");
  write("b.yaml", "base: a.yaml\nname: b\n");
  EXPECT_NE(error_of([&] { load_cluster(a); }).find("more than 8 deep (a cycle?)"), std::string::npos)
      << error_of([&] { load_cluster(a); });

  EXPECT_EQ(error_of([] { parse_cluster_text("base: x.yaml\nname: t\n", "t.yaml"); }),
            "t.yaml:1:1: field 'base': a base profile is read only from a file (load the profile by its path)");
  const std::string not_a_path = write("list.yaml", "base: [a, b]\nname: l\n");
  EXPECT_NE(error_of([&] { load_cluster(not_a_path); }).find(":1:7: field 'base': expected the path"), std::string::npos)
      << error_of([&] { load_cluster(not_a_path); });
}

}  // namespace
}  // namespace starfish
