#include "sim/maxmin.h"

#include <limits>

namespace strata::sim {

void MaxMinSolver::solve(std::span<const double> capacities,
                         std::span<const std::vector<std::int32_t>> var_constraints,
                         std::vector<double>& rates, double unbounded_rate) {
  flat_offsets_.assign(1, 0);
  flat_constraints_.clear();
  for (const auto& cs : var_constraints) {
    flat_constraints_.insert(flat_constraints_.end(), cs.begin(), cs.end());
    flat_offsets_.push_back(static_cast<std::int32_t>(flat_constraints_.size()));
  }
  // Copies: solve_csr reuses the same scratch members.
  const std::vector<std::int32_t> offsets = flat_offsets_, constraints = flat_constraints_;
  solve_csr(capacities, offsets, constraints, rates, unbounded_rate);
}

void MaxMinSolver::solve_csr(std::span<const double> capacities, std::span<const std::int32_t> offsets,
                             std::span<const std::int32_t> constraints, std::vector<double>& rates,
                             double unbounded_rate, std::span<const double> weights) {
  const bool weighted = !weights.empty();
  const auto weight = [&](std::int32_t i) { return weighted ? weights[static_cast<std::size_t>(i)] : 1.0; };
  const std::size_t nc = capacities.size();
  const std::size_t nv = offsets.size() - 1;
  rates.assign(nv, 0.0);
  remaining_.assign(capacities.begin(), capacities.end());
  active_count_.assign(nc, 0);
  active_weight_.assign(nc, 0.0);
  if (users_.size() < nc) users_.resize(nc);
  for (std::size_t c = 0; c < nc; ++c) users_[c].clear();
  fixed_.assign(nv, 0);
  std::size_t unfixed = 0;
  for (std::size_t v = 0; v < nv; ++v) {
    if (offsets[v] == offsets[v + 1]) {
      rates[v] = unbounded_rate;
      fixed_[v] = 1;
      continue;
    }
    ++unfixed;
    for (auto i = offsets[v]; i < offsets[v + 1]; ++i) {
      const auto c = static_cast<std::size_t>(constraints[static_cast<std::size_t>(i)]);
      ++active_count_[c];
      active_weight_[c] += weight(i);
      users_[c].push_back(static_cast<std::int32_t>(v));
    }
  }
  while (unfixed > 0) {
    // Bottleneck: smallest fair share among constraints that still have unfixed users.
    double best_share = std::numeric_limits<double>::infinity();
    std::size_t best = nc;
    for (std::size_t c = 0; c < nc; ++c) {
      if (active_count_[c] == 0) continue;
      const double share = remaining_[c] / (weighted ? active_weight_[c] : active_count_[c]);
      if (share < best_share) {
        best_share = share;
        best = c;
      }
    }
    if (best == nc) break;
    if (best_share < 0) best_share = 0;
    for (std::int32_t v : users_[best]) {
      const auto vi = static_cast<std::size_t>(v);
      if (fixed_[vi]) continue;
      fixed_[vi] = 1;
      rates[vi] = best_share;
      --unfixed;
      for (auto i = offsets[vi]; i < offsets[vi + 1]; ++i) {
        const auto c = static_cast<std::size_t>(constraints[static_cast<std::size_t>(i)]);
        remaining_[c] -= weight(i) * best_share;
        active_weight_[c] -= weight(i);
        --active_count_[c];
      }
    }
  }
}

}  // namespace strata::sim
