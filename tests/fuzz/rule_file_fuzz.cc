// Rule-file parsers (search/subst/rule.h): any text is a list of rules or a ConfigError naming
// file:line:column, both in strata's format and as a TASO equation file (shapes unknown, so any variable name
// is accepted). Parsed rules are printed back, as `strata subst` does when it writes the rules it verified.
#include <cstdint>
#include <string_view>

#include "hw/config_error.h"
#include "search/subst/rule.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  namespace subst = strata::search::subst;
  try {
    const auto rules = subst::parse_rules(text, "fuzz.rules");
    (void)subst::format_rules(rules);
  } catch (const strata::ConfigError&) {
  }
  try {
    const auto rules = subst::parse_taso_equations(text, "fuzz.txt", subst::TasoShapes::kUnknown);
    (void)subst::format_rules(rules);
  } catch (const strata::ConfigError&) {
  }
  return 0;
}
