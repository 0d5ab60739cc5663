// The parse step of the `parallel-sweep` experiment kind: every field checked, with file, line and field in
// each message, before anything is simulated (parallel_sweep.h).
#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "experiments/parallel_sweep.h"
#include "hw/limits.h"
#include "models/zoo/model_ref.h"
#include "models/zoo/zoo.h"
#include "util/error.h"

namespace strata::experiments::parallel_sweep {
namespace {

namespace par = search::parallel;
namespace zoo = models::zoo;

constexpr long long kMaxBatch = 1LL << 30;  // the CLI's --global-batch bound (experiments/cli_parallel.cc)
constexpr int kMaxDegree = 1 << 16;

// The model: a decoder of the zoo, transformer:key=value,..., a mapping of transformer keys or a model YAML
// relative to the experiment file (ExperimentFile::model_reference). Zoo decoders are simulated with fused
// attention, as Megatron-LM trains them (the same rule as `strata parallelize --model`, docs/parallel.md).
zoo::TransformerSpec read_model(const ExperimentFile& file, const YamlReader& field) {
  const std::string ref = file.model_reference(field);  // names file, line and field if a file is missing
  const std::string text = field.is_map() ? ref : field.as_string();
  const bool yaml = text.ends_with(".yaml") || text.ends_with(".yml");
  std::optional<zoo::TransformerSpec> spec;
  try {
    spec = zoo::training_transformer(zoo::resolve_model_ref(ref));
  } catch (const ConfigError& e) {
    if (!yaml) throw;
    throw field.error(fmt::format("in the model description it names: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw field.error(e.what());
  }
  if (!spec) throw field.error(zoo::not_a_transformer_message(text));
  return *spec;
}

hw::DType read_dtype(const YamlReader& field) {
  const auto dt = hw::parse_dtype(field.as_string());
  if (!dt || (*dt != hw::DType::kBf16 && *dt != hw::DType::kFp16 && *dt != hw::DType::kFp8))
    throw field.error(fmt::format("expected bf16, fp16 or fp8, got '{}'", field.as_string()));
  return *dt;
}

par::Recompute read_recompute(const YamlReader& field) {
  const auto r = par::parse_recompute(field.as_string());
  if (!r) throw field.error(fmt::format("expected none, selective or full, got '{}'", field.as_string()));
  return *r;
}

// A non-empty list without repeats, each element read by `read`.
template <class T, class Read>
std::vector<T> read_list(const YamlReader& node, Read read) {
  node.expect_sequence();
  if (node.size() == 0) throw node.error("expected a non-empty list");
  std::vector<T> out;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const auto item = node.at(i);
    T value = read(item);
    if (std::find(out.begin(), out.end(), value) != out.end())
      throw item.error(fmt::format("'{}' is listed twice", item.as_string()));
    out.push_back(value);
  }
  return out;
}

void read_points(const ExperimentFile& file, Config& x) {
  const YamlReader& root = file.root();
  const YamlReader hw = root.at("hw");
  x.hw_text = hw.as_string();
  const auto nodes = read_list<int>(
      root.at("nodes"), [](const YamlReader& n) { return n.as_int32_in(1, hw::limits::kMaxNodes); });
  for (std::size_t i = 1; i < nodes.size(); ++i)
    if (nodes[i] <= nodes[i - 1])
      throw root.at("nodes").at(i).error(
          fmt::format("expected node counts in increasing order ({} follows {})", nodes[i], nodes[i - 1]));
  const YamlReader batch = root.at("global_batch");
  std::vector<std::int64_t> batches;
  if (batch.is_sequence()) {
    if (batch.size() != nodes.size())
      throw batch.error(
          fmt::format("expected one global batch per node count ({} values), or one number", nodes.size()));
    for (std::size_t i = 0; i < batch.size(); ++i) batches.push_back(batch.at(i).as_int_in(1, kMaxBatch));
  } else {
    batches.assign(nodes.size(), batch.as_int_in(1, kMaxBatch));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i)
    x.points.push_back({nodes[i], batches[i], file.load_system(hw, nodes[i])});
}

void read_search_space(const YamlReader& node, par::LlmSearchSpace& s) {
  node.expect_map({"micro_batches", "recompute", "zero", "sequence_parallel", "max_virtual_stages",
                   "context_parallel", "all_placements"});
  if (auto f = node.maybe("micro_batches"))
    s.micro_batches = read_list<int>(*f, [](const YamlReader& v) { return v.as_int32_in(1, kMaxDegree); });
  if (auto f = node.maybe("recompute")) s.recompute = read_list<par::Recompute>(*f, read_recompute);
  if (auto f = node.maybe("zero"))
    s.zero = read_list<int>(*f, [](const YamlReader& v) { return v.as_int32_in(0, 3); });
  if (auto f = node.maybe("sequence_parallel"))
    s.sequence_parallel = read_list<bool>(*f, [](const YamlReader& v) { return v.as_bool(); });
  if (auto f = node.maybe("max_virtual_stages")) s.max_virtual_stages = f->as_int32_in(1, 1024);
  if (auto f = node.maybe("context_parallel")) s.context_parallel = f->as_bool();
  if (auto f = node.maybe("all_placements")) s.all_placements = f->as_bool();
}

NamedStrategy read_strategy(const YamlReader& node) {
  node.expect_map({"name", "tp", "pp", "cp", "ep", "micro_batch", "recompute", "sequence_parallel", "zero",
                   "schedule", "virtual_stages", "bucket_mb", "overlap_grad_reduce"});
  NamedStrategy n;
  const YamlReader name = node.at("name");
  n.name = name.as_string();
  const bool plain = !n.name.empty() && std::all_of(n.name.begin(), n.name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '+';
  });
  if (!plain) throw name.error("expected a name of letters, digits, '-', '_', '.' or '+' (it labels rows)");
  auto& s = n.strategy;
  auto degree = [&](std::string_view key, int& value) {
    if (auto f = node.maybe(key)) value = f->as_int32_in(1, kMaxDegree);
  };
  degree("tp", s.tp);
  degree("pp", s.pp);
  degree("cp", s.cp);
  degree("ep", s.ep);
  degree("micro_batch", s.micro_batch);
  degree("virtual_stages", s.virtual_stages);
  if (auto f = node.maybe("recompute")) s.recompute = read_recompute(*f);
  if (auto f = node.maybe("sequence_parallel")) s.sequence_parallel = f->as_bool();
  if (auto f = node.maybe("zero")) s.zero = f->as_int32_in(0, 3);
  // As `strata sim step`: more than one virtual stage means the interleaved schedule unless one is named.
  s.schedule = s.virtual_stages > 1 ? par::PipelineSchedule::kInterleaved : par::PipelineSchedule::kOneFOneB;
  if (auto f = node.maybe("schedule")) {
    const auto sched = par::parse_schedule(f->as_string());
    if (!sched) throw f->error(fmt::format("expected gpipe, 1f1b or interleaved, got '{}'", f->as_string()));
    s.schedule = *sched;
  }
  if (auto f = node.maybe("bucket_mb")) {
    const double mb = f->as_double();
    if (mb < 0 || mb > 1e6) throw f->error("expected 0 to 1000000 MB (0: Megatron-core's default)");
    s.bucket_bytes = mb * 1e6;
  }
  if (auto f = node.maybe("overlap_grad_reduce")) s.overlap_grad_reduce = f->as_bool();
  return n;
}

void read_families(const ExperimentFile& file, Config& x) {
  const YamlReader& root = file.root();
  std::set<std::string> names;
  if (auto f = root.maybe("families")) {
    f->expect_sequence();
    for (std::size_t i = 0; i < f->size(); ++i) {
      const auto item = f->at(i);
      const std::string family = item.as_string();
      if (family != kBest && family != kMegatron && family != kDataParallel)
        throw item.error(
            fmt::format("unknown family '{}' (expected one of: {}; explicit strategies go "
                        "under `strategies:`)",
                        family, kBuiltinFamilies));
      if (!names.insert(family).second) throw item.error(fmt::format("'{}' is listed twice", family));
      x.builtin.push_back(family);
    }
  } else {
    x.builtin = {std::string(kBest), std::string(kMegatron), std::string(kDataParallel)};
    names.insert(x.builtin.begin(), x.builtin.end());
  }
  if (auto list = root.maybe("strategies")) {
    list->expect_sequence();
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto item = list->at(i);
      auto named = read_strategy(item);
      named.strategy.dtype = x.dtype;
      if (named.name == kBest || named.name == kMegatron || named.name == kDataParallel ||
          !names.insert(named.name).second)
        throw item.at("name").error(fmt::format("the family name '{}' is taken", named.name));
      // A strategy that runs at no size of the sweep is a mistake in the file, not a result.
      std::string why, first_why;
      bool applies = false;
      for (const auto& p : x.points) {
        applies = applies || strategy_at(x, named, p, why).has_value();
        if (first_why.empty()) first_why = fmt::format("at {} nodes: {}", p.nodes, why);
      }
      if (!applies)
        throw item.error(
            fmt::format("strategy '{}' runs at none of the node counts ({})", named.name, first_why));
      x.strategies.push_back(std::move(named));
    }
  }
  if (x.builtin.empty() && x.strategies.empty())
    throw(root.maybe("families") ? *root.maybe("families") : root)
        .error("expected at least one family (best, megatron, data-parallel or an explicit strategy)");
}

}  // namespace

