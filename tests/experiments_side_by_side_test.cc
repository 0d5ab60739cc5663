// Paper reproductions side by side (experiments/side_by_side.h): the `paper:` section's checks and the join
// of published and computed numbers, against values worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include "experiments/side_by_side.h"
#include "hw/config_error.h"

namespace {

using namespace strata;
namespace sbs = experiments::side_by_side;

constexpr std::array<std::string_view, 1> kTableKeys = {"hw"};
constexpr std::array<std::string_view, 1> kRowKeys = {"gpus"};

constexpr const char* kPaper = R"(
- name: t1
  source: Somebody et al., Table 1
  url: https://example.org/paper
  hw: x.yaml
  metrics:
    - {key: tput, label: throughput, unit: TFLOP/s}
    - {key: time, label: step time, unit: s}
  differences: [one reason]
  rows:
    - {key: a, gpus: 8, tput: 100, time: 2}
    - {key: b, gpus: 16, tput: 200, note: read off a figure}
    - {key: c, gpus: 32, time: 4}
)";

sbs::Paper parse(std::string_view text) {
  // `text` is the value of `paper:` (from the line break after it, so its line numbers are the file's).
  const auto root = YamlReader::from_string("paper: " + std::string(text), "p.yaml");
  return sbs::parse_paper(root.at("paper"), kTableKeys, kRowKeys);
}

TEST(SideBySide, ParsesTablesRowsAndTheKindsOwnFields) {
  const auto p = parse(kPaper);
  ASSERT_EQ(p.tables.size(), 1u);
  const auto& t = p.tables[0];
  EXPECT_EQ(t.name, "t1");
  EXPECT_EQ(t.metrics.size(), 2u);
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[1].paper.at("tput"), 200);
  EXPECT_EQ(t.rows[1].paper.count("time"), 0u);  // not published for this row
  EXPECT_EQ(t.rows[1].note, "read off a figure");
  EXPECT_EQ(t.rows[2].node.at("gpus").as_int(), 32);  // the kind reads its own row fields
  EXPECT_EQ(t.node.at("hw").as_string(), "x.yaml");
  EXPECT_EQ(t.differences.size(), 1u);
}

