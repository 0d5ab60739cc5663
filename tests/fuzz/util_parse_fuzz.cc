// The strict value parsers (sizes, size ranges, rank sets, integer and key=value lists): any text is a value
// or an InputError. The first byte picks the parser so one corpus covers all of them.
#include <cstdint>
#include <string_view>

#include "util/error.h"
#include "util/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  namespace u = strata::util;
  try {
    switch (data[0] % 6) {
      case 0:
        (void)u::parse_size(text, "--bytes");
        break;
      case 1:
        (void)u::parse_size_range(text, "--sizes");
        break;
      case 2:
        (void)u::parse_rank_set(text, 1 << 20, "--group");
        break;
      case 3:
        (void)u::parse_int_list(text, {1, 1 << 20}, "--axes");
        break;
      case 4:
        (void)u::parse_key_values(text, "--dim");
        break;
      default:
        (void)u::parse_real(text, 0, 1e6, "--alpha");
        break;
    }
  } catch (const strata::util::InputError&) {
  }
  return 0;
}
