// The error util's functions throw for bad user input (a malformed command-line value, an output path whose
// folder does not exist). It derives from std::invalid_argument, which the strata command line reports as
// "strata: error: <message>" with exit status 2; the message names the option or file and what was expected.
#pragma once

#include <stdexcept>

namespace strata::util {

class InputError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace strata::util
