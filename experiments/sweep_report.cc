#include "experiments/sweep_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/file.h"
#include "util/version.h"

namespace strata::experiments {
namespace fs = std::filesystem;
namespace {

bool is_number(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(v);
}

// The tables of one stored point: its top-level *.csv files in name order.
std::vector<CsvTable> read_tables(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".csv") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::vector<CsvTable> tables;
  for (const auto& f : files)
    tables.push_back(
        parse_csv(util::read_file<ConfigError>(f, "a stored point's CSV table"), f.filename().string()));
  return tables;
}

struct Columns {
  std::map<std::string, std::vector<bool>> metric;  // per table: which columns are metrics
  std::vector<std::string> ids;                     // text columns of every table, first-seen order
};

Columns classify(const std::vector<std::vector<CsvTable>>& tables) {
  Columns c;
  std::map<std::string, std::vector<bool>> any_value;
  for (const auto& point : tables)
    for (const auto& t : point) {
      auto& metric = c.metric.try_emplace(t.name, t.header.size(), true).first->second;
      auto& seen = any_value.try_emplace(t.name, t.header.size(), false).first->second;
      metric.resize(std::max(metric.size(), t.header.size()), true);
      seen.resize(metric.size(), false);
      for (const auto& row : t.rows)
        for (std::size_t k = 0; k < row.size(); ++k) {
          if (row[k].empty()) continue;
          seen[k] = true;
          if (!is_number(row[k])) metric[k] = false;
        }
    }
  for (auto& [name, metric] : c.metric)
    for (std::size_t k = 0; k < metric.size(); ++k) metric[k] = metric[k] && any_value[name][k];
  for (const auto& point : tables)
    for (const auto& t : point)
      for (std::size_t k = 0; k < t.header.size(); ++k)
        if (!c.metric[t.name][k] && std::find(c.ids.begin(), c.ids.end(), t.header[k]) == c.ids.end())
          c.ids.push_back(t.header[k]);
  return c;
}

// sweep.csv's names for the kinds' text columns: a column named like an axis or a fixed column keeps its
// table's prefix ("kind.").
std::vector<std::string> tidy_id_names(const SweepSpec& spec, const Columns& columns) {
  std::vector<std::string> fixed;
  for (const auto& a : spec.axes) fixed.push_back(a.name);
  for (auto name : {"point", "table", "row", "metric", "value"}) fixed.emplace_back(name);
  std::vector<std::string> names;
  for (const auto& id : columns.ids)
    names.push_back(std::find(fixed.begin(), fixed.end(), id) != fixed.end() ? "kind." + id : id);
  return names;
}

// One line of the figure and one column of the summary's key table: a row of the plotted table, followed
// through the points.
struct Series {
  std::string label;                // the row's text columns that differ between the plotted rows
  std::vector<std::string> values;  // per point, as written ("" where the point has no such row)
};

// The figure and key column: which table, metric and rows (SweepPlot's defaults filled in).
struct PlotChoice {
  std::string table, metric;
  long long row = -1;
  bool all_rows = false;
  std::vector<std::pair<std::string, std::string>> where;
  std::vector<Series> series;
  std::string unit;  // the plotted rows' `unit` column, where they have one and agree
};

// Does row `r` of table `t` pass the plot's `where` filter (columns named as in sweep.csv)?
bool passes(const CsvTable& t, std::size_t r, const PlotChoice& c, const Columns& columns,
            const std::vector<std::string>& id_names) {
  for (const auto& [column, value] : c.where) {
    if (column == "row") {
      if (std::to_string(r) != value) return false;
      continue;
    }
    const auto j =
        static_cast<std::size_t>(std::find(id_names.begin(), id_names.end(), column) - id_names.begin());
    const auto col = std::find(t.header.begin(), t.header.end(), columns.ids[j]);
    if (col == t.header.end()) return false;
    const auto k = static_cast<std::size_t>(col - t.header.begin());
    if (k >= t.rows[r].size() || t.rows[r][k] != value) return false;
  }
  return true;
}

// A plotted row followed through the points: identified by its text columns and which occurrence of them it
// is in its point's table; `constant` marks the columns whose value is the same at every point (a numeric
// column such as a message size can then name rows whose text columns are alike).
struct TrackedRow {
  std::vector<std::string> key;
  std::vector<std::string> order;            // the columns in the table's order
  std::map<std::string, std::string> first;  // column -> value, at the first point that has the row
  std::map<std::string, bool> constant;
};

void track(TrackedRow& row, const CsvTable& t, std::size_t r) {
  if (row.order.empty()) row.order = t.header;
  for (std::size_t k = 0; k < t.header.size() && k < t.rows[r].size(); ++k) {
    const auto [it, added] = row.first.emplace(t.header[k], t.rows[r][k]);
    auto& same = row.constant.try_emplace(t.header[k], true).first->second;
    if (!added && it->second != t.rows[r][k]) same = false;
  }
}

// The first column (in table order, not the metric) that has one value through the points for each of the
// rows `group` and a different value for each; "" when there is none.
std::string naming_column(const std::vector<TrackedRow>& rows, const std::vector<std::size_t>& group,
                          const std::string& metric) {
  for (const auto& column : rows[group[0]].order) {
    if (column == metric) continue;
    std::set<std::string> distinct;
    bool usable = true;
    for (auto s : group) {
      const auto c = rows[s].constant.find(column);
      usable = usable && c != rows[s].constant.end() && c->second;
      if (usable) distinct.insert(rows[s].first.at(column));
    }
    if (usable && distinct.size() == group.size()) return column;
  }
  return "";
}

// Names rows that their text columns leave alike by a naming column; failing that, by their occurrence.
void disambiguate(std::vector<Series>& series, const std::vector<TrackedRow>& rows,
                  const std::string& metric) {
  std::map<std::string, std::vector<std::size_t>> by_label;
  for (std::size_t s = 0; s < series.size(); ++s) by_label[series[s].label].push_back(s);
  for (const auto& [label, group] : by_label) {
    if (group.size() < 2) continue;
    const std::string name = naming_column(rows, group, metric);
    for (auto s : group)
      series[s].label += (label.empty() ? "" : ", ") +
                         (name.empty() ? "row " + rows[s].key.back() : name + "=" + rows[s].first.at(name));
  }
}

// Every plotted row through the points.
std::vector<Series> plotted_series(const std::vector<std::vector<CsvTable>>& tables, const Columns& columns,
                                   const std::vector<std::string>& id_names, PlotChoice& c) {
  std::vector<TrackedRow> rows;
  std::map<std::vector<std::string>, std::size_t> index;
  std::vector<Series> series;
  for (std::size_t i = 0; i < tables.size(); ++i)
    for (const auto& t : tables[i]) {
      if (t.name != c.table) continue;
      const auto col = std::find(t.header.begin(), t.header.end(), c.metric);
      if (col == t.header.end()) continue;
      const auto k = static_cast<std::size_t>(col - t.header.begin());
      const auto n = static_cast<long long>(t.rows.size());
      std::map<std::vector<std::string>, int> occurrences;
      for (std::size_t r = 0; r < t.rows.size(); ++r) {
        if (!c.all_rows && static_cast<long long>(r) != (c.row < 0 ? n + c.row : c.row)) continue;
        if (!passes(t, r, c, columns, id_names)) continue;
        std::vector<std::string> key;
        if (c.all_rows) {  // otherwise one series: the chosen row of every point
          for (const auto& id : columns.ids) {
            const auto idc = std::find(t.header.begin(), t.header.end(), id);
            const auto ik = static_cast<std::size_t>(idc - t.header.begin());
            key.push_back(idc != t.header.end() && ik < t.rows[r].size() ? t.rows[r][ik] : "");
          }
          key.push_back(std::to_string(occurrences[key]++));
        }
        const auto [it, added] = index.emplace(key, series.size());
        if (added) {
          rows.push_back({key, {}, {}, {}});
          series.push_back({"", std::vector<std::string>(tables.size())});
        }
        track(rows[it->second], t, r);
        series[it->second].values[i] = k < t.rows[r].size() ? t.rows[r][k] : "";
      }
    }
  // A table that keeps units in a column of their own (side_by_side.csv): the plotted rows' common unit.
  c.unit = rows.empty() || !rows[0].first.contains("unit") ? "" : rows[0].first.at("unit");
  for (const auto& row : rows)
    if (!row.first.contains("unit") || row.first.at("unit") != c.unit) c.unit.clear();
  if (series.size() < 2) return series;
  // One column that names every row (a family, a system, a message size) is the clearest label.
  std::vector<std::size_t> all(series.size());
  std::iota(all.begin(), all.end(), 0);
  if (const std::string name = naming_column(rows, all, c.metric); !name.empty()) {
    for (std::size_t s = 0; s < series.size(); ++s) series[s].label = name + "=" + rows[s].first.at(name);
    return series;
  }
  for (std::size_t j = 0; j < columns.ids.size(); ++j) {
    const bool varies = std::any_of(rows.begin(), rows.end(),
                                    [&](const TrackedRow& row) { return row.key[j] != rows[0].key[j]; });
    if (!varies) continue;
    for (std::size_t s = 0; s < series.size(); ++s)
      series[s].label += (series[s].label.empty() ? "" : ", ") + id_names[j] + "=" + rows[s].key[j];
  }
  disambiguate(series, rows, c.metric);
  return series;
}

PlotChoice choose_plot(const SweepReport& r, const std::vector<std::vector<CsvTable>>& tables,
                       const Columns& columns) {
  const SweepPlot& spec = r.spec->plot;
  PlotChoice choice{spec.table, spec.metric, spec.row.value_or(-1), spec.all_rows, spec.where, {}, ""};
  const std::string where = fmt::format("{}: sweep.plot", r.file->path());
  if (columns.metric.empty()) throw ConfigError(fmt::format("{}: the points wrote no CSV table", where));
  if (choice.table.empty()) choice.table = columns.metric.begin()->first;
  const auto table = columns.metric.find(choice.table);
  if (table == columns.metric.end())
    throw ConfigError(fmt::format("{}.table: no point wrote a table '{}'", where, choice.table));
  std::vector<std::string> metrics;
  for (const auto& point : tables)
    for (const auto& t : point)
      if (t.name == choice.table)
        for (std::size_t k = 0; k < t.header.size(); ++k)
          if (table->second[k] && std::find(metrics.begin(), metrics.end(), t.header[k]) == metrics.end())
            metrics.push_back(t.header[k]);
  if (metrics.empty())
    throw ConfigError(fmt::format("{}: table '{}' has no numeric column", where, choice.table));
  if (choice.metric.empty()) choice.metric = metrics.back();
  if (std::find(metrics.begin(), metrics.end(), choice.metric) == metrics.end()) {
    std::string list;
    for (const auto& m : metrics) list += (list.empty() ? "" : ", ") + m;
    throw ConfigError(fmt::format("{}.metric: '{}' is not a numeric column of {} (expected one of: {})",
                                  where, choice.metric, choice.table, list));
  }
  const auto id_names = tidy_id_names(*r.spec, columns);
  for (const auto& [column, value] : choice.where)
    if (column != "row" && std::find(id_names.begin(), id_names.end(), column) == id_names.end()) {
      std::string list = "row";
      for (const auto& n : id_names) list += ", " + n;
      throw ConfigError(fmt::format("{}.where: '{}' is not a text column of sweep.csv (expected one of: {})",
                                    where, column, list));
    }
  choice.series = plotted_series(tables, columns, id_names, choice);
  if (choice.series.empty())
    throw ConfigError(fmt::format("{}: no row of {} has the metric '{}'{}", where, choice.table,
                                  choice.metric, choice.where.empty() ? "" : " and passes `where`"));
  return choice;
}

std::string row_text(const PlotChoice& plot) {
  std::string text = plot.all_rows ? "every row"
                     : plot.row < 0
                         ? (plot.row == -1 ? "last row" : fmt::format("row {} from the end", -plot.row))
                         : fmt::format("row {}", plot.row);
  for (const auto& [column, value] : plot.where) text += fmt::format(", {}={}", column, value);
  return text;
}

// The plot's choice and its series (values as numbers, null where missing or not a number): what
// experiments/plots/sweep.py draws.
nlohmann::json plot_json(const PlotChoice& plot) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : plot.series) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : s.values)
      values.push_back(is_number(v) ? nlohmann::json(std::stod(v)) : nlohmann::json());
    series.push_back({{"label", s.label}, {"values", values}});
  }
  nlohmann::json where = nlohmann::json::object();
  for (const auto& [column, value] : plot.where) where[column] = value;
  return {{"table", plot.table},
          {"metric", plot.metric},
          {"row", plot.all_rows ? nlohmann::json("all") : nlohmann::json(plot.row)},
          {"where", where},
          {"rows", row_text(plot)},
          {"unit", plot.unit},
          {"series", series}};
}

