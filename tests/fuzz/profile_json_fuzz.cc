// Profile database reader (models/cost/cost_model.h): any text is a database or a ConfigError naming the
// file and the key or entry.
#include <cstdint>
#include <string_view>

#include "hw/config_error.h"
#include "models/cost/cost_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)strata::models::ProfileDb::parse(text, "fuzz.json");
  } catch (const strata::ConfigError&) {
  }
  return 0;
}
