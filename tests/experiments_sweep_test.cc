// Sweeps over any experiment kind (experiments/sweep*.h): points expanded against hand-listed ones, seeded
// sampling reproducible and within its ranges, one Latin-hypercube sample per stratum, scale factors that
// change the loaded topology by exactly the factor, bad specs reported with file, line and field, and the
// result store computing only missing or changed points (kind invocations counted).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "experiments/experiment.h"
#include "experiments/sweep.h"
#include "experiments/sweep_report.h"
#include "experiments/sweep_spec.h"
#include "hw/config_error.h"
#include "hw/gpu_spec.h"
#include "hw/link_kind.h"
#include "util/version.h"

namespace {

namespace fs = std::filesystem;
using namespace strata;
using namespace strata::experiments;

const std::string kHw = std::string(STRATA_SOURCE_DIR) + "/configs/hw/dgx-h100.yaml";

SweepSpec spec_of(const std::string& sweep_yaml) {
  const YamlReader root = YamlReader::from_string(sweep_yaml, "t.yaml");
  return parse_sweep(root.at("sweep"));
}

std::vector<std::vector<std::string>> texts(const SweepSpec& s) {
  std::vector<std::vector<std::string>> out;
  for (const auto& p : s.points) {
    out.emplace_back();
    for (const auto& v : p) out.back().push_back(v.text);
  }
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SweepSpec, GridIsTheCartesianProductLastAxisFastest) {
  const auto s = spec_of(
      "sweep:\n  axes:\n    op: [allreduce, allgather]\n    hw.nodes: [1, 2, 4]\n"
      "  scale: {nic_bandwidth: [1, 2]}\n");
  ASSERT_EQ(s.axes.size(), 3u);
  EXPECT_EQ(s.axes[0].target, AxisTarget::kExperiment);
  EXPECT_EQ(s.axes[1].target, AxisTarget::kHardware);
  EXPECT_EQ(s.axes[1].path, std::vector<std::string>{"nodes"});
  EXPECT_EQ(s.axes[2].target, AxisTarget::kScale);
  EXPECT_EQ(s.axes[2].name, "scale.nic_bandwidth");
  std::vector<std::vector<std::string>> expected;
  for (const char* op : {"allreduce", "allgather"})
    for (const char* n : {"1", "2", "4"})
      for (const char* f : {"1", "2"}) expected.push_back({op, n, f});
  EXPECT_EQ(texts(s), expected);
}

TEST(SweepSpec, ZipPairsTheIthValues) {
  const auto s = spec_of(
      "sweep:\n  mode: zip\n  axes:\n    systems.0.nodes: [1, 2, 4]\n    sizes: [1MiB:1MiB, "
      "2MiB:2MiB, 4MiB:4MiB]\n");
  EXPECT_EQ(texts(s), (std::vector<std::vector<std::string>>{
                          {"1", "1MiB:1MiB"}, {"2", "2MiB:2MiB"}, {"4", "4MiB:4MiB"}}));
}

TEST(SweepSpec, ListTakesThePointsAsWritten) {
  const auto s = spec_of(
      "sweep:\n  mode: list\n  points:\n    - {op: allreduce, scale.hbm_bandwidth: 2}\n"
      "    - {op: broadcast, scale.hbm_bandwidth: 0.5}\n");
  ASSERT_EQ(s.axes.size(), 2u);
  EXPECT_EQ(s.axes[1].target, AxisTarget::kScale);
  EXPECT_EQ(texts(s), (std::vector<std::vector<std::string>>{{"allreduce", "2"}, {"broadcast", "0.5"}}));
}

TEST(SweepSpec, UniformDrawsAreTheTop53BitsOfTheGenerator) {
  std::mt19937_64 a(7), b(7);
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t raw = b();
    EXPECT_EQ(uniform01(a), std::ldexp(static_cast<double>(raw >> 11), -53));
  }
  std::mt19937_64 c(7);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(uniform_index(c, 3), 3u);
}

