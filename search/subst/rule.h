// Substitution rules and their text formats: strata's own rule files (docs/subst.md) and the published TASO
// equation files (INDEX<TAB>LHS == RHS, tests/subst/data/taso-rules/README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "search/subst/term.h"

namespace strata::search::subst {

// A tensor shape; an empty vector is a 0-D scalar.
using Shape = std::vector<std::int64_t>;

struct RuleInput {
  std::string name;
  std::optional<Shape> shape;  // nullopt: unknown (e.g. TASO's shipped file, whose ids are pattern variables)
  friend bool operator==(const RuleInput&, const RuleInput&) = default;
};

// One mapped output of a rule: the source graph's output (lhs) equals the target graph's output (rhs).
struct Equation {
  Term lhs;
  Term rhs;
  friend bool operator==(const Equation&, const Equation&) = default;
};

// A substitution: the source graph (all lhs) may be replaced by the target graph (all rhs). Multi-output
// rules have one equation per mapped output.
struct Rule {
  std::string name;
  std::vector<RuleInput> inputs;
  std::vector<Equation> outputs;
  std::string origin;  // "file:line" of its first line; not part of a rule's identity

  [[nodiscard]] const RuleInput* find_input(std::string_view input_name) const;
  friend bool operator==(const Rule& a, const Rule& b) {
    return a.name == b.name && a.inputs == b.inputs && a.outputs == b.outputs;
  }
};

// Number of operators in the source (lhs) and target (rhs) graph of a rule: distinct subterms count once, the
// two outputs of one split (split_0/split_1 of the same tensor and axis) count as one operator, constants
// count.
int source_op_count(const Rule& rule);
int target_op_count(const Rule& rule);

// "2x4", "4x4x3x3", "scalar" (0-D), "?" (unknown).
std::string shape_to_string(const std::optional<Shape>& shape);
std::optional<std::optional<Shape>> parse_shape(std::string_view text);  // outer nullopt: malformed

// strata's rule format, one entry per rule:
//   rule NAME (INPUT: SHAPE, ...)
//     LHS == RHS          one indented line per mapped output
// '#' starts a comment. Throws ConfigError "file:line:column: ..." on malformed input.
std::vector<Rule> parse_rules(std::string_view text, std::string_view file);
std::string format_rules(std::span<const Rule> rules);
std::string format_rule(const Rule& rule);

// How input shapes of a TASO equation file are assigned.
enum class TasoShapes {
  kGeneratorTable,  // input_1..input_20 get the shapes of TASO's public generator (generator.cc); others are
                    // errors
  kUnknown,         // any variable name, shapes unknown (the shipped 133-rule file)
};
// The public generator's shape of input_N (1 <= n <= 20).
std::optional<Shape> taso_generator_input_shape(int n);

// TASO equation files: one line "INDEX<TAB>LHS == RHS" per mapped output; the lines of a multi-output rule
// share the index and are consecutive. Rules are named by their index.
std::vector<Rule> parse_taso_equations(std::string_view text, std::string_view file, TasoShapes shapes);

enum class RuleFileFormat { kAutomatic, kStrata, kTaso };
// Reads a rule file. automatic: a first entry line starting with "INDEX<TAB>" means a TASO equation file.
// Rules whose input shapes are all known must type-check on them (rule_check.h: both sides of every equation
// well-typed under the IR's shape rules, with equal shapes); otherwise ConfigError "file:line: rule 'r' ...".
std::vector<Rule> load_rules(const std::string& path, RuleFileFormat format = RuleFileFormat::kAutomatic,
                             TasoShapes taso_shapes = TasoShapes::kGeneratorTable);
// Writes rules in strata's format, atomically.
void save_rules(const std::string& path, std::span<const Rule> rules);

}  // namespace strata::search::subst
