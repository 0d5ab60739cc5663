#include "search/subst/rule.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "hw/config_error.h"
#include "search/subst/rule_check.h"
#include "util/atomic_file.h"
#include "util/parse.h"

namespace strata::search::subst {

const RuleInput* Rule::find_input(std::string_view input_name) const {
  for (const RuleInput& in : inputs)
    if (in.name == input_name) return &in;
  return nullptr;
}

namespace {

void collect_ops(const Term& t, std::set<std::string>& ops) {
  if (t.is_variable()) return;
  std::string key = to_string(t);
  if (t.op() == Op::kSplit0 || t.op() == Op::kSplit1) key = "split" + key.substr(key.find('('));
  ops.insert(std::move(key));
  for (const Term& a : t.args()) collect_ops(a, ops);
}

int graph_op_count(const Rule& rule, bool source) {
  std::set<std::string> ops;
  for (const Equation& eq : rule.outputs) collect_ops(source ? eq.lhs : eq.rhs, ops);
  return static_cast<int>(ops.size());
}

}  // namespace

int source_op_count(const Rule& rule) {
  return graph_op_count(rule, true);
}
int target_op_count(const Rule& rule) {
  return graph_op_count(rule, false);
}

std::string shape_to_string(const std::optional<Shape>& shape) {
  if (!shape) return "?";
  if (shape->empty()) return "scalar";
  std::string s;
  for (std::size_t i = 0; i < shape->size(); ++i) s += (i ? "x" : "") + std::to_string((*shape)[i]);
  return s;
}

std::optional<std::optional<Shape>> parse_shape(std::string_view text) {
  if (text == "?") return std::optional<Shape>{};
  if (text == "scalar") return std::optional<Shape>{Shape{}};
  Shape dims;
  std::size_t pos = 0;
  while (true) {
    const std::size_t end = std::min(text.find('x', pos), text.size());
    std::int64_t d = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, d);
    if (ec != std::errc() || ptr != text.data() + end || d <= 0) return std::nullopt;
    dims.push_back(d);
    if (end == text.size()) break;
    pos = end + 1;
  }
  return std::optional<Shape>{std::move(dims)};
}