TEST(SweepSpec, RandomSamplingIsSeededAndWithinItsRanges) {
  const std::string yaml =
      "sweep:\n  mode: random\n  samples: 50\n  seed: 42\n  axes:\n"
      "    hw.nodes: {min: 1, max: 8, integer: true}\n    sizes: [1MiB:1MiB, 1GiB:1GiB]\n"
      "  scale:\n    nic_bandwidth: {min: 0.5, max: 4, log: true}\n";
  const auto s = spec_of(yaml);
  ASSERT_EQ(s.points.size(), 50u);
  EXPECT_EQ(texts(s), texts(spec_of(yaml)));  // same seed, same points
  std::string other = yaml;
  other.replace(other.find("seed: 42"), 8, "seed: 43");
  EXPECT_NE(texts(s), texts(spec_of(other)));
  std::set<std::string> nodes_seen;
  for (const auto& p : s.points) {
    const double n = *p[0].number;
    EXPECT_EQ(n, std::floor(n));
    EXPECT_GE(n, 1);
    EXPECT_LE(n, 8);
    nodes_seen.insert(p[0].text);
    EXPECT_TRUE(p[1].text == "1MiB:1MiB" || p[1].text == "1GiB:1GiB") << p[1].text;
    EXPECT_GE(*p[2].number, 0.5);
    EXPECT_LE(*p[2].number, 4);
  }
  EXPECT_GE(nodes_seen.size(), 6u);  // 50 draws over 8 values
}

TEST(SweepSpec, LatinHypercubeHasOneSamplePerStratumOnEveryAxis) {
  const std::size_t n = 17;
  const auto s = spec_of(
      "sweep:\n  mode: lhs\n  samples: 17\n  seed: 5\n  axes:\n"
      "    a: {min: -3, max: 5}\n    b: {min: 0.01, max: 100, log: true}\n");
  ASSERT_EQ(s.points.size(), n);
  std::set<long> strata_a, strata_b;
  for (const auto& p : s.points) {
    const double a = *p[0].number, b = *p[1].number;
    ASSERT_GE(a, -3);
    ASSERT_LT(a, 5);
    strata_a.insert(static_cast<long>(std::floor((a + 3) / 8 * n)));
    strata_b.insert(
        static_cast<long>(std::floor((std::log(b) - std::log(0.01)) / (std::log(100) - std::log(0.01)) * n)));
  }
  EXPECT_EQ(strata_a.size(), n);
  EXPECT_EQ(strata_b.size(), n);
  EXPECT_EQ(*strata_a.begin(), 0);
  EXPECT_EQ(*strata_a.rbegin(), static_cast<long>(n - 1));
  EXPECT_EQ(*strata_b.rbegin(), static_cast<long>(n - 1));
}

TEST(SweepSpec, BadSpecsNameFileLineAndField) {
  const auto bad = [](const std::string& sweep) { return error_of([&] { spec_of("sweep:\n" + sweep); }); };
  EXPECT_EQ(
      bad("  mode: zip\n  axes:\n    op: [a, b]\n    sizes: [x, y, z]\n"),
      "t.yaml:5:12: sweep.axes.sizes: zip pairs the i-th values of every axis: expected 2 values like 'op', "
      "got 3");
  EXPECT_EQ(bad("  axes:\n    op: []\n"),
            "t.yaml:3:9: sweep.axes.op: expected at least one value (the axis is empty)");
  EXPECT_EQ(bad("  mode: lhs\n  samples: 4\n  axes:\n    hw.nodes: {min: a, max: 3}\n"),
            "t.yaml:5:21: sweep.axes.hw.nodes.min: expected a number, got 'a'");
  EXPECT_EQ(bad("  axes:\n    hw.nodes: {min: 1, max: 3}\n"),
            "t.yaml:3:15: sweep.axes.hw.nodes: a range {min, max} needs mode random or lhs (mode is grid)");
  EXPECT_EQ(
      bad("  mode: cartesian\n  axes: {op: [a]}\n"),
      "t.yaml:2:9: sweep.mode: unknown sweep mode 'cartesian' (expected grid, list, zip, random or lhs)");
  EXPECT_NE(bad("  scale: {nvme_bandwidth: [2]}\n")
                .find("t.yaml:2:27: sweep.scale.nvme_bandwidth: unknown scale "
                      "factor 'nvme_bandwidth' (expected one of: nic_bandwidth"),
            std::string::npos);
  EXPECT_EQ(bad("  scale: {nic_bandwidth: [2, -1]}\n"),
            "t.yaml:2:30: sweep.scale.nic_bandwidth[1]: expected a scale factor: a number > 0");
  EXPECT_EQ(
      bad("  axes: {kind: [a]}\n"),
      "t.yaml:2:16: sweep.axes.kind: 'kind' cannot be swept (the experiment's name, kind and sweep stay the "
      "same at every point)");
  EXPECT_EQ(bad("  {}\n"), "t.yaml:2:3: sweep: expected at least one axis under `axes` or `scale`");
}

