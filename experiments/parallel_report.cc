#include "experiments/parallel_report.h"

#include <optional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "experiments/option_ranges.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "models/cost/cost_model.h"
#include "models/zoo/model_ref.h"
#include "sim/trace.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace strata::experiments {
namespace {

namespace par = search::parallel;

// "[[1,8],[16,1],[1,1],[8,1]]": one row per axis (pp, dp, cp, tp), one column per machine level.
search::reduce::Matrix parse_placement(const std::string& text) {
  try {
    const auto j = nlohmann::json::parse(text);
    search::reduce::Matrix m;
    for (const auto& row : j) {
      m.emplace_back();
      for (const auto& x : row) m.back().push_back(x.get<int>());
    }
    if (m.size() != 4) throw std::invalid_argument("need 4 rows");
    return m;
  } catch (const std::exception&) {
    throw ConfigError(
        fmt::format("--placement: expected a JSON matrix with one row per axis (pp, dp, cp, tp) and one "
                    "column per machine "
                    "level, e.g. [[1,8],[16,1],[1,1],[1,8]]; got '{}'",
                    text));
  }
}

std::string indent_lines(std::string text) {
  for (std::size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 3))
    text.insert(i + 1, "  ");
  return text;
}

// The strategy `q` names, its integer options checked as the command line checks them.
par::LlmStrategy make_strategy(const StepQuery& q) {
  par::LlmStrategy st;
  st.tp = static_cast<int>(check_int(q.tp, kDegreeRange, "--tp"));
  st.pp = static_cast<int>(check_int(q.pp, kDegreeRange, "--pp"));
  st.dp = static_cast<int>(check_int(q.dp, kDataParallelRange, "--dp"));
  st.cp = static_cast<int>(check_int(q.cp, kDegreeRange, "--cp"));
  st.ep = static_cast<int>(check_int(q.ep, kDegreeRange, "--ep"));
  st.micro_batch = static_cast<int>(check_int(q.micro_batch, kDegreeRange, "--micro-batch"));
  st.global_batch = check_int(q.global_batch, kGlobalBatchRange, "--global-batch");
  st.sequence_parallel = q.sequence_parallel;
  st.virtual_stages = static_cast<int>(check_int(q.virtual_stages, {1, 1 << 10}, "--virtual-stages"));
  st.schedule = q.virtual_stages > 1 ? par::PipelineSchedule::kInterleaved : par::PipelineSchedule::kOneFOneB;
  if (!q.schedule.empty()) {
    const auto s = par::parse_schedule(q.schedule);
    if (!s)
      throw ConfigError(fmt::format("--schedule: expected gpipe, 1f1b or interleaved, got '{}'", q.schedule));
    st.schedule = *s;
  }
  const auto rc = par::parse_recompute(q.recompute);
  if (!rc)
    throw ConfigError(fmt::format("--recompute: expected none, selective or full, got '{}'", q.recompute));
  st.recompute = *rc;
  st.zero = static_cast<int>(check_int(q.zero, kZeroRange, "--zero"));
  st.dtype = parse_compute_dtype(q.dtype);
  if (!(q.bucket_mb >= 0 && q.bucket_mb <= 1e6))
    throw util::InputError(
        fmt::format("--bucket-mb: expected a number in {}..{}, got '{}'", 0.0, 1e6, q.bucket_mb));
  st.bucket_bytes = q.bucket_mb * 1e6;
  st.overlap_grad_reduce = !q.no_overlap;
  return st;
}

}  // namespace

SearchKind parse_search_kind(const std::string& text) {
  if (text == "exhaustive") return SearchKind::kExhaustive;
  if (text == "mcmc") return SearchKind::kMcmc;
  throw ConfigError(fmt::format("--search: expected exhaustive or mcmc, got '{}'", text));
}

models::zoo::TransformerSpec resolve_transformer(const std::string& model, std::int64_t seq) {
  namespace zoo = models::zoo;
  std::optional<zoo::TransformerSpec> spec;
  try {
    spec = zoo::training_transformer(zoo::resolve_model_ref(model));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(fmt::format("--model: {}", e.what()));
  }
  if (!spec)
    throw ConfigError(
        fmt::format("--model: {}; other models take --search mcmc", zoo::not_a_transformer_message(model)));
  if (seq > 0) {
    spec->seq = check_int(seq, {1, kMaxModelDim}, "--seq");
    if (auto problem = zoo::check_spec(*spec))
      throw ConfigError(fmt::format("--seq: {} ({})", problem->message, problem->key));
  }
  return *spec;
}

hw::DType parse_compute_dtype(const std::string& text) {
  const auto dt = hw::parse_dtype(text);
  if (!dt || (*dt != hw::DType::kBf16 && *dt != hw::DType::kFp16 && *dt != hw::DType::kFp8))
    throw ConfigError(fmt::format("--dtype: expected bf16, fp16 or fp8, got '{}'", text));
  return *dt;
}

