// strata parallelize --search mcmc: FlexFlow-style per-operator plans for any model
// (search/parallel/op_search.h).
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/cli_parallel.h"
#include "hw/config_error.h"
#include "models/onnx/onnx.h"
#include "models/zoo/zoo.h"
#include "search/parallel/op_search.h"

namespace strata::cli {
namespace {

namespace par = search::parallel;

// The forward graph for `model` with `batch` samples per step (the global batch: plans split it).
models::Graph forward_graph(const std::string& model, std::int64_t batch, std::int64_t seq) {
  namespace zoo = models::zoo;
  if (model.ends_with(".onnx")) {
    if (seq > 0) throw ConfigError("--seq applies to zoo and transformer models, not to ONNX files");
    return models::import_onnx(model);
  }
  const auto dtype = models::DType::kBF16;
  if (const auto* entry = zoo::find_model(model); entry && !entry->transformer)
    return zoo::build_model(model, {.batch = batch, .seq_len = seq, .dtype = dtype});
  const auto spec = resolve_transformer(model, seq);
  return zoo::build_transformer(spec, {.batch = batch, .seq_len = spec.seq, .dtype = dtype});
}

nlohmann::json report_json(const par::PlanReport& r) {
  return {{"fast_seconds", r.fast_seconds},
          {"step_seconds", r.full_seconds > 0 ? r.full_seconds : r.fast_seconds},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"fits", r.fits},
          {"listing", r.listing}};
}

}  // namespace

void run_mcmc_search(const std::string& model, const hw::Topology& topo, std::int64_t global_batch,
                     std::int64_t seq, const McmcCliOptions& mcmc, const std::string& format) {
  const auto graph = forward_graph(model, global_batch, seq);
  const models::CostModel cost(topo.gpu());
  par::McmcOptions o;
  o.proposals = mcmc.proposals;
  o.seed = static_cast<std::uint64_t>(mcmc.seed);
  o.seconds = mcmc.seconds;
  const auto r = par::run_mcmc(graph, topo, cost, o);
  if (format == "json") {
    nlohmann::json j = {{"model", model},
                        {"system", topo.name()},
                        {"gpus", topo.num_gpus()},
                        {"proposals", r.proposals},
                        {"accepted", r.accepted},
                        {"chains", r.chains},
                        {"search_seconds", r.wall_seconds},
                        {"found", r.found},
                        {"best", report_json(r.best)},
                        {"data_parallel", report_json(r.data_parallel)},
                        {"expert", report_json(r.expert)}};
    j["history"] = nlohmann::json::array();
    for (const auto& h : r.history)
      j["history"].push_back({{"chain", h.chain},
                              {"proposals", h.proposals},
                              {"wall_seconds", h.wall_seconds},
                              {"best_seconds", h.best_seconds}});
    std::cout << j.dump(2) << "\n";
    return;
  }
  auto line = [](const char* name, const par::PlanReport& p) {
    std::cout << fmt::format("{:<14} step {:>10.3f} ms (fast model {:.3f} ms)  peak memory {:.2f} GB  {}\n",
                             name, (p.full_seconds > 0 ? p.full_seconds : p.fast_seconds) * 1e3,
                             p.fast_seconds * 1e3, static_cast<double>(p.peak_memory_bytes) / 1e9,
                             p.fits ? "fits" : "OUT OF MEMORY");
  };
  std::cout << fmt::format(
      "model {} ({} operators) on {} GPUs: {} chains, {} proposals ({} accepted) in {:.2f} s\n", model,
      graph.nodes().size(), topo.num_gpus(), r.chains, r.proposals, r.accepted, r.wall_seconds);
  line("best found", r.best);
  line("data parallel", r.data_parallel);
  line("expert plan", r.expert);
  std::cout << "best plan over time (per chain: proposals, wall s, best ms):\n";
  for (const auto& h : r.history)
    std::cout << fmt::format("  chain {} {:>8} {:>8.2f} {:>10.3f}\n", h.chain, h.proposals, h.wall_seconds,
                             h.best_seconds * 1e3);
  std::cout << "best plan:\n" << r.best.listing;
}

}  // namespace strata::cli