// --- running sweeps
// ---------------------------------------------------------------------------------------------

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("strata-sweep-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// collective-sweep, with every run of its compute step counted.
struct CountingKind {
  int runs = 0;
  ExperimentKind kind;
  CountingKind() {
    const ExperimentKind& real = *find_experiment_kind("collective-sweep");
    kind = ExperimentKind{real.name, real.summary, [this, &real](const ExperimentFile& f) {
                            auto run = real.parse(f);
                            return std::function<void(ResultsDir&, const RunOptions&)>(
                                [this, run](ResultsDir& out, const RunOptions& o) {
                                  ++runs;
                                  run(out, o);
                                });
                          }};
  }
};

std::string experiment(const std::string& hw, const std::string& sweep,
                       const std::string& sizes = "1MiB:4MiB:4") {
  return "experiment: st\nkind: collective-sweep\nop: allreduce\nsizes: " + sizes +
         "\nalgorithms: [ring]\nsystems:\n  - hw: " + hw + "\n    nodes: 2\n" + sweep;
}

SweepOutcome run(const TempDir& d, const std::string& file, CountingKind& counter,
                 const std::string& out = "out") {
  return run_sweep(ExperimentFile::load(file), RunOptions{(d.path / out).string(), false}, &counter.kind);
}

TEST(SweepStore, ASecondRunComputesNothingAndAnExtendedAxisOnlyTheNewPoints) {
  const TempDir d;
  const std::string file = d.write("s.yaml", experiment(kHw, "sweep:\n  scale: {nic_bandwidth: [1, 2]}\n"));
  CountingKind counter;
  auto o = run(d, file, counter);
  EXPECT_EQ(counter.runs, 2);
  EXPECT_EQ(o.computed, 2u);
  o = run(d, file, counter);
  EXPECT_EQ(counter.runs, 2);  // nothing new
  EXPECT_EQ(o.reused, 2u);
  d.write("s.yaml", experiment(kHw, "sweep:\n  scale: {nic_bandwidth: [1, 2, 4]}\n"));
  o = run(d, file, counter);
  EXPECT_EQ(counter.runs, 3);  // only 4x
  EXPECT_EQ(o.computed, 1u);
  EXPECT_EQ(o.reused, 2u);
  const auto dry = sweep_dry_run(ExperimentFile::load(file), RunOptions{(d.path / "out").string(), false});
  EXPECT_NE(dry.find("3 points: 3 in the store, 0 to compute"), std::string::npos) << dry;
  // The results set: every point with its effective configuration; the tidy CSV has 3 points x 3 sizes x
  // numeric columns (nodes, gpus, bytes, time, algbw, busbw).
  const fs::path res = d.path / "out" / "st";
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(fs::is_regular_file(res / "points" / std::to_string(i) / "effective" / "experiment.yaml"));
    EXPECT_TRUE(fs::is_regular_file(res / "points" / std::to_string(i) / "effective" / "hw0-dgx-h100.yaml"));
    EXPECT_TRUE(fs::is_regular_file(res / "points" / std::to_string(i) / "collectives.csv"));
  }
  const std::string csv = read(res / "sweep.csv");
  EXPECT_EQ(static_cast<int>(std::count(csv.begin(), csv.end(), '\n')), 1 + 3 * 2 * 6);
  EXPECT_TRUE(
      csv.starts_with("scale.nic_bandwidth,point,table,row,system,op,algorithm_requested,algorithm,"
                      "protocol,metric,value\n"))
      << csv.substr(0, 200);
  EXPECT_TRUE(fs::is_regular_file(res / "sweep.json"));
  EXPECT_TRUE(fs::is_regular_file(res / "summary.md"));
}

