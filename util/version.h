// strata's version, declared once: `strata --version` prints it and sweep result stores key every point with
// it (a new version recomputes stored points). Keep it equal to project(VERSION) in CMakeLists.txt
// (tests/experiments_sweep_test.cc checks).
#pragma once

#include <string_view>

namespace strata::util {

inline constexpr std::string_view kVersion = "strata 0.1.0";

}  // namespace strata::util
