// Paths of the TASO reference rule sets copied under tests/subst/data/taso-rules (see its README).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace strata::search::subst::testing {

inline std::string taso_data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/subst/data/taso-rules/" + name;
}
inline const std::string kTaso820 = "taso_sosp19ae_820_equations.txt";
inline const std::string kTaso619 = "taso_master_619_equations.txt";
inline const std::string kTaso133 = "taso_shipped_133_equations.txt";

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace strata::search::subst::testing