TEST(SweepStore, AChangedFieldRerunsOnlyThePointsItAffects) {
  const TempDir d;
  fs::copy_file(kHw, d.path / "a.yaml");
  fs::copy_file(kHw, d.path / "b.yaml");
  const std::string file =
      d.write("s.yaml", experiment("a.yaml",
                                   "sweep:\n  axes:\n    systems.0.hw: [a.yaml, b.yaml]\n"
                                   "  scale: {nic_bandwidth: [1, 2]}\n"));
  CountingKind counter;
  run(d, file, counter);
  EXPECT_EQ(counter.runs, 4);
  // Only the points on b.yaml read the changed field.
  std::string b = read(d.path / "b.yaml");
  b.replace(b.find("link: ib-ndr"), 12, "link: ib-hdr");
  d.write("b.yaml", b);
  const auto o = run(d, file, counter);
  EXPECT_EQ(counter.runs, 6);
  EXPECT_EQ(o.computed, 2u);
  // A field every point reads reruns them all.
  d.write("s.yaml", experiment("a.yaml",
                               "sweep:\n  axes:\n    systems.0.hw: [a.yaml, b.yaml]\n"
                               "  scale: {nic_bandwidth: [1, 2]}\n",
                               "1MiB:1MiB"));
  run(d, file, counter);
  EXPECT_EQ(counter.runs, 10);
}

TEST(SweepStore, SameConfigAndSeedGiveByteIdenticalCsvs) {
  const TempDir d;
  const std::string file = d.write(
      "s.yaml",
      experiment(
          kHw,
          "sweep:\n  mode: lhs\n  samples: 3\n  seed: 9\n"
          "  scale: {fabric_bandwidth: {min: 0.5, max: 2}}\n  axes:\n    op: [allreduce, allgather]\n"));
  CountingKind a, b;
  run(d, file, a, "one");
  run(d, file, b, "two");
  EXPECT_EQ(a.runs, 3);
  EXPECT_EQ(b.runs, 3);  // a store of its own
  const std::string csv = read(d.path / "one" / "st" / "sweep.csv");
  EXPECT_GT(csv.size(), 100u);
  EXPECT_EQ(csv, read(d.path / "two" / "st" / "sweep.csv"));
  EXPECT_EQ(read(d.path / "one" / "st" / "points" / "2" / "collectives.csv"),
            read(d.path / "two" / "st" / "points" / "2" / "collectives.csv"));
}

TEST(SweepPoints, BadPathsAreReportedAtTheAxis) {
  const TempDir d;
  const std::string f1 = d.write("s.yaml", experiment(kHw, "sweep:\n  axes:\n    systems.3.nodes: [1]\n"));
  EXPECT_EQ(error_of([&] { check_experiment(f1); }),
            f1 + ":11:22: sweep.axes.systems.3.nodes: in the experiment file: 'systems.3' does not exist: "
                 "expected an index from 0 to 0 (sweep point 0: systems.3.nodes=1)");
  const std::string f2 = d.write("s.yaml", experiment(kHw, "sweep:\n  axes:\n    hw.node.nicz.count: [1]\n"));
  EXPECT_EQ(error_of([&] { check_experiment(f2); }),
            f2 + ":11:25: sweep.axes.hw.node.nicz.count: in the hardware description " + kHw +
                ": 'node.nicz' does not exist (fields there: gpus, fabric, host, nics) (sweep point 0: "
                "hw.node.nicz.count=1)");
  // A bad value placed into the hardware file is reported by its loader without a line: the line of the value
  // is in the experiment file, not in the hardware file the message names.
  const std::string f4 =
      d.write("s.yaml", experiment(kHw, "sweep:\n  axes:\n    hw.node.nics.count: [abc]\n"));
  EXPECT_EQ(error_of([&] { check_experiment(f4); }),
            f4 + ":7:9: systems[0].hw: in the hardware description it names: " + kHw +
                ": node.nics.count: expected an integer from 1 to 1024, got 'abc' (sweep point 0: "
                "hw.node.nics.count=abc)");
  // A new last key reaches the strict reader, which names it.
  const std::string f3 = d.write("s.yaml", experiment(kHw, "sweep:\n  axes:\n    dtypes: [fp32]\n"));
  EXPECT_EQ(error_of([&] { check_experiment(f3); }),
            f3 +
                ": dtypes: unknown field for kind collective-sweep (expected: experiment, description, kind, "
                "sweep, systems, op, sizes, algorithms, dtype) (sweep point 0: dtypes=fp32)");
}

