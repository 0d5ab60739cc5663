// The replay tests' unit of work: a graph of one operator node over fresh inputs of the given shapes and
// element type, its result the graph's output (shared by the CPU, bf16 and CUDA replay tests).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "models/ir/graph.h"

namespace strata::validate::test {

inline models::Graph one_node(std::string_view op, const std::vector<models::Shape>& inputs,
                              models::Attrs attrs = {}, models::DType dtype = models::DType::kF32) {
  models::Graph g("case");
  std::vector<models::ValueId> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(g.add_input("x" + std::to_string(i), models::TensorType{inputs[i], dtype}));
  g.mark_output(g.add(op, ins, std::move(attrs)));
  return g;
}

}  // namespace strata::validate::test