bool Config::wants(std::string_view family) const {
  return std::find(builtin.begin(), builtin.end(), family) != builtin.end();
}

std::optional<par::LlmStrategy> strategy_at(const Config& config, const NamedStrategy& named,
                                            const Point& point, std::string& why) {
  par::LlmStrategy s = named.strategy;
  const int gpus = point.topology.num_gpus();
  const long long split = static_cast<long long>(s.tp) * s.pp * s.cp;
  if (gpus % split != 0) {
    why = fmt::format("tp x pp x cp = {} does not divide the {} GPUs", split, gpus);
    return std::nullopt;
  }
  s.dp = static_cast<int>(gpus / split);
  s.global_batch = point.global_batch;
  s.dtype = config.dtype;
  why = one_line(par::strategy_problems(config.spec, s, point.topology));
  if (!why.empty()) return std::nullopt;
  return s;
}

std::string one_line(const std::string& problems) {
  std::string out;
  for (char c : problems) out += c == '\n' ? std::string("; ") : std::string(1, c);
  return out;
}

Config parse(const ExperimentFile& file) {
  file.expect_keys(
      {"model", "hw", "nodes", "global_batch", "seq", "dtype", "families", "strategies", "search"});
  const YamlReader& root = file.root();
  Config x;
  x.name = file.name();
  x.description = file.description();
  const YamlReader model = root.at("model");
  x.spec = read_model(file, model);
  x.model_text = model.is_map() ? zoo::format_transformer_spec(x.spec) : model.as_string();
  if (auto seq = root.maybe("seq")) {
    x.spec.seq = seq->as_int_in(1, 1LL << 20);  // the CLI's --seq bound
    if (auto problem = zoo::check_spec(x.spec))
      throw seq->error(fmt::format("{} ({})", problem->message, problem->key));
  }
  if (auto d = root.maybe("dtype")) x.dtype = read_dtype(*d);
  x.space.dtype = x.dtype;
  if (auto s = root.maybe("search")) read_search_space(*s, x.space);
  read_points(file, x);
  read_families(file, x);
  return x;
}

}  // namespace strata::experiments::parallel_sweep
