// Each class of bad configuration gives an error naming the file, the line and the field.
#include <gtest/gtest.h>

#include "hw/config_error.h"
#include "hw/system_loader.h"

namespace strata::hw {
namespace {

const char* kGood = R"(name: t
gpu: h100-sxm
node:
  gpus: 4
  fabric: {wiring: switch, switch: nvswitch3, link: nvlink4, links_per_gpu: 18}
  host: {cpus: 1, pcie: pcie5}
  nics: {count: 4, link: ib-ndr}
network: {wiring: fat-tree}
)";

std::string error_of(const std::string& yaml, LoadOptions options = {}) {
  try {
    load_system_from_string(yaml, "bad.yaml", options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

}  // namespace

TEST(ConfigErrors, GoodFileLoads) { EXPECT_EQ(error_of(kGood), "no error"); }

TEST(ConfigErrors, UnknownKey) {
  const auto e = error_of(replace(kGood, "  gpus: 4\n", "  gpus: 4\n  gpu_count: 4\n"));
  EXPECT_NE(e.find("bad.yaml:5:3: node.gpu_count: unknown field 'gpu_count'"), std::string::npos) << e;
}

TEST(ConfigErrors, MissingField) {
  const auto e = error_of(replace(kGood, "  gpus: 4\n", ""));
  EXPECT_NE(e.find("bad.yaml:4:3: node: missing required field 'gpus'"), std::string::npos) << e;
}

TEST(ConfigErrors, NonPositiveOrUnitlessBandwidth) {
  auto e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 0 GB/s}}"));
  EXPECT_NE(e.find("bad.yaml:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a positive bandwidth"), std::string::npos) << e;
  e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 400}}"));
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a positive bandwidth with a unit"), std::string::npos) << e;
}

TEST(ConfigErrors, CountsThatDoNotMultiplyOut) {
  const auto e = error_of(replace(kGood, "  gpus: 4\n", "  gpus: 4\n  levels: [{name: board, count: 2}, {name: gpu, count: 3}]\n"));
  EXPECT_NE(e.find("bad.yaml:5:11: node.levels: level counts multiply to 6 but node.gpus is 4"), std::string::npos) << e;
}

TEST(ConfigErrors, UnknownNames) {
  EXPECT_NE(error_of(replace(kGood, "h100-sxm", "h900")).find("bad.yaml:2:6: gpu: unknown GPU model 'h900'"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "link: ib-ndr", "link: ib-qdr")).find("node.nics.link: unknown link kind 'ib-qdr'"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "wiring: switch", "wiring: torus")).find("node.fabric.wiring: unknown wiring 'torus'"),
            std::string::npos);
}

TEST(ConfigErrors, GpusThatCannotReachEachOther) {
  // No NVLink fabric and no PCIe path would be impossible to build; instead several nodes without NICs.
  const auto no_nics = replace(kGood, "  nics: {count: 4, link: ib-ndr}\n", "");
  const auto e = error_of(no_nics, LoadOptions{2});
  EXPECT_NE(e.find("node: 2 nodes need NICs"), std::string::npos) << e;
  const auto no_net = replace(kGood, "network: {wiring: fat-tree}\n", "");
  EXPECT_NE(error_of(no_net, LoadOptions{2}).find("2 nodes need a 'network' section"), std::string::npos);
}

TEST(ConfigErrors, YamlSyntaxErrorHasLine) {
  const auto e = error_of("name: t\nnode: [unclosed\n");
  EXPECT_NE(e.find("bad.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("YAML syntax error"), std::string::npos) << e;
}

}  // namespace strata::hw

namespace strata::hw {

// Issue 10: `--nodes 0` printed a 300-digit range; node counts are checked against one stated limit, in the
// file (with its line) and from the command line.
TEST(ConfigErrors, NodeCountIsRangeChecked) {
  EXPECT_NE(error_of(kGood, LoadOptions{0}).find("--nodes: expected an integer in 1..1024, got 0"),
            std::string::npos);
  EXPECT_NE(error_of(kGood, LoadOptions{kMaxNodes + 1}).find("1..1024"), std::string::npos);
  EXPECT_EQ(error_of(kGood, LoadOptions{kMaxNodes}), "no error");
  const auto e = error_of(replace(kGood, "name: t\n", "name: t\nnodes: 99999999999\n"));
  EXPECT_NE(e.find("bad.yaml:2"), std::string::npos) << e;
  EXPECT_NE(e.find("expected an integer in 1..1024, got 99999999999"), std::string::npos) << e;
}

// Issue 11: `gpus: 4294967304` was narrowed to int and read as 8 GPUs.
TEST(ConfigErrors, GpuCountIsRangeCheckedNotNarrowed) {
  const auto e = error_of(replace(kGood, "  gpus: 4\n", "  gpus: 4294967304\n"));
  EXPECT_NE(e.find("bad.yaml:4"), std::string::npos) << e;
  EXPECT_NE(e.find("node.gpus: expected an integer in 1..256, got 4294967304"), std::string::npos) << e;
  const auto c = error_of(replace(kGood, "cpus: 1", "cpus: 4294967297"));
  EXPECT_NE(c.find("expected an integer in 1..2147483647, got 4294967297"), std::string::npos) << c;
}

}  // namespace strata::hw
