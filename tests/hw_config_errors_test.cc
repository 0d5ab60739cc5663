// Each class of bad configuration gives an error naming the file, the line and the field.
#include <set>

#include <fmt/format.h>
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

TEST(ConfigErrors, GoodFileLoads) {
  EXPECT_EQ(error_of(kGood), "no error");
}

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
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a bandwidth from 1 KB/s"), std::string::npos) << e;
  e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 400}}"));
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a bandwidth from 1 KB/s to 1000 TB/s with a unit"),
            std::string::npos)
      << e;
}

TEST(ConfigErrors, CountsThatDoNotMultiplyOut) {
  const auto e = error_of(replace(kGood, "  gpus: 4\n",
                                  "  gpus: 4\n  levels: [{name: board, count: 2}, {name: gpu, count: 3}]\n"));
  EXPECT_NE(e.find("bad.yaml:5:11: node.levels: level counts multiply to 6 but node.gpus is 4"),
            std::string::npos)
      << e;
}

TEST(ConfigErrors, UnknownNames) {
  EXPECT_NE(error_of(replace(kGood, "h100-sxm", "h900")).find("bad.yaml:2:6: gpu: unknown GPU model 'h900'"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "link: ib-ndr", "link: ib-qdr"))
                .find("node.nics.link: unknown link kind 'ib-qdr'"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kGood, "wiring: switch", "wiring: torus"))
                .find("node.fabric.wiring: unknown wiring 'torus'"),
            std::string::npos);
}

TEST(ConfigErrors, CpuVendorIsOneOfThoseNcclDistinguishes) {
  EXPECT_EQ(load_system_from_string(replace(kGood, "cpus: 1,", "cpus: 1, cpu_vendor: amd,"), "good.yaml")
                .cpu_vendor(),
            CpuVendor::kAmd);
  EXPECT_EQ(load_system_from_string(kGood, "good.yaml").cpu_vendor(), CpuVendor::kOther);
  const auto e = error_of(replace(kGood, "cpus: 1,", "cpus: 1, cpu_vendor: arm,"));
  EXPECT_NE(e.find("bad.yaml:6:31: node.host.cpu_vendor: unknown CPU vendor 'arm' (expected intel, amd or "
                   "other)"),
            std::string::npos)
      << e;
}

