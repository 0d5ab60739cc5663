// Paper reproductions side by side (side_by_side.h).
#include "experiments/side_by_side.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "experiments/sweep_report.h"

namespace strata::experiments::side_by_side {
namespace {

bool plain_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '+';
  });
}

std::vector<Metric> parse_metrics(const YamlReader& node) {
  node.expect_sequence();
  if (node.size() == 0) throw node.error("expected at least one metric");
  std::vector<Metric> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const auto m = node.at(i);
    m.expect_map({"key", "label", "unit", "note"});
    Metric metric{m.at("key").as_string(), m.at("label").as_string(), m.at("unit").as_string(), ""};
    if (auto n = m.maybe("note")) metric.note = n->as_string();
    if (!plain_name(metric.key))
      throw m.at("key").error("expected a name of letters, digits, '-', '_', '.' or '+'");
    if (metric.key == "key" || metric.key == "note")
      throw m.at("key").error(
          fmt::format("'{}' is a row field of its own; pick another metric name", metric.key));
    for (const auto& other : out)
      if (other.key == metric.key)
        throw m.at("key").error(fmt::format("metric '{}' is listed twice", metric.key));
    out.push_back(std::move(metric));
  }
  return out;
}

Row parse_row(const YamlReader& r, const std::vector<Metric>& metrics,
              std::span<const std::string_view> row_keys) {
  std::vector<std::string_view> allowed = {"key", "note"};
  for (const auto& m : metrics) allowed.push_back(m.key);
  allowed.insert(allowed.end(), row_keys.begin(), row_keys.end());
  r.expect_map(std::span<const std::string_view>(allowed));
  Row row{r.at("key").as_string(), {}, "", r};
  if (row.key.empty()) throw r.at("key").error("expected a non-empty row name");
  if (auto n = r.maybe("note")) row.note = n->as_string();
  for (const auto& m : metrics)
    if (auto v = r.maybe(m.key)) row.paper[m.key] = v->as_double();
  return row;
}

Table parse_table(const YamlReader& t, std::span<const std::string_view> table_keys,
                  std::span<const std::string_view> row_keys) {
  std::vector<std::string_view> allowed = {"name",        "source", "url",      "metrics",
                                           "differences", "rows",   "published"};
  allowed.insert(allowed.end(), table_keys.begin(), table_keys.end());
  t.expect_map(std::span<const std::string_view>(allowed));
  const bool published = t.has("published") ? t.at("published").as_bool() : true;
  Table table{t.at("name").as_string(),
              t.at("source").as_string(),
              published || t.has("url") ? t.at("url").as_string() : "",
              published,
              {},
              {},
              {},
              t};
  if (!plain_name(table.name))
    throw t.at("name").error("expected a name of letters, digits, '-', '_', '.' or '+' (it labels rows)");
  if ((published || t.has("url")) && !table.url.starts_with("https://") && !table.url.starts_with("http://"))
    throw t.at("url").error("expected the published source's address (http:// or https://)");
  table.metrics = parse_metrics(t.at("metrics"));
  if (auto d = t.maybe("differences")) {
    d->expect_sequence();
    for (std::size_t i = 0; i < d->size(); ++i) table.differences.push_back(d->at(i).as_string());
  }
  const auto rows = t.at("rows");
  rows.expect_sequence();
  if (rows.size() == 0) throw rows.error("expected at least one row");
  std::set<std::string> keys;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    Row row = parse_row(rows.at(i), table.metrics, row_keys);
    if (!keys.insert(row.key).second)
      throw rows.at(i).at("key").error(fmt::format("row '{}' is listed twice", row.key));
    if (published && row.paper.empty())
      throw rows.at(i).error(
          fmt::format("row '{}' publishes none of the table's metrics (a table of strata's numbers only says "
                      "`published: false`)",
                      row.key));
    if (!published && !row.paper.empty())
      throw rows.at(i)
          .at(row.paper.begin()->first)
          .error("the table says `published: false`: its rows carry no published values");
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string number(double v) {
  return fmt::format("{:.4g}", v);
}

std::string unit_suffix(const Metric& m) {
  return m.unit.empty() ? std::string() : fmt::format(" ({})", m.unit);
}

}  // namespace

