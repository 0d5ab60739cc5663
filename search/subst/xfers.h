// Hand-written graph transformations applied by the optimizer alongside the rules, as TASO's optimizer adds
// 18 hand-written GraphXfers to its rule file (src/core/substitution.cc). Each one rewrites IR nodes the rule
// language cannot express — convolutions with a bias input, grouped convolutions, operand layouts of matmul —
// and is exact algebra on the IR's own operators, so the reference executor checks it (tests/subst/
// optimizer_test.cc runs every kind on random data). None of them is proved by the Z3 verifier: the rule
// vocabulary has no bias, group-merge or operand-layout operator (docs/subst.md, "Hand-written
// transformations").
//
//   fuse_conv_batchnorm    conv2d(x, w[, b]) -> batchnorm(scale, beta, mean, var)
//                            => conv2d(x, w * s, (b - mean) * s + beta), s = scale / sqrt(var + eps) per
//                            output channel (inference; weight-only, folded)
//   fuse_conv_relu         conv2d(x, w[, b]) -> relu  =>  conv2d(x, w[, b], activation=relu)
//   merge_convs            conv2d(x, wa[, ba]), conv2d(x, wb[, bb]) (same x, stride, activation; kernels
//                          centred in the larger one)
//                            => conv2d(x, concat(enlarge(wa), enlarge(wb))[, concat(ba, bb)]) then a channel
//                            split -- or, when the two results only feed concat(axis 1) in this order, that
//                            concat's value directly (TASO's enlarge-and-merge-convs)
//   merge_gconv(k)         conv2d(x, w, groups=G)  =>  conv2d(x, merge_gconv(w, G, k), groups=G/k)
//                          (TASO's merge-group-convs: k groups share one block-diagonal GEMM)
//   matmul_operand_layout  matmul(transpose(a), b)  =>  matmul(a, b, trans_a toggled) (and for b): the
//                          operand is read column-major instead of being transposed by a kernel
//
// A replacement that shape inference rejects is dropped without exceptions (Graph::try_add_node through the
// Emitter in xfers.cc; docs/subst.md, "Rejected candidates").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/cost/cost_model.h"
#include "models/ir/graph.h"
#include "search/subst/optimizer.h"

namespace strata::search::subst {

// The names of the hand-written transformations, in the order they are tried.
std::vector<std::string> xfer_names();

// The transformations with these names (all when empty); throws std::invalid_argument naming an unknown one
// and the known ones.
std::vector<GraphXfer> make_xfers(const std::vector<std::string>& names = {});

}  // namespace strata::search::subst