nlohmann::json sweep_json(const SweepReport& r, const PlotChoice& plot) {
  const SweepSpec& spec = *r.spec;
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : spec.axes) {
    nlohmann::json j = {{"name", a.name},
                        {"target", a.target == AxisTarget::kExperiment ? "experiment"
                                   : a.target == AxisTarget::kHardware ? "hardware"
                                                                       : "scale"}};
    if (a.range)
      j["range"] = {{"min", a.range->min},
                    {"max", a.range->max},
                    {"log", a.range->log},
                    {"integer", a.range->integer},
                    {"unit", a.range->unit}};
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : a.values) values.push_back(v.text);
    if (!a.values.empty()) j["values"] = values;
    axes.push_back(j);
  }
  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    nlohmann::json values = nlohmann::json::object();
    for (std::size_t a = 0; a < spec.axes.size(); ++a) values[spec.axes[a].name] = spec.points[i][a].text;
    points.push_back({{"index", i}, {"key", r.keys[i]}, {"values", values}});
  }
  nlohmann::json j = {{"experiment", r.file->name()},
                      {"description", r.file->description()},
                      {"kind", r.file->kind()},
                      {"strata_version", util::kVersion},
                      {"mode", sweep_mode_name(spec.mode)},
                      {"axes", axes},
                      {"points", points},
                      {"plot", plot_json(plot)},
                      {"config_yaml", r.config_yaml}};
  if (spec.mode == SweepMode::kRandom || spec.mode == SweepMode::kLhs) {
    j["seed"] = spec.seed;
    j["samples"] = spec.samples;
  }
  return j;
}

