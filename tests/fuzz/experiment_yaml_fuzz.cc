// Experiment YAML (strata run): any text is a valid experiment or a user error naming file, line and field.
// Only the parse step runs (experiments/experiment.h, check_experiment_text): it validates every field and
// loads the files the experiment names, resolved relative to configs/experiments/ as for a shipped file.
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "experiments/experiment.h"
#include "hw/config_error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    strata::experiments::check_experiment_text(text, STRATA_SOURCE_DIR "/configs/experiments/fuzz.yaml");
  } catch (const strata::ConfigError&) {
  } catch (const std::invalid_argument&) {  // util::InputError and the documented invalid_argument errors
  }
  return 0;
}
