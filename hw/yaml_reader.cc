#include "hw/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "hw/units.h"

namespace strata {

namespace {
std::string child_field(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : fmt::format("{}.{}", parent, key);
}
}  // namespace

YamlReader YamlReader::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return from_string(buffer.str(), path);
}

YamlReader YamlReader::from_string(std::string_view text, std::string name) {
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) throw ConfigError(fmt::format("{}: expected a YAML mapping at the top level", name));
    return YamlReader(std::move(name), root, "");
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}:{}:{}: YAML syntax error: {}", name, e.mark.line + 1, e.mark.column + 1,
                                  e.msg));
  }
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
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size())
    throw error(fmt::format("expected an integer, got '{}'", s));
  return v;
}

long long YamlReader::as_positive_int() const {
  const long long v = as_int();
  // Callers store counts in int: larger values would wrap (gpus: 4294967304 read as 8).
  if (v < 1 || v > std::numeric_limits<int>::max())
    throw error(fmt::format("expected an integer in 1..{}, got {}", std::numeric_limits<int>::max(), v));
  return v;
}

long long YamlReader::as_int_in(long long min, long long max) const {
  const long long v = as_int();
  if (v < min || v > max) throw error(fmt::format("expected an integer in {}..{}, got {}", min, max, v));
  return v;
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
  if (auto v = units::parse_bandwidth(s)) return *v;
  throw error(fmt::format("expected a positive bandwidth with a unit ({}), got '{}'", units::kBandwidthUnits, s));
}

double YamlReader::as_bytes() const {
  const std::string s = as_string();
  if (auto v = units::parse_bytes(s)) return *v;
  throw error(fmt::format("expected {}, got '{}'", util::kSizeRule, s));
}

double YamlReader::as_duration() const {
  const std::string s = as_string();
  if (auto v = units::parse_duration(s)) return *v;
  throw error(fmt::format("expected a duration with a unit ({}), got '{}'", units::kDurationUnits, s));
}

double YamlReader::as_flops() const {
  const std::string s = as_string();
  if (auto v = units::parse_flops(s)) return *v;
  throw error(fmt::format("expected a positive throughput with a unit ({}), got '{}'", units::kFlopsUnits, s));
}

}  // namespace strata
