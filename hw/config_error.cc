#include "hw/config_error.h"

#include <fmt/format.h>

namespace strata {

ConfigError config_error(const ConfigLocation& where, const YAML::Node& node, std::string_view message) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null()) return config_error(where, message);
  return ConfigError(
      fmt::format("{}:{}:{}: {}: {}", where.file, mark.line + 1, mark.column + 1, where.field, message));
}

ConfigError config_error(const ConfigLocation& where, std::string_view message) {
  if (where.file.empty()) return ConfigError(fmt::format("{}: {}", where.field, message));
  return ConfigError(fmt::format("{}: {}: {}", where.file, where.field, message));
}

}  // namespace strata
