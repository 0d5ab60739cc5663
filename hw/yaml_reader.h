// Strict YAML reading: every accessor knows its file and dotted field path, so any problem becomes a
// ConfigError that names file, line, field and what was expected. Unknown keys are errors, not ignored.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "hw/config_error.h"

namespace strata {

class YamlReader {
 public:
  YamlReader(std::string file, YAML::Node node, std::string field = "")
      : file_(std::move(file)), node_(std::move(node)), field_(std::move(field)) {}
  YamlReader(const YamlReader&) = default;
  // Assignment is deleted: YAML::Node's operator= writes through to the node it refers to.
  YamlReader& operator=(const YamlReader&) = delete;

  // Parses a whole file or text; syntax errors become ConfigErrors with the parser's line.
  static YamlReader from_file(const std::string& path);
  static YamlReader from_string(std::string_view text, std::string name);

  const YAML::Node& node() const { return node_; }
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }
  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool is_scalar() const { return node_.IsScalar(); }
  std::size_t size() const { return node_.size(); }

  bool has(std::string_view key) const;
  YamlReader at(std::string_view key) const;  // required child; error if missing
  std::optional<YamlReader> maybe(std::string_view key) const;
  YamlReader at(std::size_t index) const;  // sequence element

  // Requires a map whose keys are all in `allowed`.
  void expect_map(std::initializer_list<std::string_view> allowed) const;
  void expect_map(std::span<const std::string_view> allowed) const;  // a key set built at run time
  void expect_sequence() const;

  std::string as_string() const;
  long long as_int() const;           // any integer
  long long as_positive_int() const;  // >= 1
  // An integer in [lo, hi]; the error names the allowed range (guards narrowing to int and absurd sizes).
  long long as_int_in(long long lo, long long hi) const;
  int as_int32_in(int lo, int hi) const { return static_cast<int>(as_int_in(lo, hi)); }
  double as_double() const;  // any finite number
  bool as_bool() const;
  // Quantities with a unit, each within the physically meaningful range in hw/limits.h (the error names it).
  double as_bandwidth() const;  // "450 GB/s"
  double as_bytes() const;      // "4 GiB", > 0
  double as_duration() const;   // "0.6 us", 0 .. 1e6 s
  double as_flops() const;      // "989 TFLOPS"

  [[nodiscard]] ConfigError error(std::string_view message) const;

 private:
  std::string file_;
  YAML::Node node_;
  std::string field_;
};

}  // namespace strata
