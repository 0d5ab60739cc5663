// The `sweep:` section any experiment file may hold (docs/experiments.md, "Sweeps and what-if studies"): the
// axes a study varies and how their values combine into points. An axis names a dot path into the experiment
// file itself (`op`, `systems.0.nodes`), into every hardware file the experiment loads (`hw.node.nics.link`,
// `hw.nodes`) or a what-if scale factor of that hardware (`scale.nic_bandwidth`, hw/what_if.h; the `scale:`
// mapping is the same axes written apart). Points are expanded here, before anything runs, and identified
// by their index and their values; experiments/sweep.h runs them.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "hw/yaml_reader.h"

namespace strata::experiments {

enum class AxisTarget { kExperiment, kHardware, kScale };
enum class SweepMode { kGrid, kList, kZip, kRandom, kLhs };
std::string_view sweep_mode_name(SweepMode mode);

// One value of an axis at one point.
struct SweepValue {
  YAML::Node node;               // what is written at the path (for a scale axis: the factor)
  std::string text;              // as it appears in tables and the CSV
  std::optional<double> number;  // when the value is a number
};

// A numeric range sampled by the random and lhs modes.
struct SweepRange {
  double min = 0, max = 0;
  bool log = false;      // uniform in log(value)
  bool integer = false;  // whole numbers from min to max, both included
  std::string unit;      // appended to the number ("GB/s"), so quantities with units can be sampled
};

struct SweepAxis {
  std::string name;  // as written: "op", "hw.node.nics.link", "scale.nic_bandwidth"
  AxisTarget target = AxisTarget::kExperiment;
  std::vector<std::string> path;    // below the target (the hw. / scale. prefix removed)
  YamlReader where;                 // the axis in the sweep section, for errors
  std::vector<SweepValue> values;   // listed values (for random and lhs: categories drawn uniformly)
  std::optional<SweepRange> range;  // random and lhs only
};

// What the figure and the summary's key column show (all optional: the defaults are the last numeric column
// of the first table and its last row).
// `row: all` draws every row of the table (a line each, named by the row's text columns), `where` keeps only
// the rows whose sweep.csv columns hold the given values (e.g. {kind.metric: tflops_per_gpu}).
struct SweepPlot {
  std::string metric, table;
  std::optional<long long> row;  // a row index of the table, negative from the end
  bool all_rows = false;
  std::vector<std::pair<std::string, std::string>> where;  // sweep.csv column -> value
};

struct SweepSpec {
  SweepMode mode = SweepMode::kGrid;
  std::uint64_t seed = 1;   // random and lhs
  std::size_t samples = 0;  // random and lhs
  std::vector<SweepAxis> axes;
  std::vector<std::vector<SweepValue>> points;  // points[i][a]: the value of axes[a] at point i
  SweepPlot plot;
};

// Parses and expands the section; throws ConfigError naming file, line and field for a bad spec (unknown
// mode or scale factor, an empty axis, zipped lists of different lengths, a non-numeric range, ...).
// Paths into the experiment and hardware files are checked when the points are applied (experiments/sweep.h),
// before any point runs.
SweepSpec parse_sweep(const YamlReader& sweep);

// "op=allreduce, scale.nic_bandwidth=2"
std::string point_label(const SweepSpec& spec, std::size_t point);

// Seeded sampling that gives the same numbers on every platform (std::uniform_*_distribution is
// implementation-defined): a double in [0, 1) from the top 53 bits of one draw, and an index in [0, n).
double uniform01(std::mt19937_64& rng);
std::size_t uniform_index(std::mt19937_64& rng, std::size_t n);

}  // namespace strata::experiments
