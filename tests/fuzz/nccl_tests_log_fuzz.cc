// nccl-tests log reader (validate/nccl_tests_log.h, `strata validate nccl-tests --log`): any text is a log or
// an InputError naming the file, the line and what was expected.
#include <cstdint>
#include <string_view>

#include "util/error.h"
#include "validate/nccl_tests_log.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto log = strata::validate::parse_nccl_tests_log(text, "fuzz.txt");
    (void)strata::validate::nccl_tests_op(log.program);
  } catch (const strata::util::InputError&) {
  }
  return 0;
}