// node.fabric.nccl_ring and nccl_nvls, as `strata validate ring-slices` / `nvls-steps` write them: NCCL's
// channels and tables of increasing slice or chunk sizes with positive times.
TEST(ConfigErrors, MeasuredNcclRingIsChannelsAndIncreasingSlices) {
  const auto with = [](const std::string& ring) {
    return replace(kGood, "links_per_gpu: 18}", "links_per_gpu: 18,\n    nccl_ring: " + ring + "}");
  };
  const auto t = load_system_from_string(
      with("{channels: 24, handoffs: [{slice: 32KiB, time: 20us}, {slice: 1MiB, time: 500us}]}"),
      "good.yaml");
  EXPECT_EQ(t.nccl_table(hw::NcclTableId::kRing).channels, 24);
  ASSERT_EQ(t.nccl_table(hw::NcclTableId::kRing).times.points().size(), 2u);
  EXPECT_DOUBLE_EQ(t.nccl_table(hw::NcclTableId::kRing).times.points()[1].seconds, 500e-6);
  EXPECT_TRUE(load_system_from_string(kGood, "good.yaml").nccl_table(hw::NcclTableId::kRing).empty());
  auto e = error_of(with("{channels: 24, handoffs: [{slice: 1MiB, time: 20us}, {slice: 32KiB, time: 5us}]}"));
  EXPECT_NE(e.find("bad.yaml:6:"), std::string::npos) << e;
  EXPECT_NE(e.find("node.fabric.nccl_ring.handoffs[1].slice: expected slice sizes that increase"),
            std::string::npos)
      << e;
  e = error_of(with("{channels: 24, handoffs: [{slice: 1MiB, time: 0us}]}"));
  EXPECT_NE(e.find("node.fabric.nccl_ring.handoffs[0].time: expected a time per handoff above 0 s"),
            std::string::npos)
      << e;
  e = error_of(with("{channels: 0, handoffs: [{slice: 1MiB, time: 1us}]}"));
  EXPECT_NE(e.find("node.fabric.nccl_ring.channels"), std::string::npos) << e;
  e = error_of(with("{channels: 24, handoffs: []}"));
  EXPECT_NE(e.find("node.fabric.nccl_ring.handoffs: expected at least one"), std::string::npos) << e;
  e = error_of(with("{channels: 24, handoffs: [{slice: 1MiB, time: 1us, rate: 2}]}"));
  EXPECT_NE(e.find("rate"), std::string::npos) << e;
  // node.fabric.nccl_nvls: the same table by chunk size.
  const auto nvls = [](const std::string& steps) {
    return replace(kGood, "links_per_gpu: 18}", "links_per_gpu: 18,\n    nccl_nvls: " + steps + "}");
  };
  EXPECT_EQ(load_system_from_string(nvls("{steps: [{chunk: 16KiB, time: 9us}]}"), "good.yaml")
                .nccl_table(hw::NcclTableId::kNvls)
                .times.points()
                .size(),
            1u);
  e = error_of(nvls("{steps: [{slice: 16KiB, time: 9us}]}"));
  EXPECT_NE(e.find("node.fabric.nccl_nvls.steps[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("slice"), std::string::npos) << e;
  e = error_of(nvls("{steps: [{chunk: 64KiB, time: 9us}, {chunk: 16KiB, time: 5us}]}"));
  EXPECT_NE(e.find("node.fabric.nccl_nvls.steps[1].chunk: expected chunk sizes that increase"),
            std::string::npos)
      << e;
  // node.nics.nccl_ring (`strata validate net-slices`): the ring's table, beside the NICs.
  const auto net = [](const std::string& ring) {
    return replace(kGood, "link: ib-ndr}", "link: ib-ndr,\n    nccl_ring: " + ring + "}");
  };
  const auto n =
      load_system_from_string(net("{channels: 16, handoffs: [{slice: 64KiB, time: 12us}]}"), "good.yaml");
  EXPECT_EQ(n.nccl_table(hw::NcclTableId::kNetRing).channels, 16);
  EXPECT_DOUBLE_EQ(n.nccl_table(hw::NcclTableId::kNetRing).times.points()[0].seconds, 12e-6);
  EXPECT_TRUE(n.nccl_table(hw::NcclTableId::kRing).empty());
  e = error_of(net("{channels: 16, handoffs: [{slice: 64KiB, time: 2s}]}"));
  EXPECT_NE(e.find("bad.yaml:8:"), std::string::npos) << e;
  EXPECT_NE(
      e.find("node.nics.nccl_ring.handoffs[0].time: expected a time per handoff above 0 s and at most 1 s"),
      std::string::npos)
      << e;
  e = error_of(net("{channels: 65, handoffs: [{slice: 64KiB, time: 12us}]}"));
  EXPECT_NE(e.find("node.nics.nccl_ring.channels"), std::string::npos) << e;
  // node.nics.nccl_tree (`strata validate net-chunks`): the tree's table, sized by chunk, not slice.
  const auto tree = [](const std::string& table) {
    return replace(kGood, "link: ib-ndr}", "link: ib-ndr,\n    nccl_tree: " + table + "}");
  };
  const auto tr = load_system_from_string(
      tree("{channels: 16, handoffs: [{chunk: 128KiB, time: 30us}, {chunk: 512KiB, time: 90us}]}"),
      "good.yaml");
  EXPECT_EQ(tr.nccl_table(hw::NcclTableId::kNetTree).channels, 16);
  EXPECT_DOUBLE_EQ(tr.nccl_table(hw::NcclTableId::kNetTree).times.points()[1].seconds, 90e-6);
  EXPECT_TRUE(tr.nccl_table(hw::NcclTableId::kNetRing).empty());
  e = error_of(tree("{channels: 16, handoffs: [{slice: 64KiB, time: 12us}]}"));
  EXPECT_NE(e.find("bad.yaml:8:"), std::string::npos) << e;
  EXPECT_NE(e.find("node.nics.nccl_tree.handoffs[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("chunk"), std::string::npos) << e;
  e = error_of(tree("{channels: 0, handoffs: [{chunk: 64KiB, time: 12us}]}"));
  EXPECT_NE(e.find("node.nics.nccl_tree.channels"), std::string::npos) << e;
  e = error_of(tree("{channels: 8, handoffs: [{chunk: 2GiB, time: 12us}]}"));
  EXPECT_NE(e.find("node.nics.nccl_tree.handoffs[0].chunk: expected a chunk of at most 1 GiB"),
            std::string::npos)
      << e;
  // node.fabric.nccl_ring_ll128 and node.nics.nccl_ring_ll128 (`strata validate ring-ll128`, `net-ll128`):
  // the LL128 ring's tables, by step payload.
  const auto ll128 = [](const std::string& fabric, const std::string& nics) {
    auto text =
        replace(kGood, "links_per_gpu: 18}", "links_per_gpu: 18,\n    nccl_ring_ll128: " + fabric + "}");
    return nics.empty() ? text
                        : replace(text, "link: ib-ndr}", "link: ib-ndr,\n    nccl_ring_ll128: " + nics + "}");
  };
  const auto l = load_system_from_string(
      ll128("{channels: 24, handoffs: [{step: 144000, time: 9us}, {step: 576000, time: 21us}]}",
            "{channels: 16, handoffs: [{step: 576000, time: 60us}]}"),
      "good.yaml");
  EXPECT_EQ(l.nccl_table(hw::NcclTableId::kRingLl128).channels, 24);
  EXPECT_DOUBLE_EQ(l.nccl_table(hw::NcclTableId::kRingLl128).times.points()[0].bytes, 144000);
  EXPECT_DOUBLE_EQ(l.nccl_table(hw::NcclTableId::kNetRingLl128).times.points()[0].seconds, 60e-6);
  EXPECT_TRUE(l.nccl_table(hw::NcclTableId::kRing).empty());
  EXPECT_TRUE(l.nccl_table(hw::NcclTableId::kNetRing).empty());
  e = error_of(ll128("{channels: 24, handoffs: [{slice: 144000, time: 9us}]}", ""));
  EXPECT_NE(e.find("node.fabric.nccl_ring_ll128.handoffs[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("step"), std::string::npos) << e;
  e = error_of(ll128("{channels: 24, handoffs: [{step: 144000, time: 9us}]}",
                     "{channels: 16, handoffs: [{step: 576000, time: 9us}, {step: 144000, time: 5us}]}"));
  EXPECT_NE(e.find("node.nics.nccl_ring_ll128.handoffs[1].step: expected step sizes that increase"),
            std::string::npos)
      << e;
  // node.nics.nccl_tree_ll128 (`strata validate net-chunks-ll128`): the LL128 tree's, by chunk payload.
  const auto t128 = load_system_from_string(
      tree("{channels: 16, handoffs: [{chunk: 64KiB, time: 30us}]},\n    nccl_tree_ll128: {channels: 16, "
           "handoffs: [{chunk: 144000, time: 40us}]}"),
      "good.yaml");
  EXPECT_DOUBLE_EQ(t128.nccl_table(hw::NcclTableId::kNetTreeLl128).times.points()[0].bytes, 144000);
  EXPECT_EQ(t128.nccl_table(hw::NcclTableId::kNetTree).times.points().size(), 1u);
  e = error_of(
      tree("{channels: 16, handoffs: [{chunk: 64KiB, time: 30us}]},\n    nccl_tree_ll128: {channels: "
           "16, handoffs: [{step: 144000, time: 40us}]}"));
  EXPECT_NE(e.find("node.nics.nccl_tree_ll128.handoffs[0]"), std::string::npos) << e;
  EXPECT_NE(e.find("chunk"), std::string::npos) << e;
}

// Each measured table is declared once (hw/nccl_measured.cc): its place in the file is node.<section>.<key>,
// no two share a place or a command, and a file that gives every one of them loads each into its own slot.
TEST(ConfigErrors, EveryMeasuredNcclTableHasOnePlaceAndOneCommand) {
  std::set<std::string> paths, commands;
  for (const auto& t : nccl_tables()) {
    EXPECT_EQ(t.path, fmt::format("node.{}.{}", t.section, t.key));
    EXPECT_TRUE(t.section == "fabric" || t.section == "nics") << t.path;
    EXPECT_EQ(t.across_nodes, t.section == "nics") << t.path;
    EXPECT_TRUE(paths.insert(std::string(t.path)).second) << t.path;
    EXPECT_TRUE(commands.insert(std::string(t.command)).second) << t.command;
    EXPECT_EQ(&nccl_table_info(t.id), &t);
  }
  EXPECT_EQ(paths.size(), kNcclTableCount);
  // Every table in one file, each with a time of its own (its index in microseconds).
  std::string fabric, nics;
  for (const auto& t : nccl_tables()) {
    const std::string table =
        fmt::format("{}: {{{}{}: [{{{}: 64KiB, time: {}us}}]}}", t.key, t.channels ? "channels: 8, " : "",
                    t.list_key, t.size_key, static_cast<int>(t.id) + 1);
    (t.section == "fabric" ? fabric : nics) += ", " + table;
  }
  std::string yaml = replace(kGood, "links_per_gpu: 18}", "links_per_gpu: 18" + fabric + "}");
  yaml = replace(yaml, "link: ib-ndr}", "link: ib-ndr" + nics + "}");
  const auto topo = load_system_from_string(yaml, "all.yaml");
  EXPECT_EQ(topo.nccl_tables().given().size(), kNcclTableCount);
  for (const auto& t : nccl_tables()) {
    const auto& m = topo.nccl_table(t.id);
    ASSERT_EQ(m.times.points().size(), 1u) << t.path;
    EXPECT_DOUBLE_EQ(m.times.points()[0].seconds, (static_cast<int>(t.id) + 1) * 1e-6) << t.path;
    EXPECT_EQ(m.channels, t.channels ? 8 : 0) << t.path;
  }
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

// yaml-cpp answers lookups with the first of two equal keys; the second value must not be lost silently.
TEST(ConfigErrors, DuplicateKeys) {
  auto e = error_of(replace(kGood, "gpu: h100-sxm\n", "gpu: h100-sxm\ngpu: a100-sxm4-80gb\n"));
  EXPECT_NE(e.find("bad.yaml:3:1: gpu: duplicate key 'gpu'"), std::string::npos) << e;
  e = error_of(replace(kGood, "  gpus: 4\n", "  gpus: 4\n  gpus: 8\n"));
  EXPECT_NE(e.find("bad.yaml:5:3: node.gpus: duplicate key 'gpus'"), std::string::npos) << e;
  e = error_of(replace(kGood, "{cpus: 1, pcie: pcie5}", "{cpus: 1, pcie: pcie5, cpus: 2}"));
  EXPECT_NE(e.find("node.host.cpus: duplicate key 'cpus'"), std::string::npos) << e;
}

// An unterminated quote used to swallow the rest of the file and surface as "missing required field 'gpu'".
TEST(ConfigErrors, UnterminatedQuoteNamesWhereItOpens) {
  const auto e = error_of(replace(kGood, "name: t\n", "name: \"t\n"));
  EXPECT_NE(e.find("bad.yaml:1:7: YAML syntax error: the quoted text starting here is never closed"),
            std::string::npos)
      << e;
  // Quotes inside plain scalars, comments, block scalars and escaped quotes are not openings.
  EXPECT_EQ(error_of(replace(kGood, "name: t\n", "name: it's 5\" # don't\ndescription: |\n  \"open\n  'x\n")),
            "no error");
  EXPECT_EQ(error_of(replace(kGood, "name: t\n", "name: 'it''s'\ndescription: \"a \\\" b\"\n")), "no error");
}

TEST(ConfigErrors, EmptyOrNonMappingDocument) {
  EXPECT_NE(error_of("").find("bad.yaml: the file is empty"), std::string::npos);
  EXPECT_NE(error_of("# only a comment\n").find("bad.yaml: the file is empty"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b\n").find("expected a YAML mapping (key: value lines) at the top level"),
            std::string::npos);
}

TEST(ConfigErrors, DirectoryOrMissingFile) {
  const auto load = [](const std::string& path) -> std::string {
    try {
      load_system(path);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(load("/"), "/: is a directory, expected a YAML file");
  EXPECT_EQ(load("/nonexistent/x.yaml"), "/nonexistent/x.yaml: cannot open file: no such file");
}

// Counts above int32 used to be narrowed (4294967304 GPUs became 8); every count has a range.
TEST(ConfigErrors, CountsOutsideTheirRange) {
  auto e = error_of(replace(kGood, "  gpus: 4\n", "  gpus: 4294967304\n"));
  EXPECT_NE(e.find("bad.yaml:4:9: node.gpus: expected an integer from 1 to 1024, got '4294967304'"),
            std::string::npos)
      << e;
  e = error_of(replace(kGood, "node:\n", "nodes: 4294967298\nnode:\n"));
  EXPECT_NE(e.find("nodes: expected an integer from 1 to 1048576, got '4294967298'"), std::string::npos) << e;
  e = error_of(kGood, LoadOptions{2000000});
  EXPECT_NE(e.find("--nodes: expected an integer from 1 to 1048576, got 2000000"), std::string::npos) << e;
  // 1024 GPUs per node x 1024 nodes is the largest system; one node more is refused up front.
  e = error_of(replace(replace(kGood, "gpus: 4", "gpus: 1024"), "count: 4", "count: 8"), LoadOptions{1025});
  EXPECT_NE(e.find("1025 nodes x 1024 GPUs = 1049600 GPUs is above strata's limit of 1048576"),
            std::string::npos)
      << e;
  e = error_of(replace(kGood, "{cpus: 1,", "{cpus: 1, pcie_switches: -1,"));
  EXPECT_NE(e.find("node.host.pcie_switches: expected an integer from 0 to 1024"), std::string::npos) << e;
}

// Quantities that would overflow simulated time (int64 picoseconds) or divide by ~0 are refused with a range.
TEST(ConfigErrors, QuantitiesOutsideTheirRange) {
  auto e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, latency: 1e300 s}}"));
  EXPECT_NE(e.find("node.nics.link.latency: expected a duration from 0 s to 1e6 s"), std::string::npos) << e;
  e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, latency: 2 s}}"));
  EXPECT_NE(e.find("node.nics.link: link latency 2 s is above the 1 s limit for one hop"), std::string::npos)
      << e;
  e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 1e-300 B/s}}"));
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a bandwidth from 1 KB/s to 1000 TB/s"),
            std::string::npos)
      << e;
  e = error_of(replace(kGood, "link: ib-ndr}", "link: {kind: ib-ndr, bandwidth: 1e300 TB/s}}"));
  EXPECT_NE(e.find("node.nics.link.bandwidth: expected a bandwidth from 1 KB/s to 1000 TB/s"),
            std::string::npos)
      << e;
  e = error_of(replace(kGood, "gpu: h100-sxm\n", "gpu: {model: h100-sxm, hbm_capacity: 0 B}\n"));
  EXPECT_NE(e.find("gpu.hbm_capacity: expected a size from 1 B to 1024 TiB"), std::string::npos) << e;
}

// Cache levels in front of the device memory (a CPU's L2 and last-level cache, docs/replay.md §3): one level
// as a map, several as a list, smallest first.
TEST(ConfigErrors, GpuCacheLevelsAreReadAndChecked) {
  auto with_cache = [](std::string_view cache) {
    return replace(kGood, "gpu: h100-sxm\n", fmt::format("gpu: {{model: h100-sxm, cache: {}}}\n", cache));
  };
  const auto t = load_system_from_string(with_cache("{capacity: 8 MiB, bandwidth: 90 GB/s}"), "t.yaml");
  ASSERT_EQ(t.gpu().caches.size(), 1u);
  EXPECT_EQ(t.gpu().caches[0], (CacheLevel{8.0 * 1024 * 1024, 90e9}));
  EXPECT_TRUE(load_system_from_string(kGood, "t.yaml").gpu().caches.empty());  // not given: not modelled
  const auto two = load_system_from_string(
      with_cache("[{capacity: 768 KiB, bandwidth: 100 GB/s}, {capacity: 24 MiB, bandwidth: 85 GB/s}]"),
      "t.yaml");
  ASSERT_EQ(two.gpu().caches.size(), 2u);
  EXPECT_EQ(two.gpu().caches[0], (CacheLevel{768.0 * 1024, 100e9}));
  EXPECT_EQ(two.gpu().caches[1], (CacheLevel{24.0 * 1024 * 1024, 85e9}));

  auto e = error_of(with_cache("{capacity: 8 MiB}"));
  EXPECT_NE(e.find("gpu.cache"), std::string::npos) << e;
  EXPECT_NE(e.find("bandwidth"), std::string::npos) << e;
  e = error_of(with_cache("{capacity: 8 MiB, bandwidth: 90 GB/s, ways: 16}"));
  EXPECT_NE(e.find("ways"), std::string::npos) << e;
  e = error_of(with_cache("[]"));
  EXPECT_NE(e.find("gpu.cache: expected at least one cache level"), std::string::npos) << e;
  e = error_of(
      with_cache("[{capacity: 24 MiB, bandwidth: 85 GB/s}, {capacity: 768 KiB, bandwidth: 80 GB/s}]"));
  EXPECT_NE(e.find("gpu.cache[1].capacity: expected cache levels smallest first"), std::string::npos) << e;
  e = error_of(
      with_cache("[{capacity: 768 KiB, bandwidth: 85 GB/s}, {capacity: 24 MiB, bandwidth: 100 GB/s}]"));
  EXPECT_NE(e.find("gpu.cache[1].bandwidth: expected a larger cache level to be no faster"),
            std::string::npos)
      << e;
  e = error_of(with_cache("[{capacity: 0 B, bandwidth: 85 GB/s}]"));
  EXPECT_NE(e.find("gpu.cache[0].capacity"), std::string::npos) << e;
}

// The GEMM tile grouped convolutions are padded to (hw::GemmTile): the catalogue's GPUs 32 x 16, its
// host-cpu AVX2's 8 x 1; a system file overrides either dimension, each an integer from 1 to 1024.
TEST(ConfigErrors, GpuGemmTileIsReadAndChecked) {
  auto with_tile = [](std::string_view tile) {
    return replace(kGood, "gpu: h100-sxm\n", fmt::format("gpu: {{model: h100-sxm, gemm_tile: {}}}\n", tile));
  };
  EXPECT_EQ(load_system_from_string(kGood, "t.yaml").gpu().gemm_tile, (GemmTile{32, 16}));
  EXPECT_EQ(find_gpu("host-cpu")->gemm_tile, (GemmTile{8, 1}));
  EXPECT_EQ(load_system_from_string(with_tile("{n: 16, k: 1}"), "t.yaml").gpu().gemm_tile, (GemmTile{16, 1}));
  EXPECT_EQ(load_system_from_string(with_tile("{k: 8}"), "t.yaml").gpu().gemm_tile, (GemmTile{32, 8}));

  auto e = error_of(with_tile("{n: 0, k: 1}"));
  EXPECT_NE(e.find("gpu.gemm_tile.n: expected an integer from 1 to 1024, got '0'"), std::string::npos) << e;
  e = error_of(with_tile("{n: 16, k: 2.5}"));
  EXPECT_NE(e.find("gpu.gemm_tile.k: expected an integer from 1 to 1024"), std::string::npos) << e;
  e = error_of(with_tile("{n: 16, m: 4}"));
  EXPECT_NE(e.find("gpu.gemm_tile"), std::string::npos) << e;
  EXPECT_NE(e.find("'m'"), std::string::npos) << e;
}

}  // namespace strata::hw

namespace strata::hw {

// Issue 10: `--nodes 0` printed a 300-digit range; node counts are checked against one stated limit, in the
// file (with its line) and from the command line.
TEST(ConfigErrors, NodeCountIsRangeChecked) {
  EXPECT_NE(error_of(kGood, LoadOptions{0}).find("--nodes: expected an integer from 1 to 1048576, got 0"),
            std::string::npos);
  EXPECT_EQ(error_of(kGood, LoadOptions{1024}), "no error");
  const auto e = error_of(replace(kGood, "name: t\n", "name: t\nnodes: 99999999999\n"));
  EXPECT_NE(e.find("bad.yaml:2"), std::string::npos) << e;
  EXPECT_NE(e.find("expected an integer from 1 to 1048576, got '99999999999'"), std::string::npos) << e;
}

}  // namespace strata::hw
