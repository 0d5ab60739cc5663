#include "experiments/cli_options.h"

#include <numeric>

namespace strata::cli {

std::vector<hw::Rank> parse_rank_list(const std::string& text, int num_gpus, const std::string& option) {
  if (text.empty()) {
    std::vector<hw::Rank> all(static_cast<std::size_t>(num_gpus));
    std::iota(all.begin(), all.end(), 0);  // a count, not a topology: hw::Topology::all_ranks needs one
    return all;
  }
  return util::parse_rank_set(text, num_gpus, option);
}

}  // namespace strata::cli