std::string summary_md(const SweepReport& r, const PlotChoice& plot) {
  const SweepSpec& spec = *r.spec;
  const auto computed = static_cast<std::size_t>(std::count(r.computed.begin(), r.computed.end(), true));
  std::string md = fmt::format(
      "# {}\n\n{}Sweep of the **{}** experiment kind, mode {}, {} points ({} computed by this run, {} from "
      "the result store). Each point ran the kind on the experiment file with the point's values written in; "
      "its effective configuration is in `points/<i>/effective/`.\n\n",
      r.file->name(), r.file->description().empty() ? "" : r.file->description() + "\n\n", r.file->kind(),
      sweep_mode_name(spec.mode), spec.points.size(), computed, spec.points.size() - computed);
  // The key table: a column per plotted row (at most kShown; the rest are in sweep.csv).
  constexpr std::size_t kShown = 8;
  const std::size_t shown = std::min(plot.series.size(), kShown);
  md += fmt::format("{} of {} ({}):\n\n| point |", plot.metric, plot.table, row_text(plot));
  for (const auto& a : spec.axes) md += fmt::format(" {} |", a.name);
  for (std::size_t s = 0; s < shown; ++s)
    md += fmt::format(" {} |", plot.series[s].label.empty() ? plot.metric : plot.series[s].label);
  md += "\n|---|";
  for (std::size_t a = 0; a < spec.axes.size() + shown; ++a) md += "---|";
  md += "\n";
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    md += fmt::format("| {} |", i);
    for (const auto& v : spec.points[i]) md += fmt::format(" {} |", v.text);
    for (std::size_t s = 0; s < shown; ++s) md += fmt::format(" {} |", plot.series[s].values[i]);
    md += "\n";
  }
  if (plot.series.size() > shown)
    md += fmt::format("\n({} more rows in sweep.csv and the figure.)\n", plot.series.size() - shown);
  md +=
      "\nFiles: `sweep.csv` (a row per point x table row x metric, swept columns first), `sweep.json` (the "
      "configuration, points and store keys, strata's version), `sweep.png`, `points/<i>/` (each point's "
      "own files and effective configuration).\n";
  return md;
}

