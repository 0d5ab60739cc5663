// Shared fixtures of the per-operator plan tests: small graphs and topologies.
#pragma once

#include <string>

#include "hw/system_loader.h"
#include "models/ir/graph.h"

namespace strata::search::parallel::testing {

// A single node of `gpus` PCIe-attached A100s (configs/hw/pcie-4gpu.yaml with another GPU count).
inline hw::Topology pcie_system(int gpus) {
  const std::string yaml =
      "name: pcie-test\ngpu: a100-pcie-40gb\nnodes: 1\nnode:\n  gpus: " + std::to_string(gpus) +
      "\n  fabric: {wiring: none}\n  host: {cpus: 1, pcie_switches: 2, pcie: pcie4}\n"
      "  nics: {count: 1, link: roce-100g}\nnetwork: {wiring: fat-tree}\n";
  return hw::load_system_from_string(yaml, "pcie-test");
}

// x[b,k] -> matmul w1[k,h] -> relu -> matmul w2[h,o] (-> relu when `tail`).
inline models::Graph mlp(std::int64_t b, std::int64_t k, std::int64_t h, std::int64_t o, bool tail = false) {
  models::Graph g("mlp");
  const auto x = g.add_input("x", {{b, k}, models::DType::kF32});
  const auto w1 = g.add_param("w1", {{k, h}, models::DType::kF32});
  const auto w2 = g.add_param("w2", {{h, o}, models::DType::kF32});
  auto y =
      g.add("matmul", {g.add("relu", {g.add("matmul", {x, w1}, {}, "mm1")}, {}, "relu1"), w2}, {}, "mm2");
  if (tail) y = g.add("relu", {y}, {}, "relu2");
  g.mark_output(y);
  return g;
}

}  // namespace strata::search::parallel::testing