StepReport simulate_step(const StepQuery& q) {
  auto topo = load_cluster(q.hw, q.nodes);
  auto spec = resolve_transformer(q.model, q.seq);
  const auto st = make_strategy(q);
  if (auto problems = par::strategy_problems(spec, st, topo); !problems.empty())
    throw ConfigError("the strategy does not fit the model or the system:\n  " + indent_lines(problems));
  const models::CostModel cost(topo.gpu());
  par::LlmStepOptions so;
  so.record_timeline = q.record_timeline;
  if (!q.placement.empty()) {
    so.placement = parse_placement(q.placement);
    try {
      const std::vector<int> axes = {st.pp, st.dp, st.cp, st.tp};
      const std::vector<hw::Level> levels(topo.levels().begin(), topo.levels().end());
      search::reduce::Placement check(levels, axes, *so.placement);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(fmt::format("--placement: {}", e.what()));
    }
  }
  auto r = par::simulate_llm_step(spec, st, topo, cost, so);
  return StepReport{std::move(topo), std::move(spec), std::move(r)};
}

void write_step_trace(const StepReport& report, const std::string& path) {
  util::write_file_atomically(
      path, sim::chrome_trace_json(report.topo, report.result.graph.graph, report.result.sim));
}

nlohmann::json step_result_json(const par::LlmStepResult& r) {
  const auto& b = r.breakdown;
  const auto& m = r.memory;
  nlohmann::json j = {
      {"strategy", r.strategy.describe()},
      {"tp", r.strategy.tp},
      {"pp", r.strategy.pp},
      {"dp", r.strategy.dp},
      {"cp", r.strategy.cp},
      {"ep", r.strategy.ep},
      {"sequence_parallel", r.strategy.sequence_parallel},
      {"micro_batch", r.strategy.micro_batch},
      {"global_batch", r.strategy.global_batch},
      {"micro_batches", r.strategy.micro_batches()},
      {"schedule", std::string(par::schedule_name(r.strategy.schedule))},
      {"virtual_stages", r.strategy.virtual_stages},
      {"recompute", std::string(par::recompute_name(r.strategy.recompute))},
      {"zero", r.strategy.zero},
      {"placement", r.placement_text},
      {"simulated", r.simulated},
      {"fits", r.fits},
      {"peak_memory_bytes", m.total()},
      {"memory_capacity_bytes", r.capacity},
      {"memory",
       {{"stage", m.stage},
        {"weights_bytes", m.weights},
        {"gradients_bytes", m.gradients},
        {"optimizer_bytes", m.optimizer},
        {"activations_bytes", m.activations},
        {"comm_buffers_bytes", m.comm_buffers},
        {"reserve_bytes", m.reserve}}},
      {"model_flops_per_step", r.model_flops},
  };
  if (r.simulated) {
    j["step_seconds"] = r.step_seconds;
    j["mfu"] = r.mfu;
    j["tokens_per_second"] = r.tokens_per_second;
    j["tasks"] = r.tasks;
    j["breakdown_seconds"] = {{"stage", b.stage},
                              {"compute", b.compute},
                              {"recompute", b.recompute},
                              {"tp_comm", b.tp_comm},
                              {"cp_comm", b.cp_comm},
                              {"ep_comm", b.ep_comm},
                              {"pipeline_bubble", b.bubble},
                              {"dp_exposed", b.dp_exposed},
                              {"optimizer", b.optimizer}};
    nlohmann::json iso = nlohmann::json::object();
    for (int c = 0; c < par::kNumCommClasses; ++c)
      iso[std::string(par::comm_class_name(par::CommClass(c)))] = r.isolated[static_cast<std::size_t>(c)];
    j["isolated_comm_classes"] = iso;
  }
  return j;
}

nlohmann::json step_json(const StepReport& report) {
  auto j = step_result_json(report.result);
  j["model"] = report.spec.name;
  j["system"] = report.topo.name();
  j["gpus"] = report.topo.num_gpus();
  return j;
}

SearchReport search_strategies(const SearchQuery& q,
                               const std::function<void(std::size_t, double)>& progress) {
  auto topo = load_cluster(q.hw, q.nodes);
  auto spec = resolve_transformer(q.model, q.seq);
  const models::CostModel cost(topo.gpu());
  par::LlmSearchOptions so;
  so.global_batch = check_int(q.global_batch, kGlobalBatchRange, "--global-batch");
  so.top = static_cast<int>(check_int(q.top, {1, 1000}, "--top"));
  so.space.dtype = parse_compute_dtype(q.dtype);
  so.space.all_placements = !q.megatron_placement_only;
  so.progress = progress;
  auto s = par::search_llm(spec, topo, cost, so);
  return SearchReport{std::move(topo), std::move(spec), std::move(s)};
}

nlohmann::json search_json(const SearchReport& report) {
  const auto& s = report.result;
  nlohmann::json j = {{"model", report.spec.name},
                      {"system", report.topo.name()},
                      {"gpus", report.topo.num_gpus()},
                      {"search_seconds", s.seconds},
                      {"counts",
                       {{"enumerated", s.counts.enumerated},
                        {"invalid", s.counts.invalid},
                        {"out_of_memory", s.counts.out_of_memory},
                        {"plans", s.counts.plans},
                        {"pruned", s.counts.pruned},
                        {"uncontended", s.counts.uncontended},
                        {"simulated", s.counts.simulated}}}};
  j["plans"] = nlohmann::json::array();
  for (const auto& r : s.top) j["plans"].push_back(step_result_json(r));
  j["expert"] = s.expert ? step_result_json(*s.expert) : nlohmann::json();
  j["data_parallel"] = s.data_parallel ? step_result_json(*s.data_parallel) : nlohmann::json();
  return j;
}

}  // namespace strata::experiments
