#include "hw/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>

#include "hw/limits.h"
#include "hw/units.h"
#include "util/parse.h"

namespace strata {

namespace {
std::string child_field(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}

std::string position(const std::string& file, const YAML::Mark& m) {
  return fmt::format("{}:{}:{}", file, m.line + 1, m.column + 1);
}

// yaml-cpp keeps both entries of a duplicated key and answers lookups with the first, so a repeated key
// would silently lose its second value. Walks the whole document and rejects any mapping with a repeated key.
void reject_duplicate_keys(const YAML::Node& node, const std::string& file, const std::string& field) {
  if (node.IsMap()) {
    std::unordered_set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar())
        throw ConfigError(
            fmt::format("{}: {}: expected a text key (a key that is a list or a mapping is not "
                        "part of any strata file)",
                        position(file, kv.first.Mark()), field.empty() ? "<top level>" : field));
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second)
        throw ConfigError(fmt::format("{}: {}: duplicate key '{}' (each key may appear once in a mapping)",
                                      position(file, kv.first.Mark()), child_field(field, key), key));
      reject_duplicate_keys(kv.second, file, child_field(field, key));
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      reject_duplicate_keys(node[i], file, fmt::format("{}[{}]", field, i));
  }
}

// yaml-cpp reads a quoted scalar that is never closed up to the end of the document without complaint, which
// then surfaces as a confusing "missing field" far from the cause. A quote is unterminated when no matching
// closing quote follows its opening one.
void reject_unterminated_quote(std::string_view text, const std::string& file) {
  std::size_t line = 1, column = 1;
  bool in_comment = false;
  for (std::size_t i = 0; i < text.size(); ++i, ++column) {
    const char c = text[i];
    if (c == '\n') {
      ++line, column = 0, in_comment = false;
      continue;
    }
    if (in_comment) continue;
    const bool starts_token =
        i == 0 || std::string_view(" \t[{,:-").find(text[i - 1]) != std::string_view::npos;
    if (c == '#' && starts_token) {
      in_comment = true;
      continue;
    }
    const bool structural = std::string_view(":[]{},").find(c) != std::string_view::npos ||
                            (c == '-' && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n'));
    if (structural || c == ' ' || c == '\t' || c == '\r') continue;
    if ((c == '|' || c == '>') && starts_token) {
      // A block scalar: its lines (indented deeper than the line that opens it) are text, not YAML.
      std::size_t k = i + 1;
      while (k < text.size() && std::string_view("+-0123456789").find(text[k]) != std::string_view::npos) ++k;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      if (k < text.size() && text[k] != '\n' && text[k] != '#') continue;
      const std::size_t line_start =
          text.rfind('\n', i) == std::string_view::npos ? 0 : text.rfind('\n', i) + 1;
      const std::size_t indent = text.find_first_not_of(' ', line_start) - line_start;
      k = text.find('\n', i);
      while (k != std::string_view::npos && k + 1 < text.size()) {
        const std::size_t next = k + 1, first = text.find_first_not_of(' ', next);
        const bool blank = first == std::string_view::npos || text[first] == '\n';
        if (!blank && first - next <= indent) break;
        ++line;
        k = text.find('\n', next);
      }
      if (k == std::string_view::npos) return;
      i = k - 1, column = 0;
      continue;
    }
    if ((c != '"' && c != '\'') || !starts_token) {
      {
        // Skip the rest of a plain scalar so quotes inside it (it's, 5") are not read as openings.
        while (i + 1 < text.size() && text[i + 1] != '\n' &&
               std::string_view(",]}#").find(text[i + 1]) == std::string_view::npos &&
               !(text[i + 1] == ':' && (i + 2 >= text.size() || text[i + 2] == ' ' || text[i + 2] == '\n')))
          ++i, ++column;
      }
      continue;
    }
    const std::size_t open_line = line, open_column = column;
    std::size_t j = i + 1;
    for (; j < text.size(); ++j) {
      if (c == '"' && text[j] == '\\') {
        ++j;
        continue;
      }
      if (text[j] == c) {
        if (c == '\'' && j + 1 < text.size() && text[j + 1] == '\'') {  // '' is an escaped quote
          ++j;
          continue;
        }
        break;
      }
    }
    if (j >= text.size())
      throw ConfigError(
          fmt::format("{}:{}:{}: YAML syntax error: the quoted text starting here is never closed "
                      "(missing {})",
                      file, open_line, open_column, c));
    for (std::size_t k = i; k < j; ++k)
      if (text[k] == '\n')
        ++line, column = 0;
      else
        ++column;
    i = j;
  }
}
}  // namespace

