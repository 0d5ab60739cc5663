// Errors in user-supplied configuration (YAML, CLI values) that name where the problem is and what was
// expected.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

namespace strata {

// Thrown for any bad configuration input. what() reads "file:line:column: field: message".
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a value came from: the file and the dotted field path inside it (e.g. "node.fabric.link").
struct ConfigLocation {
  std::string file;
  std::string field;
};

// Builds a ConfigError pointing at `node` (1-based line and column from yaml-cpp's mark).
[[nodiscard]] ConfigError config_error(const ConfigLocation& where, const YAML::Node& node,
                                       std::string_view message);
// Same, for errors with no YAML node at hand (e.g. a command-line value).
[[nodiscard]] ConfigError config_error(const ConfigLocation& where, std::string_view message);

}  // namespace strata