// Ratios strata/paper by hand: a 150/100 = 1.5 and 1/2 = 0.5; b 300/200 = 1.5; c not computed.
TEST(SideBySide, JoinsPublishedAndComputedNumbers) {
  const auto p = parse(kPaper);
  sbs::Measured m;
  m.set("t1", "a", "tput", 150);
  m.set("t1", "a", "time", 1);
  m.set("t1", "b", "tput", 300);
  m.note("t1", "c", "not run");
  const std::string csv = sbs::csv(p, m);
  EXPECT_NE(csv.find("t1,a,tput,throughput,TFLOP/s,100,150,1.5,,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("t1,a,time,step time,s,2,1,0.5,,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("t1,b,time,step time,s,,,,read off a figure,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("t1,c,time,step time,s,4,,,,not run\n"), std::string::npos) << csv;
  // One line per row and metric, plus the header.
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 3 * 2);
  // Geometric mean of the ratios of the rows with both numbers: tput sqrt(1.5 x 1.5), time 0.5 (one row).
  EXPECT_NEAR(*sbs::mean_ratio(p.tables[0], m, "tput"), 1.5, 1e-12);
  EXPECT_NEAR(*sbs::mean_ratio(p.tables[0], m, "time"), 0.5, 1e-12);
  EXPECT_FALSE(sbs::mean_ratio(p.tables[0], sbs::Measured{}, "tput").has_value());
  const std::string md = sbs::markdown(p, m);
  EXPECT_NE(md.find("| a | 100 | 150 | 1.50 | 2 | 1 | 0.50 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| c |  |  |  | 4 | not computed |  | strata: not run |"), std::string::npos) << md;
  EXPECT_NE(md.find("Somebody et al., Table 1, <https://example.org/paper>"), std::string::npos) << md;
  EXPECT_NE(md.find("- one reason"), std::string::npos) << md;
}

// A table of one row (headline numbers) is printed a line per metric, with the metric's note.
TEST(SideBySide, OneRowTablesListTheMetrics) {
  const auto p = parse(R"(
- name: h
  source: S
  url: https://example.org
  metrics:
    - {key: spread, label: largest spread, unit: x, note: "case A"}
    - {key: cases, label: cases, unit: cases}
  rows:
    - {key: grid, spread: 400, cases: 200}
)");
  sbs::Measured m;
  m.set("h", "grid", "spread", 500);
  const std::string md = sbs::markdown(p, m);
  EXPECT_NE(md.find("| quantity | paper | strata | strata/paper | notes |"), std::string::npos) << md;
  EXPECT_NE(md.find("| largest spread | 400 x | 500 x | 1.25 | paper: case A |"), std::string::npos) << md;
  EXPECT_NE(md.find("| cases | 200 cases | not computed |  |  |"), std::string::npos) << md;
}

void expect_error(std::string_view text, std::string_view where) {
  try {
    parse(text);
    FAIL() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
  }
}

std::string with(std::string_view from, std::string_view to) {
  std::string s = kPaper;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(SideBySide, ErrorsNameFileLineAndField) {
  EXPECT_NO_THROW(parse(kPaper));
  expect_error(with("{key: b, gpus: 16,", "{key: a, gpus: 16,"), "p.yaml:12:");
  expect_error(with("{key: b, gpus: 16,", "{key: a, gpus: 16,"), "row 'a' is listed twice");
  expect_error(with("{key: c, gpus: 32, time: 4}", "{key: c, gpus: 32}"),
               "publishes none of the table's metrics");
  expect_error(with("{key: c, gpus: 32, time: 4}", "{key: c, gpuz: 32, time: 4}"), "unknown field 'gpuz'");
  expect_error(with("url: https://example.org/paper", "url: see the paper"), "url: expected the published");
  expect_error(with("name: t1", "name: t 1"), "name: expected a name");
  expect_error(with("{key: time, label", "{key: tput, label"), "metric 'tput' is listed twice");
  expect_error(with("  hw: x.yaml\n", "  hx: x.yaml\n"), "unknown field 'hx'");
  expect_error("[]", "expected at least one published table");
}

// `published: false`: a table of strata's numbers only (a what-if beside the published tables). Its rows
// carry no published value and need no URL; the markdown shows strata's column alone.
TEST(SideBySide, StrataOnlyTables) {
  const std::string what_if = R"(
- name: w
  published: false
  source: The same plan on a newer system
  hw: y.yaml
  metrics:
    - {key: time, label: step time, unit: s}
  rows:
    - {key: a, gpus: 8}
)";
  const auto p = parse(what_if);
  ASSERT_EQ(p.tables.size(), 1u);
  EXPECT_FALSE(p.tables[0].published);
  EXPECT_TRUE(p.tables[0].rows[0].paper.empty());
  sbs::Measured m;
  m.set("w", "a", "time", 1.5);
  const std::string md = sbs::markdown(p, m);
  EXPECT_NE(md.find("## Table `w` (strata only: no published numbers)"), std::string::npos) << md;
  EXPECT_NE(md.find("| row | strata step time (s) | notes |\n|---|---|---|\n| a | 1.5 |  |"),
            std::string::npos)
      << md;
  EXPECT_EQ(sbs::csv(p, m),
            "table,row,metric,label,unit,paper,strata,strata_over_paper,paper_note,strata_note\n"
            "w,a,time,step time,s,,1.5,,,\n");
  std::string with_value = what_if;
  with_value.replace(with_value.find("{key: a, gpus: 8}"), 17, "{key: a, gpus: 8, time: 2}");
  expect_error(with_value, "p.yaml:9:31: paper[0].rows[0].time: the table says `published: false`");
  expect_error(with("{key: c, gpus: 32, time: 4}", "{key: c, gpus: 32}"), "says `published: false`");
}

}  // namespace