// --- what-if scale factors
// ------------------------------------------------------------------------------------

hw::Topology load_scaled(const std::string& factor, double by) {
  const std::string text = "experiment: t\nkind: collective-sweep\nhw: " + kHw + "\n";
  YamlReader root = YamlReader::from_string(text, "t.yaml");
  HardwarePatch patch;
  if (!factor.empty()) patch.scales.push_back({factor, by, root});
  const ExperimentFile f = ExperimentFile::for_point("t.yaml", root, patch);
  return f.load_system(f.root().at("hw"), 2);
}

double bandwidth_of(const hw::Topology& t, std::string_view kind) {
  for (const auto& l : t.links())
    if (l.kind == kind) return l.bandwidth;
  return 0;
}

TEST(SweepScale, ScaleFactorsMultiplyTheLoadedFiguresExactly) {
  const hw::Topology base = load_scaled("", 1);
  const double nic = bandwidth_of(base, "ib-ndr"), nvlink = bandwidth_of(base, "nvlink4");
  // ib-ndr is 400 Gb/s = 50 GB/s per direction in the catalogue, efficiency included by the loader.
  const hw::LinkKind* ndr = hw::find_link_kind("ib-ndr");
  EXPECT_EQ(nic, 50e9 * ndr->efficiency);
  for (double f : {0.5, 2.0, 4.0, 3.3}) {
    const hw::Topology t = load_scaled("nic_bandwidth", f);
    for (const auto& l : t.links()) {
      if (l.kind == "ib-ndr" && l.shared) {
        EXPECT_EQ(l.bandwidth, ndr->bandwidth * f * ndr->efficiency) << f;
      }
      if (l.kind == "nvlink4") {
        EXPECT_EQ(l.bandwidth, nvlink);  // untouched
      }
    }
    EXPECT_EQ(bandwidth_of(load_scaled("fabric_bandwidth", f), "nvlink4"),
              hw::find_link_kind("nvlink4")->bandwidth * f * hw::find_link_kind("nvlink4")->efficiency * 18);
  }
  const hw::GpuSpec& h100 = *hw::find_gpu("h100-sxm");
  EXPECT_EQ(load_scaled("gpu_flops", 2).gpu().peak_bf16, h100.peak_bf16 * 2);
  EXPECT_EQ(load_scaled("gpu_flops", 3).gpu().peak_fp8, h100.peak_fp8 * 3);
  EXPECT_EQ(load_scaled("hbm_bandwidth", 1.5).gpu().hbm_bandwidth, h100.hbm_bandwidth * 1.5);
  const hw::Topology slow = load_scaled("link_latency", 10);  // named: a temporary's links() would dangle
  for (const auto& l : slow.links())
    for (const auto& b : base.links())
      if (b.src == l.src && b.dst == l.dst) {
        EXPECT_NEAR(l.latency, b.latency * 10, 1e-18);
      }
}

// --- the tidy CSV
// -----------------------------------------------------------------------------------------------

