// The optimizers' equality check, declared once: does a rewritten graph compute the same function as its
// input? Both graphs run on the reference executor (models/exec/executor.h, double precision) with the same
// pseudo-random sources (by value name and seed), one after the other, and their outputs are compared in
// order. Each run holds only its live values: a weight is materialized when a node first reads it and freed
// after its last reader, so the check's memory is the largest live set, not all weights (BERT-base's 110 M
// parameters are 880 MB in double). Used by `strata optimize`, the subst-optimizers experiment and the tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/ir/graph.h"

namespace strata::search::subst {

struct OutputCheckOptions {
  std::uint64_t seed = 1;
  // Largest accepted |expected - actual| / max(1, max |expected|), over all outputs.
  double tolerance = 1e-6;
};

// The verdict. A non-finite element (NaN or infinity) in either graph's outputs fails the check: NaN compares
// false with everything, so a maximum over differences would silently skip it.
struct OutputCheck {
  double max_abs = 0;        // largest |expected - actual| over all outputs (+inf when one is not finite)
  double max_output = 0;     // largest |expected|, the scale of the comparison
  double max_rel_error = 0;  // max_abs / max(1, max_output)
  double tolerance = 0;
  std::int64_t peak_live_bytes = 0;  // the larger of the two runs' peaks (models::ExecStats); 0 if not run
  std::string failure;               // empty when the check passes; otherwise what failed (first failure)
  [[nodiscard]] bool pass() const { return failure.empty(); }
  // "pass: max relative error 3.1e-16 <= tolerance 1e-06 (max |output| 2.5; executor peak 187.5 MiB)" or
  // "FAIL: output 0 element 5 is NaN ...".
  [[nodiscard]] std::string verdict() const;
};

// Compares output tensors (expected[i] against actual[i]); sizes must agree.
OutputCheck compare_outputs(std::span<const std::vector<double>> expected,
                            std::span<const std::vector<double>> actual, double tolerance);

// Runs both graphs and compares their outputs in order. A different number of outputs or a changed output
// size is a failed check, not an exception.
OutputCheck check_same_function(const models::Graph& expected, const models::Graph& actual,
                                const OutputCheckOptions& options = {});

}  // namespace strata::search::subst