namespace {

// The file's lines (util::split_lines), with '#' comments cut off where `strip_comments`.
std::vector<util::TextLine> split_lines(std::string_view text, bool strip_comments) {
  auto lines = util::split_lines(text);
  if (strip_comments)
    for (auto& line : lines) line.text = line.text.substr(0, std::min(line.text.find('#'), line.text.size()));
  return lines;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

void skip_space(std::string_view s, std::size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
}

[[nodiscard]] ConfigError error_at(std::string_view file, int line, std::size_t column0,
                                   std::string_view message) {
  return ConfigError(fmt::format("{}:{}:{}: {}", file, line, column0 + 1, message));
}

std::string describe(std::string_view s, std::size_t pos) {
  if (pos >= s.size()) return "end of line";
  return fmt::format("'{}'", s.substr(pos, std::min<std::size_t>(12, s.size() - pos)));
}

// Column (0-based) of the identifier `name` in `line`, for error messages.
std::size_t find_identifier(std::string_view line, std::string_view name) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (std::size_t p = line.find(name); p != std::string_view::npos; p = line.find(name, p + 1)) {
    const bool left_ok = p == 0 || !ident(line[p - 1]);
    const bool right_ok = p + name.size() >= line.size() || !ident(line[p + name.size()]);
    if (left_ok && right_ok) return p;
  }
  return 0;
}

// "LHS == RHS" from line[pos...] to the end of the line.
Equation parse_equation(std::string_view line, std::size_t pos, std::string_view file, int number) {
  const TextOrigin origin{file, number, 1};
  Term lhs = parse_term(line, pos, origin);
  skip_space(line, pos);
  if (line.substr(pos, 2) != "==")
    throw error_at(file, number, pos,
                   fmt::format("expected '==' between the two sides, got {}", describe(line, pos)));
  pos += 2;
  Term rhs = parse_term(line, pos, origin);
  skip_space(line, pos);
  if (pos != line.size())
    throw error_at(
        file, number, pos,
        fmt::format("expected end of line after the right-hand side, got {}", describe(line, pos)));
  return {std::move(lhs), std::move(rhs)};
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.' || c == '/';
}

// "rule NAME (IN: SHAPE, ...)"
Rule parse_header(std::string_view line, std::string_view file, int number) {
  std::size_t pos = 0;
  if (line.substr(0, 4) != "rule" || (line.size() > 4 && line[4] != ' ' && line[4] != '\t'))
    throw error_at(
        file, number, 0,
        fmt::format("expected an entry 'rule NAME (INPUT: SHAPE, ...)' (equation lines are indented), "
                    "got {}",
                    describe(line, 0)));
  pos = 4;
  skip_space(line, pos);
  const std::size_t name_start = pos;
  while (pos < line.size() && is_name_char(line[pos])) ++pos;
  if (pos == name_start)
    throw error_at(file, number, pos,
                   fmt::format("expected a rule name ([A-Za-z0-9_.-/]+), got {}", describe(line, pos)));
  Rule rule;
  rule.name = std::string(line.substr(name_start, pos - name_start));
  rule.origin = fmt::format("{}:{}", file, number);
  skip_space(line, pos);
  if (pos >= line.size() || line[pos] != '(')
    throw error_at(file, number, pos,
                   fmt::format("expected '(' opening the input list of rule '{}', got {}", rule.name,
                               describe(line, pos)));
  ++pos;
  skip_space(line, pos);
  if (pos < line.size() && line[pos] == ')') {
    ++pos;
  } else {
    while (true) {
      skip_space(line, pos);
      const std::size_t in_start = pos;
      while (pos < line.size() &&
             (std::isalnum(static_cast<unsigned char>(line[pos])) != 0 || line[pos] == '_'))
        ++pos;
      const std::string_view in_name = line.substr(in_start, pos - in_start);
      if (!is_valid_variable_name(in_name))
        throw error_at(
            file, number, in_start,
            fmt::format("expected an input name ([A-Za-z_][A-Za-z0-9_]*, not an operator name), got {}",
                        describe(line, in_start)));
      if (rule.find_input(in_name) != nullptr)
        throw error_at(file, number, in_start, fmt::format("input '{}' declared twice", in_name));
      skip_space(line, pos);
      if (pos >= line.size() || line[pos] != ':')
        throw error_at(
            file, number, pos,
            fmt::format("expected ':' and a shape after input '{}', got {}", in_name, describe(line, pos)));
      ++pos;
      skip_space(line, pos);
      const std::size_t shape_start = pos;
      while (pos < line.size() && line[pos] != ',' && line[pos] != ')' && line[pos] != ' ' &&
             line[pos] != '\t')
        ++pos;
      const auto shape = parse_shape(line.substr(shape_start, pos - shape_start));
      if (!shape)
        throw error_at(file, number, shape_start,
                       fmt::format("expected a shape of input '{}' (e.g. 2x4, 4x4x3x3, scalar, ?), got {}",
                                   in_name, describe(line, shape_start)));
      rule.inputs.push_back({std::string(in_name), *shape});
      skip_space(line, pos);
      if (pos < line.size() && line[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < line.size() && line[pos] == ')') {
        ++pos;
        break;
      }
      throw error_at(file, number, pos,
                     fmt::format("expected ',' or ')' in the input list, got {}", describe(line, pos)));
    }
  }
  skip_space(line, pos);
  if (pos != line.size())
    throw error_at(file, number, pos,
                   fmt::format("expected end of line after the input list, got {}", describe(line, pos)));
  return rule;
}

void check_rule_complete(const Rule& rule, std::string_view file, int header_line) {
  if (rule.outputs.empty())
    throw error_at(
        file, header_line, 0,
        fmt::format("rule '{}' has no equations (expected indented 'LHS == RHS' lines)", rule.name));
  std::vector<std::string> used;
  for (const Equation& eq : rule.outputs) {
    collect_variables(eq.lhs, used);
    collect_variables(eq.rhs, used);
  }
  for (const RuleInput& in : rule.inputs)
    if (std::find(used.begin(), used.end(), in.name) == used.end())
      throw error_at(
          file, header_line, 0,
          fmt::format("rule '{}': input '{}' is declared but used by no equation", rule.name, in.name));
}

}  // namespace

std::vector<Rule> parse_rules(std::string_view text, std::string_view file) {
  std::vector<Rule> rules;
  std::map<std::string, int, std::less<>> name_line;
  int header_line = 0;
  for (const util::TextLine& line : split_lines(text, true)) {
    if (blank(line.text)) continue;
    if (line.text.front() != ' ' && line.text.front() != '\t') {
      if (!rules.empty()) check_rule_complete(rules.back(), file, header_line);
      Rule rule = parse_header(line.text, file, line.number);
      if (const auto it = name_line.find(rule.name); it != name_line.end())
        throw error_at(file, line.number, line.text.find_first_not_of(" \t", 4),
                       fmt::format("rule name '{}' already used on line {}", rule.name, it->second));
      name_line.emplace(rule.name, line.number);
      header_line = line.number;
      rules.push_back(std::move(rule));
      continue;
    }
    if (rules.empty())
      throw error_at(file, line.number, 0,
                     "expected 'rule NAME (INPUT: SHAPE, ...)' before the first equation");
    Equation eq = parse_equation(line.text, 0, file, line.number);
    std::vector<std::string> vars;
    collect_variables(eq.lhs, vars);
    collect_variables(eq.rhs, vars);
    for (const std::string& v : vars)
      if (rules.back().find_input(v) == nullptr)
        throw error_at(
            file, line.number, find_identifier(line.text, v),
            fmt::format("'{}' is not an input of rule '{}' (declare it as '{}: SHAPE' in the header)", v,
                        rules.back().name, v));
    rules.back().outputs.push_back(std::move(eq));
  }
  if (!rules.empty()) check_rule_complete(rules.back(), file, header_line);
  return rules;
}

std::string format_rule(const Rule& rule) {
  std::string out = fmt::format("rule {} (", rule.name);
  for (std::size_t i = 0; i < rule.inputs.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", rule.inputs[i].name, shape_to_string(rule.inputs[i].shape));
  out += ")\n";
  for (const Equation& eq : rule.outputs) {
    out += "  ";
    append_term(out, eq.lhs);
    out += " == ";
    append_term(out, eq.rhs);
    out += '\n';
  }
  return out;
}

std::string format_rules(std::span<const Rule> rules) {
  std::string out =
      "# strata substitution rules (docs/subst.md): 'rule NAME (INPUT: SHAPE, ...)', then one indented\n"
      "# 'SOURCE == TARGET' line per mapped output, both sides in prefix notation.\n";
  for (const Rule& r : rules) out += format_rule(r);
  return out;
}

std::optional<Shape> taso_generator_input_shape(int n) {
  if (n >= 1 && n <= 3) return Shape{2, 4};
  if (n >= 4 && n <= 6) return Shape{4, 4};
  if (n >= 7 && n <= 9) return Shape{2, 4, 5, 5};
  if (n >= 10 && n <= 12) return Shape{4, 4, 3, 3};
  if (n >= 13 && n <= 15) return Shape{4, 4, 1, 3};
  if (n >= 16 && n <= 18) return Shape{4, 4, 3, 1};
  if (n == 19) return Shape{4, 1, 3, 3};
  if (n == 20) return Shape{};
  return std::nullopt;
}

namespace {

// N of "input_N", or 0.
int taso_input_number(std::string_view name) {
  constexpr std::string_view prefix = "input_";
  if (name.substr(0, prefix.size()) != prefix) return 0;
  int n = 0;
  const char* begin = name.data() + prefix.size();
  const auto [ptr, ec] = std::from_chars(begin, name.data() + name.size(), n);
  return ec == std::errc() && ptr == name.data() + name.size() ? n : 0;
}

}  // namespace

std::vector<Rule> parse_taso_equations(std::string_view text, std::string_view file, TasoShapes shapes) {
  std::vector<Rule> rules;
  std::map<long, int> index_line;
  long previous = -1;
  for (const util::TextLine& line : split_lines(text, false)) {
    if (blank(line.text)) continue;
    const std::string_view s = line.text;
    long index = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), index);
    const std::size_t digits = static_cast<std::size_t>(ptr - s.data());
    if (ec != std::errc() || digits == 0 || index < 0 || digits >= s.size() ||
        (s[digits] != '\t' && s[digits] != ' '))
      throw error_at(file, line.number, 0,
                     fmt::format("expected 'INDEX<TAB>LHS == RHS' with a non-negative integer INDEX, got {}",
                                 describe(s, 0)));
    Equation eq = parse_equation(s, digits + 1, file, line.number);
    if (index != previous) {
      if (const auto it = index_line.find(index); it != index_line.end())
        throw error_at(
            file, line.number, 0,
            fmt::format("rule index {} was already used on line {}; the equations of a multi-output rule "
                        "must be consecutive",
                        index, it->second));
      index_line.emplace(index, line.number);
      Rule rule;
      rule.name = std::to_string(index);
      rule.origin = fmt::format("{}:{}", file, line.number);
      rules.push_back(std::move(rule));
      previous = index;
    }
    Rule& rule = rules.back();
    std::vector<std::string> vars;
    collect_variables(eq.lhs, vars);
    collect_variables(eq.rhs, vars);
    for (const std::string& v : vars) {
      if (rule.find_input(v) != nullptr) continue;
      std::optional<Shape> shape;
      if (shapes == TasoShapes::kGeneratorTable) {
        shape = taso_generator_input_shape(taso_input_number(v));
        if (!shape)
          throw error_at(
              file, line.number, find_identifier(s, v),
              fmt::format("'{}' is not one of the generator's inputs input_1..input_20 (read the file "
                          "with unknown input shapes to accept other names)",
                          v));
      }
      rule.inputs.push_back({v, shape});
    }
    rule.outputs.push_back(std::move(eq));
  }
  // Inputs in generator order (input_1, input_2, ...), then other names in order of first use.
  for (Rule& rule : rules)
    std::stable_sort(rule.inputs.begin(), rule.inputs.end(), [](const RuleInput& a, const RuleInput& b) {
      const int na = taso_input_number(a.name), nb = taso_input_number(b.name);
      return (na == 0 ? 1 << 30 : na) < (nb == 0 ? 1 << 30 : nb);
    });
  return rules;
}

std::vector<Rule> load_rules(const std::string& path, RuleFileFormat format, TasoShapes taso_shapes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open rule file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  if (format == RuleFileFormat::kAutomatic) {
    format = RuleFileFormat::kStrata;
    for (const util::TextLine& line : split_lines(text, true)) {
      if (blank(line.text)) continue;
      std::size_t d = 0;
      while (d < line.text.size() && std::isdigit(static_cast<unsigned char>(line.text[d])) != 0) ++d;
      if (d > 0 && d < line.text.size() && line.text[d] == '\t') format = RuleFileFormat::kTaso;
      break;
    }
  }
  auto rules = format == RuleFileFormat::kTaso ? parse_taso_equations(text, path, taso_shapes)
                                               : parse_rules(text, path);
  for (const Rule& r : rules)
    if (auto why = rule_shape_error(r))
      throw ConfigError(fmt::format("{}: rule '{}' does not type-check on its declared input shapes: {}",
                                    r.origin, r.name, *why));
  return rules;
}

void save_rules(const std::string& path, std::span<const Rule> rules) {
  util::write_file_atomically(path, format_rules(rules));
}

}  // namespace strata::search::subst
