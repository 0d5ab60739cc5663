// Paper reproductions side by side (configs/experiments/repro/): a paper's published numbers, declared once
// in the experiment file's `paper:` section, joined with the numbers strata computed in the same run, written
// as one tidy CSV, one markdown table per published table and one figure (experiments/plots/side_by_side.py).
//
//   paper:
//     - name: sc21                      # a plain name: labels the table, the CSV rows and the figure panel
//       source: "Narayanan et al., ..., SC'21, Table 1"
//       url: https://arxiv.org/abs/2104.04473
//       metrics:                        # the published quantities, each with its unit
//         - {key: tflops_per_gpu, label: TFLOP/s per GPU, unit: TFLOP/s}
//       differences: [...]              # optional: why strata's numbers differ, one sentence each
//       rows:
//         - {key: 1.7B, tflops_per_gpu: 137, ...the kind's own row fields}
//       ...the kind's own table fields (hardware, model settings)
//
// A row's published value of a metric is optional (not every row of a paper publishes every quantity); a row
// may carry `note:` (e.g. "read off the figure"). The kind reads its own fields from Table::node / Row::node
// and names them in parse_paper's `table_keys` / `row_keys`, so an unknown field is still an error.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "experiments/experiment.h"

namespace strata::experiments::side_by_side {

struct Metric {
  std::string key;    // the row field holding the published value, and strata's value's name
  std::string label;  // "TFLOP/s per GPU"
  std::string unit;   // "TFLOP/s", "x", "s"
  std::string note;   // optional: what the published number is of (a table of one row prints it beside it)
};

struct Row {
  std::string key;                      // unique within its table
  std::map<std::string, double> paper;  // published values by metric key; absent: not published
  std::string note;                     // printed beside the row
  YamlReader node;                      // the row mapping, for the kind's own fields
};

// A table with `published: false` holds strata's numbers only (a what-if beside published tables): its rows
// carry no published value and its `url` is optional.
struct Table {
  std::string name, source, url;
  bool published = true;
  std::vector<Metric> metrics;
  std::vector<std::string> differences;
  std::vector<Row> rows;
  YamlReader node;  // the table mapping, for the kind's own fields
  const Row* find(std::string_view key) const;
};

struct Paper {
  std::vector<Table> tables;
  const Table* find(std::string_view name) const;
};

// Reads `paper:` (a list of tables). `table_keys` and `row_keys` are the fields the kind reads itself.
// Throws ConfigError naming file, line and field.
Paper parse_paper(const YamlReader& node, std::span<const std::string_view> table_keys,
                  std::span<const std::string_view> row_keys);

// strata's numbers for the paper's rows, by (table, row, metric), and a note per row (what strata ran, or why
// it has no number).
class Measured {
 public:
  void set(std::string_view table, std::string_view row, std::string_view metric, double value);
  void note(std::string_view table, std::string_view row, std::string note);
  std::optional<double> get(std::string_view table, std::string_view row, std::string_view metric) const;
  std::string note_of(std::string_view table, std::string_view row) const;

 private:
  static std::string key(std::string_view table, std::string_view row, std::string_view metric);
  std::map<std::string, double, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> notes_;
};

// Tidy CSV, one line per (table, row, metric): table,row,metric,label,unit,paper,strata,strata_over_paper,
// paper_note,strata_note (empty cells where a side has no number).
std::string csv(const Paper& paper, const Measured& measured);
// Per table: a heading with the citation, then | row | paper (unit) | strata (unit) | strata/paper | ... |,
// the range of the ratios, and the declared differences.
std::string markdown(const Paper& paper, const Measured& measured);
// The geometric mean of strata/paper over the rows that have both numbers; nullopt when none has.
std::optional<double> mean_ratio(const Table& table, const Measured& measured, std::string_view metric);

// Writes side_by_side.csv into `out` and draws side_by_side.png from it (appending a note to `summary` when
// the figure cannot be drawn).
void write_outputs(const Paper& paper, const Measured& measured, const std::string& title, ResultsDir& out,
                   const RunOptions& options, std::string& summary);

}  // namespace strata::experiments::side_by_side
