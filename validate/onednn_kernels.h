// One models/ node lowered to oneDNN primitives (f32, the graph's dense row-major layouts). Internal to
// validate/cpu_replay.cc; compiled only when CMake finds oneDNN (STRATA_HAVE_ONEDNN). The lowerings are one
// table in onednn_kernels.cc, keyed by operator name; an operator or configuration missing there (causal
// softmax, a left operand that broadcasts, ...) is reported with the reason, and the caller runs the
// reference executor's kernel for that node instead.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "models/ir/graph.h"

namespace strata::validate::detail {

// A compiled node: run() reads the inputs and writes the outputs, each a dense f32 buffer of the node's
// value shapes (row-major, as the graph stores them). Runs on one process-wide oneDNN CPU engine and stream,
// so one thread at a time.
class OneDnnNode {
 public:
  virtual ~OneDnnNode() = default;
  virtual void run(std::span<const float* const> in, std::span<float* const> out) = 0;
  // oneDNN's implementation name ("brg:avx512_core", "jit:avx2", "gemm:jit", "ref:any", ...).
  virtual std::string implementation() const = 0;
};

struct OneDnnLowering {
  std::unique_ptr<OneDnnNode> kernel;  // null: not lowered
  std::string why_not;                 // when null: why
};
OneDnnLowering lower_to_onednn(const models::Graph& g, const models::Node& n);

}  // namespace strata::validate::detail
