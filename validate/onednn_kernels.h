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

// A compiled node. bind() gives it the node's inputs and outputs, each a dense f32 buffer of the node's value
// shapes (row-major, as the graph stores them), and packs weights into the layout the kernel wants
// (convolutions: oneDNN's blocked formats; an inference weight is packed once, as frameworks do); run()
// computes from the bound inputs into the bound outputs, as often as asked. Runs on one process-wide oneDNN
// CPU engine and stream, so one thread at a time.
class OneDnnNode {
 public:
  virtual ~OneDnnNode() = default;
  virtual void bind(std::span<const float* const> in, std::span<float* const> out) = 0;
  virtual void run() = 0;
  // oneDNN's implementation name ("brg:avx512_core", "jit:avx2", "gemm:jit", "ref:any", ...).
  virtual std::string implementation() const = 0;
};

struct OneDnnLowering {
  std::unique_ptr<OneDnnNode> kernel;  // null: not lowered
  std::string why_not;                 // when null: why
};
OneDnnLowering lower_to_onednn(const models::Graph& g, const models::Node& n);

}  // namespace strata::validate::detail
