// One models/ node lowered to oneDNN primitives (f32 or bf16, the graph's dense row-major layouts). Internal
// to validate/cpu_replay.cc; compiled only when CMake finds oneDNN (STRATA_HAVE_ONEDNN). The lowerings are
// one table in onednn_kernels.cc, keyed by operator name; an operator or configuration missing there (causal
// softmax, a left operand that broadcasts, ...) is reported with the reason, and the caller runs the
// reference executor's kernel for that node instead.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "models/ir/graph.h"

namespace strata::validate::detail {

// A compiled node. bind() gives it the node's inputs and outputs, each a dense buffer of the node's value
// shapes (row-major, as the graph stores them) in the node's element type (f32, or bf16 as 16-bit words:
// validate/replay_buffer.h), and packs weights into the layout the kernel wants
// (convolutions: oneDNN's blocked formats; an inference weight is packed once, as frameworks do); run()
// computes from the bound inputs into the bound outputs, as often as asked. Runs on one process-wide oneDNN
// CPU engine and stream, so one thread at a time.
class OneDnnNode {
 public:
  virtual ~OneDnnNode() = default;
  virtual void bind(std::span<const void* const> in, std::span<void* const> out) = 0;
  virtual void run() = 0;
  // oneDNN's implementation name ("brg:avx512_core", "jit:avx2", "gemm:jit", "ref:any", ...).
  virtual std::string implementation() const = 0;
};

struct OneDnnLowering {
  std::unique_ptr<OneDnnNode> kernel;  // null: not lowered
  std::string why_not;                 // when null: why
};
// Every float input and output of `n` must have one element type, f32 or bf16 (else not lowered). A bf16
// node that has a lowering on a CPU where oneDNN runs bf16 only in its reference implementation
// (bf16_matmul_implementation) throws models::GraphError naming the node, its operator and the CPU feature.
OneDnnLowering lower_to_onednn(const models::Graph& g, const models::Node& n);

// The implementation oneDNN picks for a small bf16 matmul on this CPU ("brg:avx512_core_amx",
// "ref:any", ...), or "" when it has none: how the replay (and strata validate host) tell whether this CPU
// runs bf16 (AVX512_BF16, or AVX-512 on which oneDNN emulates it) or only oneDNN's reference loops.
std::string bf16_matmul_implementation();

}  // namespace strata::validate::detail