TEST(SweepReport, TidyCsvHasARowPerPointRowAndNumericColumn) {
  const auto s = spec_of("sweep:\n  axes: {x: [1, 'a,b']}\n");
  const CsvTable t0 = parse_csv("name,v_us,w\nr0,1.5,2\nr1,3,\n", "t.csv");
  const CsvTable t1 = parse_csv("name,v_us,w\n\"q,\"\"z\",4,5\n", "t.csv");
  EXPECT_EQ(t1.rows[0][0], "q,\"z");
  EXPECT_EQ(tidy_csv(s, {{t0}, {t1}}),
            "x,point,table,row,name,metric,value\n"
            "1,0,t.csv,0,r0,v_us,1.5\n"
            "1,0,t.csv,0,r0,w,2\n"
            "1,0,t.csv,1,r1,v_us,3\n"
            "\"a,b\",1,t.csv,0,\"q,\"\"z\",v_us,4\n"
            "\"a,b\",1,t.csv,0,\"q,\"\"z\",w,5\n");
  EXPECT_EQ(error_of([] { parse_csv("a,b\n1\n", "x.csv"); }), "x.csv: row 1 has 1 fields, the header 2");
}

// `plot: {row: all}`: a series per row of the table, each followed through the points by its text columns and
// named by the one column that keeps its value through the points and differs between the rows (here the
// message size); `where` keeps the rows whose sweep.csv column holds a value. The values are the ones in the
// tidy CSV; a `where` column that is not a text column of sweep.csv is an error naming the choices.
TEST(SweepReport, PlotEveryRowFollowsEachRowThroughThePoints) {
  const TempDir d;
  const std::string file = d.write(
      "s.yaml", experiment(kHw,
                           "sweep:\n  scale: {nic_bandwidth: [1, 2]}\n"
                           "  plot: {metric: busbw_GBps, row: all, where: {algorithm_requested: ring}}\n"));
  CountingKind counter;
  run(d, file, counter);
  const auto meta = nlohmann::json::parse(read(d.path / "out" / "st" / "sweep.json"));
  const auto& series = meta["plot"]["series"];
  ASSERT_EQ(series.size(), 2u);                         // 1 and 4 MiB
  std::map<std::string, std::vector<double>> from_csv;  // bytes -> busbw per point, from the tidy CSV
  std::istringstream csv(read(d.path / "out" / "st" / "sweep.csv"));
  std::string line;
  std::getline(csv, line);
  std::vector<std::map<std::string, double>> bytes_of_row(2), busbw_of_row(2);
  while (std::getline(csv, line)) {
    const CsvTable row = parse_csv("a,point,table,row,s,o,r,al,p,metric,value\n" + line + "\n", "x");
    const auto& f = row.rows[0];
    const auto point = static_cast<std::size_t>(std::stoi(f[1]));
    if (f[9] == "bytes") bytes_of_row[point][f[3]] = std::stod(f[10]);
    if (f[9] == "busbw_GBps") busbw_of_row[point][f[3]] = std::stod(f[10]);
  }
  for (std::size_t p = 0; p < 2; ++p)
    for (const auto& [row, bytes] : bytes_of_row[p])
      from_csv[fmt::format("bytes={:.0f}", bytes)].push_back(busbw_of_row[p][row]);
  for (const auto& s : series) {
    ASSERT_TRUE(from_csv.contains(s["label"].get<std::string>())) << s.dump();
    EXPECT_EQ(s["values"].get<std::vector<double>>(), from_csv[s["label"].get<std::string>()]) << s.dump();
  }
  EXPECT_EQ(meta["plot"]["row"], "all");
  EXPECT_EQ(meta["plot"]["where"]["algorithm_requested"], "ring");

  d.write("s.yaml", experiment(kHw,
                               "sweep:\n  scale: {nic_bandwidth: [1]}\n"
                               "  plot: {metric: busbw_GBps, row: all, where: {bogus: x}}\n"));
  const std::string error = error_of([&] { run(d, file, counter); });
  EXPECT_NE(error.find("sweep.plot.where: 'bogus' is not a text column of sweep.csv (expected one of: row, "
                       "system, op, algorithm_requested, algorithm, protocol)"),
            std::string::npos)
      << error;
  EXPECT_EQ(error_of([] { spec_of("sweep:\n  axes: {x: [1]}\n  plot: {where: [a]}\n"); }),
            "t.yaml:3:17: sweep.plot.where: expected a mapping of sweep.csv columns to values, e.g. "
            "{algorithm: ring}");
}

TEST(SweepVersion, MatchesTheProjectVersion) {
  EXPECT_EQ(util::kVersion, std::string("strata ") + STRATA_PROJECT_VERSION);
}

}  // namespace