const Row* Table::find(std::string_view key) const {
  for (const auto& r : rows)
    if (r.key == key) return &r;
  return nullptr;
}

const Table* Paper::find(std::string_view name) const {
  for (const auto& t : tables)
    if (t.name == name) return &t;
  return nullptr;
}

Paper parse_paper(const YamlReader& node, std::span<const std::string_view> table_keys,
                  std::span<const std::string_view> row_keys) {
  node.expect_sequence();
  if (node.size() == 0) throw node.error("expected at least one published table");
  Paper paper;
  for (std::size_t i = 0; i < node.size(); ++i) {
    Table t = parse_table(node.at(i), table_keys, row_keys);
    if (paper.find(t.name))
      throw node.at(i).at("name").error(fmt::format("table '{}' is listed twice", t.name));
    paper.tables.push_back(std::move(t));
  }
  return paper;
}

std::string Measured::key(std::string_view table, std::string_view row, std::string_view metric) {
  // '\x1f' (unit separator) cannot occur in the names the parser accepts as table and metric names.
  return fmt::format("{}\x1f{}\x1f{}", table, row, metric);
}

void Measured::set(std::string_view table, std::string_view row, std::string_view metric, double value) {
  values_[key(table, row, metric)] = value;
}

void Measured::note(std::string_view table, std::string_view row, std::string note) {
  notes_[key(table, row, "")] = std::move(note);
}

