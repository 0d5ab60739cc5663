// strata parallelize --search mcmc: FlexFlow-style per-operator plans for any model
// (search/parallel/op_search.h).
#include <iostream>

#include <fmt/format.h>

#include "experiments/cli_parallel.h"
#include "experiments/parallel_mcmc_report.h"
#include "search/parallel/op_search.h"

namespace strata::cli {

namespace par = search::parallel;

void run_mcmc_search(const std::string& model, const hw::Topology& topo, std::int64_t global_batch,
                     std::int64_t seq, const McmcCliOptions& mcmc, const std::string& format) {
  const experiments::McmcQuery q{model, global_batch, seq, mcmc.proposals, mcmc.seed, mcmc.seconds};
  const auto report = experiments::mcmc_search(q, topo);
  const auto& graph = report.graph;
  const auto& r = report.result;
  if (format == "json") {
    std::cout << experiments::mcmc_json(q, topo, report).dump(2) << "\n";
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