// A stored point is never written again once committed (a changed input gives a new key), so the results
// folder shares its files by hard links: a 1,000-point sweep's outputs cost a link per file, not a copy
// (docs/performance.md, "Sweeps"). Where the two folders are on different file systems, a copy.
void link_or_copy(const fs::path& stored, const fs::path& copy) {
  std::error_code linked;
  fs::copy(stored, copy, fs::copy_options::recursive | fs::copy_options::create_hard_links, linked);
  if (!linked) return;
  fs::remove_all(copy);
  fs::create_directories(copy);
  fs::copy(stored, copy, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

}  // namespace

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

CsvTable parse_csv(std::string_view text, const std::string& name) {
  CsvTable table{name, {}, {}};
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  const auto end_row = [&] {
    row.push_back(std::move(field));
    field.clear();
    if (table.header.empty())
      table.header = std::move(row);
    else if (row.size() != table.header.size())
      throw ConfigError(fmt::format("{}: row {} has {} fields, the header {}", name, table.rows.size() + 1,
                                    row.size(), table.header.size()));
    else
      table.rows.push_back(std::move(row));
    row.clear();
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
      continue;
    }
    any = true;
    if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
    } else if (c == '\n') {
      end_row();
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) throw ConfigError(fmt::format("{}: a quoted field is not closed", name));
  if (any) end_row();
  return table;
}