std::optional<double> Measured::get(std::string_view table, std::string_view row,
                                    std::string_view metric) const {
  const auto it = values_.find(key(table, row, metric));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Measured::note_of(std::string_view table, std::string_view row) const {
  const auto it = notes_.find(key(table, row, ""));
  return it == notes_.end() ? std::string() : it->second;
}

std::string csv(const Paper& paper, const Measured& measured) {
  std::string out = "table,row,metric,label,unit,paper,strata,strata_over_paper,paper_note,strata_note\n";
  for (const auto& t : paper.tables)
    for (const auto& r : t.rows)
      for (const auto& m : t.metrics) {
        const auto p = r.paper.find(m.key);
        const auto s = measured.get(t.name, r.key, m.key);
        out += fmt::format("{},{},{},{},{},", csv_field(t.name), csv_field(r.key), csv_field(m.key),
                           csv_field(m.label), csv_field(m.unit));
        out += p != r.paper.end() ? fmt::format("{:.9g}", p->second) : std::string();
        out += ",";
        out += s ? fmt::format("{:.9g}", *s) : std::string();
        out += ",";
        if (s && p != r.paper.end() && p->second != 0) out += fmt::format("{:.6g}", *s / p->second);
        out += fmt::format(",{},{}\n", csv_field(r.note), csv_field(measured.note_of(t.name, r.key)));
      }
  return out;
}

std::optional<double> mean_ratio(const Table& table, const Measured& measured, std::string_view metric) {
  double log_sum = 0;
  int n = 0;
  for (const auto& r : table.rows) {
    const auto p = r.paper.find(std::string(metric));
    const auto s = measured.get(table.name, r.key, metric);
    if (p == r.paper.end() || !s || !(p->second > 0) || !(*s > 0)) continue;
    log_sum += std::log(*s / p->second);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / n);
}

namespace {

std::string ratio_text(const std::map<std::string, double>::const_iterator p, bool published,
                       const std::optional<double>& s) {
  return s && published && p->second != 0 ? fmt::format("{:.2f}", *s / p->second) : std::string();
}

std::string row_notes(const Table& t, const Row& r, const Measured& measured) {
  std::string note = r.note.empty() ? "" : "paper: " + r.note;
  if (const auto sn = measured.note_of(t.name, r.key); !sn.empty())
    note += (note.empty() ? "strata: " : "; strata: ") + sn;
  return note;
}

// One line per row, a column group (paper, strata, strata/paper) per metric.
std::string rows_table(const Table& t, const Measured& measured) {
  std::string md = "| row |", rule = "|---|";
  for (const auto& m : t.metrics) {
    md += fmt::format(" paper {0}{1} | strata {0}{1} | strata/paper |", m.label, unit_suffix(m));
    rule += "---|---|---|";
  }
  md += " notes |\n" + rule + "---|\n";
  for (const auto& r : t.rows) {
    md += fmt::format("| {} |", r.key);
    for (const auto& m : t.metrics) {
      const auto p = r.paper.find(m.key);
      const bool published = p != r.paper.end();
      const auto s = measured.get(t.name, r.key, m.key);
      md += fmt::format(" {} | {} | {} |", published ? number(p->second) : "",
                        s ? number(*s) : (published ? "not computed" : ""), ratio_text(p, published, s));
    }
    md += fmt::format(" {} |\n", row_notes(t, r, measured));
  }
  for (const auto& m : t.metrics)
    if (const auto g = mean_ratio(t, measured, m.key))
      md += fmt::format("\n{}: strata/paper geometric mean {:.3g} over the rows with both numbers.\n",
                        m.label, *g);
  return md;
}

// A table of one row (a paper's headline numbers): one line per metric, the metric's note beside it.
std::string metrics_table(const Table& t, const Measured& measured) {
  const Row& r = t.rows.front();
  std::string md = "| quantity | paper | strata | strata/paper | notes |\n|---|---|---|---|---|\n";
  for (const auto& m : t.metrics) {
    const auto p = r.paper.find(m.key);
    const bool published = p != r.paper.end();
    const auto s = measured.get(t.name, r.key, m.key);
    const std::string unit = m.unit.empty() ? "" : " " + m.unit;
    md += fmt::format("| {} | {} | {} | {} | {} |\n", m.label, published ? number(p->second) + unit : "",
                      s ? number(*s) + unit : (published ? "not computed" : ""), ratio_text(p, published, s),
                      m.note.empty() ? "" : "paper: " + m.note);
  }
  if (const auto note = row_notes(t, r, measured); !note.empty())
    md += fmt::format("\nRow `{}`: {}.\n", r.key, note);
  return md;
}

// A table of strata's numbers only: a column per metric.
std::string strata_table(const Table& t, const Measured& measured) {
  std::string md = "| row |", rule = "|---|";
  for (const auto& m : t.metrics) {
    md += fmt::format(" strata {}{} |", m.label, unit_suffix(m));
    rule += "---|";
  }
  md += " notes |\n" + rule + "---|\n";
  for (const auto& r : t.rows) {
    md += fmt::format("| {} |", r.key);
    for (const auto& m : t.metrics) {
      const auto s = measured.get(t.name, r.key, m.key);
      md += fmt::format(" {} |", s ? number(*s) : "not computed");
    }
    md += fmt::format(" {} |\n", row_notes(t, r, measured));
  }
  return md;
}

}  // namespace

std::string markdown(const Paper& paper, const Measured& measured) {
  std::string md;
  for (const auto& t : paper.tables) {
    if (t.published)
      md += fmt::format("\n## Published table `{}`\n\nSource: {}, <{}>.\n\n", t.name, t.source, t.url);
    else
      md += fmt::format("\n## Table `{}` (strata only: no published numbers)\n\n{}{}.\n\n", t.name, t.source,
                        t.url.empty() ? "" : fmt::format(", <{}>", t.url));
    md += !t.published         ? strata_table(t, measured)
          : t.rows.size() == 1 ? metrics_table(t, measured)
                               : rows_table(t, measured);
    if (!t.differences.empty()) {
      md += "\nWhy the numbers differ:\n\n";
      for (const auto& d : t.differences) md += fmt::format("- {}\n", d);
    }
  }
  return md;
}

void write_outputs(const Paper& paper, const Measured& measured, const std::string& title, ResultsDir& out,
                   const RunOptions& options, std::string& summary) {
  out.write("side_by_side.csv", csv(paper, measured));
  summary +=
      "\nFiles: `side_by_side.csv` (one line per table, row and metric: paper, strata, strata/paper), "
      "`side_by_side.png` (paper beside strata, one panel per table and metric).\n";
  draw_figures(summary, options, "side_by_side.py",
               {out.staged("side_by_side.csv").string(), out.staged("side_by_side.png").string(), title});
}

}  // namespace strata::experiments::side_by_side
