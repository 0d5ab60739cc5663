#include "experiments/parallel_mcmc_report.h"

#include <stdexcept>

#include <fmt/format.h>

#include "experiments/option_ranges.h"
#include "hw/config_error.h"
#include "models/cost/cost_model.h"
#include "models/zoo/model_ref.h"
#include "util/error.h"

namespace strata::experiments {
namespace {

namespace par = search::parallel;

// The forward graph for `model` with `batch` samples per step (the global batch: plans split it).
models::Graph forward_graph(const std::string& model, std::int64_t batch, std::int64_t seq) {
  namespace zoo = models::zoo;
  try {
    const auto ref = zoo::resolve_model_ref(model);
    if (ref.kind == zoo::ModelRefKind::kOnnx) {
      if (seq > 0) throw ConfigError("--seq applies to zoo and transformer models, not to ONNX files");
      return zoo::build_model_ref(ref);
    }
    zoo::ModelRefOptions options;
    options.batch = batch, options.seq = seq, options.dtype = models::DType::kBF16;
    return zoo::build_model_ref(ref, options);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("--model: {}", e.what()));
  }
}

nlohmann::json report_json(const par::PlanReport& r) {
  return {{"fast_seconds", r.fast_seconds},
          {"step_seconds", r.full_seconds > 0 ? r.full_seconds : r.fast_seconds},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"fits", r.fits},
          {"listing", r.listing}};
}

}  // namespace

McmcReport mcmc_search(const McmcQuery& q, const hw::Topology& topo) {
  // Ranges as the command line checks them; a caller from Python gets the same messages.
  check_int(q.global_batch, kGlobalBatchRange, "--global-batch");
  if (q.seq != 0) check_int(q.seq, {1, kMaxModelDim}, "--seq");
  par::McmcOptions o;
  o.proposals = check_int(q.proposals, {0, std::int64_t{1} << 40}, "--proposals");
  o.seed = static_cast<std::uint64_t>(check_int(q.seed, {0, INT64_MAX}, "--seed"));
  if (!(q.seconds >= 0 && q.seconds <= 86400))
    throw util::InputError(
        fmt::format("--time-limit: expected a number in {}..{}, got '{}'", 0.0, 86400.0, q.seconds));
  o.seconds = q.seconds;
  auto graph = forward_graph(q.model, q.global_batch, q.seq);
  const models::CostModel cost(topo.gpu());
  auto r = par::run_mcmc(graph, topo, cost, o);
  return McmcReport{std::move(graph), std::move(r)};
}

nlohmann::json mcmc_json(const McmcQuery& q, const hw::Topology& topo, const McmcReport& report) {
  const auto& r = report.result;
  nlohmann::json j = {{"model", q.model},
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
  return j;
}

}  // namespace strata::experiments