YamlReader YamlReader::from_file(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw ConfigError(fmt::format("{}: cannot open file: no such file", path));
  if (std::filesystem::is_directory(status))
    throw ConfigError(fmt::format("{}: is a directory, expected a YAML file", path));
  std::ifstream in(path);
  if (!in)
    throw ConfigError(fmt::format("{}: cannot open file: permission denied or not a regular file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw ConfigError(fmt::format("{}: cannot read file", path));
  return from_string(buffer.str(), path);
}

YamlReader YamlReader::from_string(std::string_view text, std::string name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: YAML syntax error: {}", position(name, e.mark), e.msg));
  }
  reject_unterminated_quote(text, name);
  if (root.IsNull() || !root.IsDefined())
    throw ConfigError(fmt::format("{}: the file is empty, expected a YAML mapping at the top level", name));
  if (!root.IsMap())
    throw config_error(ConfigLocation{name, "<top level>"}, root,
                       "expected a YAML mapping (key: value lines) at the top level");
  reject_duplicate_keys(root, name, "");
  return YamlReader(std::move(name), root, "");
}

ConfigError YamlReader::error(std::string_view message) const {
  return config_error(ConfigLocation{file_, field_.empty() ? std::string("<top level>") : field_}, node_,
                      message);
}

bool YamlReader::has(std::string_view key) const {
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

std::optional<YamlReader> YamlReader::maybe(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return YamlReader(file_, node_[std::string(key)], child_field(field_, key));
}

YamlReader YamlReader::at(std::string_view key) const {
  if (!node_.IsMap()) throw error("expected a mapping");
  if (!has(key)) throw error(fmt::format("missing required field '{}'", key));
  return YamlReader(file_, node_[std::string(key)], child_field(field_, key));
}

YamlReader YamlReader::at(std::size_t index) const {
  return YamlReader(file_, node_[index], fmt::format("{}[{}]", field_, index));
}

void YamlReader::expect_map(std::initializer_list<std::string_view> allowed) const {
  expect_map(std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

void YamlReader::expect_map(std::span<const std::string_view> allowed) const {
  if (!node_.IsMap()) throw error("expected a mapping");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (auto a : allowed) list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
      throw config_error(ConfigLocation{file_, child_field(field_, key)}, kv.first,
                         fmt::format("unknown field '{}' (expected one of: {})", key, list));
    }
  }
}

void YamlReader::expect_sequence() const {
  if (!node_.IsSequence()) throw error("expected a list");
}

std::string YamlReader::as_string() const {
  if (!node_.IsScalar()) throw error("expected a text value");
  return node_.Scalar();
}

long long YamlReader::as_int() const {
  const std::string s = as_string();
  if (const auto v = util::try_parse_int(
          s, {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()}))
    return *v;
  throw error(fmt::format("expected an integer, got '{}'", s));
}

long long YamlReader::as_positive_int() const {
  // Callers store counts in int: larger values would wrap (gpus: 4294967304 read as 8).
  return as_int_in(1, std::numeric_limits<int>::max());
}

long long YamlReader::as_int_in(long long lo, long long hi) const {
  const std::string s = as_string();
  if (const auto v = util::try_parse_int(s, {lo, hi})) return *v;
  throw error(fmt::format("expected an integer from {} to {}, got '{}'", lo, hi, s));
}

double YamlReader::as_double() const {
  const std::string s = as_string();
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v))
    throw error(fmt::format("expected a number, got '{}'", s));
  return v;
}

bool YamlReader::as_bool() const {
  const std::string s = as_string();
  if (s == "true") return true;
  if (s == "false") return false;
  throw error(fmt::format("expected true or false, got '{}'", s));
}

double YamlReader::as_bandwidth() const {
  const std::string s = as_string();
  const auto v = units::parse_bandwidth(s);
  if (v && *v >= hw::limits::kMinBandwidth && *v <= hw::limits::kMaxBandwidth) return *v;
  throw error(fmt::format("expected a bandwidth from 1 KB/s to 1000 TB/s with a unit ({}), got '{}'",
                          units::kBandwidthUnits, s));
}

double YamlReader::as_bytes() const {
  const std::string s = as_string();
  const auto v = units::parse_bytes(s);
  if (v && *v >= 1 && *v <= hw::limits::kMaxCapacity) return *v;
  throw error(fmt::format("expected a size from 1 B to 1024 TiB: {}; got '{}'", util::kSizeRule, s));
}

double YamlReader::as_duration() const {
  const std::string s = as_string();
  const auto v = units::parse_duration(s);
  if (v && *v >= 0 && *v <= hw::limits::kMaxDuration) return *v;
  throw error(fmt::format("expected a duration from 0 s to 1e6 s with a unit ({}), got '{}'",
                          units::kDurationUnits, s));
}

double YamlReader::as_flops() const {
  const std::string s = as_string();
  const auto v = units::parse_flops(s);
  if (v && *v >= hw::limits::kMinFlops && *v <= hw::limits::kMaxFlops) return *v;
  throw error(fmt::format("expected a throughput from 0.001 GFLOPS to 10^9 PFLOPS with a unit ({}), got '{}'",
                          units::kFlopsUnits, s));
}

}  // namespace strata
