#include "experiments/optimize_report.h"

#include <stdexcept>

#include <fmt/format.h>

#include "experiments/option_ranges.h"
#include "hw/system_loader.h"
#include "models/cost/cost_params.h"
#include "models/onnx/onnx.h"
#include "models/zoo/model_ref.h"
#include "search/subst/weight_folding.h"
#include "search/subst/xfers.h"
#include "util/error.h"
#include "util/parse.h"
#include "util/path.h"

namespace strata::experiments {

namespace ss = search::subst;

OptimizeSetup prepare_optimize(const OptimizeQuery& q) {
  ss::OptimizerOptions opt;
  // Ranges as the command line checks them; a caller from Python gets the same messages.
  if (!(q.alpha >= 1.0 && q.alpha <= 10.0))
    throw util::InputError(fmt::format("--alpha: expected a number in {}..{}, got '{}'", 1.0, 10.0, q.alpha));
  opt.alpha = q.alpha;
  opt.budget = static_cast<int>(check_int(q.budget, {1, 100000000}, "--budget"));
  if (!(q.min_gain_percent >= 0 && q.min_gain_percent <= 100))
    throw util::InputError(
        fmt::format("--min-gain: expected a number in {}..{}, got '{}'", 0, 100, q.min_gain_percent));
  opt.min_gain = q.min_gain_percent / 100;
  auto topo = hw::load_system(q.hw);
  models::zoo::ModelRefOptions model_options;
  model_options.batch = check_int(q.batch, {0, kMaxModelDim}, "--batch");
  model_options.seq = check_int(q.seq, {0, kMaxModelDim}, "--seq");
  auto g = models::zoo::build_model_ref(models::zoo::resolve_model_ref(q.model), model_options);
  auto rules = ss::load_rules(q.rules.empty() ? util::find_data_file(kDefaultRules).string() : q.rules,
                              ss::RuleFileFormat::kAutomatic, ss::TasoShapes::kUnknown);
  models::CostModel cost(topo.gpu(), models::roofline_params_for(q.cost_params, topo.gpu().name));
  if (q.xfers != "none") {
    std::vector<std::string> names;
    if (q.xfers != "all") names = util::split_list(q.xfers, ',', "--xfers");
    try {
      opt.xfers = ss::make_xfers(names);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--xfers: {}", e.what()));
    }
  }
  return OptimizeSetup{std::move(topo), std::move(g), std::move(rules), std::move(cost), std::move(opt)};
}

double min_gain_fraction(const YamlReader& node) {
  const double percent = node.as_double();
  if (!(percent >= 0 && percent <= 100)) throw node.error("expected a percentage in 0..100");
  return percent / 100;
}

void export_optimized(const models::Graph& graph, const std::string& path) {
  models::export_onnx(ss::fold_weight_only(graph), path);
}

}  // namespace strata::experiments
