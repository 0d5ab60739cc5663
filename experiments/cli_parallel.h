// Shared by the parallelization commands (cli_parallel.cc: sim step, parallelize --search exhaustive;
// cli_parallel_mcmc.cc: parallelize --search mcmc).
#pragma once
#include <cstdint>
#include <string>

#include "hw/topology.h"
#include "models/zoo/transformer_spec.h"

namespace strata::cli {

inline constexpr const char* kModelHelp =
    "Model: a zoo name (strata model list), transformer:layers=L,hidden=H,heads=A,vocab=V,seq=S[,ffn=..,"
    "kv_heads=..,experts=..,top_k=..,act=gelu|swiglu,norm=layernorm|rmsnorm], a model YAML "
    "(configs/models/), "
    "or an .onnx file (--search mcmc only)";

// strata parallelize --search mcmc.
struct McmcCliOptions {
  std::int64_t proposals = 20000;  // per chain
  std::int64_t seed = 1;
  double seconds = 0;  // wall-clock budget per chain; 0: none
};
void run_mcmc_search(const std::string& model, const hw::Topology& topo, std::int64_t global_batch,
                     std::int64_t seq, const McmcCliOptions& mcmc, const std::string& format);

}  // namespace strata::cli
