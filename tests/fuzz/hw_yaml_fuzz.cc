// Hardware YAML loader: any text is a system or a ConfigError (file, line, field, expectation).
#include <cstdint>
#include <string_view>

#include "hw/config_error.h"
#include "hw/system_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto topo = strata::hw::load_system_from_string(text, "fuzz.yaml");
    // Route lookups are what the simulator does next with a loaded system.
    if (topo.num_gpus() > 1) (void)topo.route(0, topo.num_gpus() - 1);
  } catch (const strata::ConfigError&) {
  }
  return 0;
}
