// The outputs of a sweep (experiments/sweep.h): the tidy CSV built from the points' own CSVs, sweep.json,
// summary.md, the figure and points/<i>/. Internal to experiments/sweep.cc and its tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "experiments/experiment.h"
#include "experiments/sweep_spec.h"

namespace strata::experiments {

// A CSV file as read (RFC 4180 quoting).
struct CsvTable {
  std::string name;  // the file name, e.g. "collectives.csv"
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
// Throws ConfigError naming `name` when the text is not a CSV table (a row with another number of fields).
CsvTable parse_csv(std::string_view text, const std::string& name);
std::string csv_field(std::string_view text);  // quoted when it holds a comma, a quote or a line break

struct SweepReport {
  const ExperimentFile* file = nullptr;
  std::string config_yaml;  // the whole experiment file as parsed (with its sweep section)
  const SweepSpec* spec = nullptr;
  std::vector<std::string> keys;              // per point
  std::vector<std::filesystem::path> stored;  // per point: its folder in the store
  std::vector<bool> computed;                 // per point: computed by this run (else from the store)
};

// The tidy CSV of the points' tables: columns <axes...>, point, table, row, <the tables' text columns>,
// metric, value. A column is a metric when every non-empty value it has at any point is a number. Exposed for
// tests; deterministic (no times, no paths).
std::string tidy_csv(const SweepSpec& spec, const std::vector<std::vector<CsvTable>>& tables);

// Writes every output into `out` (run_sweep commits it).
void write_sweep_report(const SweepReport& report, ResultsDir& out, const RunOptions& options);

}  // namespace strata::experiments
