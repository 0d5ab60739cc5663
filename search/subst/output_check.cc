#include "search/subst/output_check.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "models/exec/executor.h"

namespace strata::search::subst {

std::string OutputCheck::verdict() const {
  if (pass())
    return fmt::format(
        "pass: max relative error {:.3g} <= tolerance {:.3g} (max |output| {:.3g}; executor peak {:.1f} MiB)",
        max_rel_error, tolerance, max_output, static_cast<double>(peak_live_bytes) / (1 << 20));
  return fmt::format("FAIL: {}; max relative error {:.3g}, tolerance {:.3g}", failure, max_rel_error,
                     tolerance);
}

OutputCheck compare_outputs(std::span<const std::vector<double>> expected,
                            std::span<const std::vector<double>> actual, double tolerance) {
  OutputCheck c;
  c.tolerance = tolerance;
  if (expected.size() != actual.size()) {
    c.failure = fmt::format("{} outputs expected, {} produced", expected.size(), actual.size());
    c.max_abs = c.max_rel_error = std::numeric_limits<double>::infinity();
    return c;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& x = expected[i];
    const auto& y = actual[i];
    if (x.size() != y.size()) {
      if (c.failure.empty())
        c.failure = fmt::format("output {} has {} elements, expected {}", i, y.size(), x.size());
      c.max_abs = std::numeric_limits<double>::infinity();
      continue;
    }
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (!std::isfinite(x[k]) || !std::isfinite(y[k])) {
        if (c.failure.empty())
          c.failure = fmt::format("output {} element {} is {} (expected {})", i, k, y[k], x[k]);
        c.max_abs = std::numeric_limits<double>::infinity();
        continue;
      }
      c.max_abs = std::max(c.max_abs, std::abs(x[k] - y[k]));
      c.max_output = std::max(c.max_output, std::abs(x[k]));
    }
  }
  c.max_rel_error = c.max_abs / std::max(1.0, c.max_output);
  if (c.failure.empty() && !(c.max_rel_error <= tolerance))
    c.failure = fmt::format("outputs differ by {:.3g} (max |output| {:.3g})", c.max_abs, c.max_output);
  return c;
}

namespace {

// The graph's outputs in order; values are materialized at first use and released as soon as they are dead.
std::vector<std::vector<double>> run_outputs(const models::Graph& g, std::uint64_t seed,
                                             std::int64_t& peak_live_bytes) {
  models::ExecOptions eo;
  eo.seed = seed;
  eo.keep_intermediates = false;
  models::ExecStats stats;
  auto values = models::execute<double>(g, {}, eo, stats);
  peak_live_bytes = std::max(peak_live_bytes, stats.peak_live_bytes);
  std::vector<std::vector<double>> out;
  out.reserve(g.outputs().size());
  for (auto v : g.outputs()) out.push_back(values[static_cast<std::size_t>(v)]);  // an output may repeat
  return out;
}

}  // namespace

OutputCheck check_same_function(const models::Graph& expected, const models::Graph& actual,
                                const OutputCheckOptions& options) {
  std::int64_t peak = 0;
  const auto x = run_outputs(expected, options.seed, peak);
  const auto y = run_outputs(actual, options.seed, peak);
  auto c = compare_outputs(x, y, options.tolerance);
  c.peak_live_bytes = peak;
  return c;
}

}  // namespace strata::search::subst