std::string tidy_csv(const SweepSpec& spec, const std::vector<std::vector<CsvTable>>& tables) {
  const Columns columns = classify(tables);
  std::vector<std::string> header;
  for (const auto& a : spec.axes) header.push_back(a.name);
  for (auto fixed : {"point", "table", "row"}) header.emplace_back(fixed);
  const std::vector<std::string> id_names = tidy_id_names(spec, columns);
  header.insert(header.end(), id_names.begin(), id_names.end());
  header.emplace_back("metric");
  header.emplace_back("value");
  std::string csv;
  for (std::size_t k = 0; k < header.size(); ++k) csv += (k ? "," : "") + csv_field(header[k]);
  csv += "\n";
  for (std::size_t i = 0; i < tables.size(); ++i) {
    std::string lead;
    for (const auto& v : spec.points[i]) lead += csv_field(v.text) + ",";
    lead += fmt::format("{},", i);
    for (const auto& t : tables[i]) {
      const auto& metric = columns.metric.at(t.name);
      for (std::size_t r = 0; r < t.rows.size(); ++r) {
        std::string ids;
        for (const auto& id : columns.ids) {
          const auto col = std::find(t.header.begin(), t.header.end(), id);
          const bool present =
              col != t.header.end() && !metric[static_cast<std::size_t>(col - t.header.begin())];
          ids +=
              (present ? csv_field(t.rows[r][static_cast<std::size_t>(col - t.header.begin())]) : "") + ",";
        }
        for (std::size_t k = 0; k < t.header.size(); ++k) {
          if (!metric[k] || t.rows[r][k].empty()) continue;
          csv += fmt::format("{}{},{},{}{},{}\n", lead, csv_field(t.name), r, ids, csv_field(t.header[k]),
                             csv_field(t.rows[r][k]));
        }
      }
    }
  }
  return csv;
}

void write_sweep_report(const SweepReport& r, ResultsDir& out, const RunOptions& options) {
  std::vector<std::vector<CsvTable>> tables;
  for (std::size_t i = 0; i < r.spec->points.size(); ++i) {
    tables.push_back(read_tables(r.stored[i]));
    const fs::path copy = out.staged(fmt::format("points/{}", i));
    fs::create_directories(copy);
    link_or_copy(r.stored[i], copy);
  }
  const Columns columns = classify(tables);
  const PlotChoice plot = choose_plot(r, tables, columns);
  out.write("sweep.csv", tidy_csv(*r.spec, tables));
  out.write("sweep.json", sweep_json(r, plot).dump(2) + "\n");
  std::string md = summary_md(r, plot);
  draw_figures(md, options, "sweep.py",
               {out.staged("sweep.json").string(), out.staged("sweep.png").string(), r.file->name()});
  out.write("summary.md", md);
}

}  // namespace strata::experiments
