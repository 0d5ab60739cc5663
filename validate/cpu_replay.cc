#include "validate/cpu_replay.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "util/timer.h"
#include "validate/replay_buffer.h"
#include "validate/stats.h"

#if STRATA_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include "validate/onednn_kernels.h"
#endif

namespace strata::validate {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;

std::string omp_threads_note() {
  const char* omp = std::getenv("OMP_NUM_THREADS");
  return omp ? fmt::format("OMP_NUM_THREADS={}", omp)
             : fmt::format("all {} hardware threads (OMP_NUM_THREADS unset)",
                           std::thread::hardware_concurrency());
}

std::string_view cpu_backend_name(CpuBackend b) {
  switch (b) {
    case CpuBackend::kOneDnn:
      return "onednn";
    case CpuBackend::kCuda:
      return "cuda";
    case CpuBackend::kReference:
      break;
  }
  return "reference";
}

void check_replay_types(const Graph& g, ReplayTypes types) {
  const bool bf16 = types == ReplayTypes::kF32AndBf16;
  for (const auto& v : g.values())
    if (models::is_float(v.type.dtype) && v.type.dtype != models::DType::kF32 &&
        !(bf16 && v.type.dtype == models::DType::kBF16))
      throw models::GraphError(
          bf16
              ? fmt::format("the CPU replay runs f32 and bf16 graphs; value '{}' is {} (build the model with "
                            "--dtype f32 or bf16)",
                            v.name, models::dtype_name(v.type.dtype))
              : fmt::format("the GPU replay runs f32 graphs; value '{}' is {} (build the model with "
                            "--dtype f32; bf16 replays on the CPU, --device cpu)",
                            v.name, models::dtype_name(v.type.dtype)));
}

namespace {
bool bf16_forced_unsupported = false;
}  // namespace

ScopedBf16Unsupported::ScopedBf16Unsupported() : previous_(bf16_forced_unsupported) {
  bf16_forced_unsupported = true;
}
ScopedBf16Unsupported::~ScopedBf16Unsupported() {
  bf16_forced_unsupported = previous_;
}

// A source's data as the reference executor materializes it (feed, literal data, or pseudo-random values),
// rounded to f32.
std::vector<float> replay_source_values(const Graph& g, ValueId id, const models::Feeds<double>& feeds,
                                        const models::ExecOptions& options) {
  const auto& v = g.value(id);
  std::vector<double> d;
  if (auto it = feeds.find(id); it != feeds.end()) {
    if (static_cast<std::int64_t>(it->second.size()) != v.type.numel())
      throw models::GraphError(fmt::format("feed for '{}' has {} elements, its type {} needs {}", v.name,
                                           it->second.size(), models::type_str(v.type), v.type.numel()));
    d = it->second;
  } else if (v.data) {
    d = *v.data;
  } else if (options.randomize_missing) {
    d = models::random_values<double>(v.type.numel(), options.seed, v.name, !models::is_float(v.type.dtype),
                                      options.random_index_bound);
  } else {
    throw models::GraphError(fmt::format("no value fed for {} '{}' ({})", models::value_kind_name(v.kind),
                                         v.name, models::type_str(v.type)));
  }
  return {d.begin(), d.end()};
}

int CpuReplay::onednn_nodes() const {
  return static_cast<int>(std::count_if(
      nodes.begin(), nodes.end(), [](const NodeBackend& n) { return n.backend == CpuBackend::kOneDnn; }));
}

#if STRATA_HAVE_ONEDNN

bool onednn_available() {
  return true;
}

std::string onednn_description() {
  const auto* v = dnnl::version();
  const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "OpenMP"
                        : v->cpu_runtime == DNNL_RUNTIME_TBB ? "TBB"
                        : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "sequential"
                                                             : "other runtime";
  return fmt::format("oneDNN {}.{}.{} ({} threading)", v->major, v->minor, v->patch, runtime);
}

std::string cpu_bf16_matmul_note() {
  static const std::string impl = detail::bf16_matmul_implementation();
  if (bf16_forced_unsupported) return (impl.empty() ? "none" : impl) + ", taken as unsupported by a test";
  return impl.empty() ? "none" : impl;
}

bool cpu_runs_bf16() {
  static const bool runs = [] {
    const auto impl = detail::bf16_matmul_implementation();
    return !impl.empty() && impl.find("ref") == std::string::npos;
  }();
  return runs && !bf16_forced_unsupported;
}

namespace {

// One node ready to run on the values' f32 or bf16 buffers: its oneDNN primitive, or the reference kernel
// on double copies. load() binds the buffers (for the reference kernel: converts the inputs to double),
// kernel() computes, store() writes the reference kernel's outputs back, rounded once to their f32 or bf16;
// timing repeats kernel() alone, so the reference kernel's timings do not include the conversions.
class PreparedNode {
 public:
  PreparedNode(const Graph& g, const Node& n) : g_(g), n_(n) {
    auto lowered = detail::lower_to_onednn(g, n);
    backend_.node = static_cast<NodeId>(&n - g.nodes().data());
    if (lowered.kernel) {
      onednn_ = std::move(lowered.kernel);
      backend_.backend = CpuBackend::kOneDnn;
      backend_.detail = onednn_->implementation();
    } else {
      backend_.backend = CpuBackend::kReference;
      backend_.detail = std::move(lowered.why_not);
    }
  }
  const NodeBackend& backend() const { return backend_; }

  void load(std::span<const ReplayBuffer* const> in, std::span<ReplayBuffer* const> out) {
    out_.assign(out.begin(), out.end());
    if (onednn_) {
      std::vector<const void*> in_data;
      std::vector<void*> out_data;
      for (const auto* b : in) in_data.push_back(b->data());
      for (auto* b : out) out_data.push_back(b->data());
      onednn_->bind(in_data, out_data);
      return;
    }
    in_d_.resize(n_.inputs.size());
    out_d_.resize(n_.outputs.size());
    ins_.clear();
    outs_.clear();
    for (std::size_t i = 0; i < n_.inputs.size(); ++i) {
      const auto& type = g_.type(n_.inputs[i]);
      in_d_[i].resize(in[i]->size());
      for (std::size_t j = 0; j < in_d_[i].size(); ++j) in_d_[i][j] = in[i]->get(j);
      ins_.push_back({in_d_[i].data(), &type.shape, type.numel()});
    }
    for (std::size_t i = 0; i < n_.outputs.size(); ++i) {
      const auto& type = g_.type(n_.outputs[i]);
      out_d_[i].assign(static_cast<std::size_t>(type.numel()), 0.0);
      outs_.push_back({out_d_[i].data(), &type.shape, type.numel()});
    }
  }
  void kernel() {
    if (onednn_)
      onednn_->run();
    else  // the reference executor's kernel (models/exec), in double precision
      n_.op->kernel.real(models::KernelCall<double>{ins_, outs_, n_.attrs});
  }
  void store() {
    if (onednn_) return;
    for (std::size_t i = 0; i < out_d_.size(); ++i)
      for (std::size_t j = 0; j < out_d_[i].size(); ++j) out_[i]->set(j, out_d_[i][j]);
  }

 private:
  const Graph& g_;
  const Node& n_;
  NodeBackend backend_;
  std::unique_ptr<detail::OneDnnNode> onednn_;
  std::vector<ReplayBuffer*> out_;
  std::vector<std::vector<double>> in_d_, out_d_;
  std::vector<models::In<double>> ins_;
  std::vector<models::Out<double>> outs_;
};

struct NodeBuffers {
  std::vector<const ReplayBuffer*> in;
  std::vector<ReplayBuffer*> out;
};
NodeBuffers buffers(const Node& n, std::vector<ReplayBuffer>& values) {
  NodeBuffers b;
  for (auto v : n.inputs) b.in.push_back(&values[static_cast<std::size_t>(v)]);
  for (auto v : n.outputs) b.out.push_back(&values[static_cast<std::size_t>(v)]);
  return b;
}

// Value `id` of `g` in its storage type: as replay_source_values gives it (rounded to bf16 for a bf16 value)
// when `source`, else zeros.
ReplayBuffer value_buffer(const Graph& g, ValueId id, bool source, const models::Feeds<double>& feeds,
                          const models::ExecOptions& options) {
  const auto& type = g.type(id);
  const auto storage = replay_storage_type(type.dtype);
  if (source) return ReplayBuffer(storage, replay_source_values(g, id, feeds, options));
  return ReplayBuffer(storage, static_cast<std::size_t>(type.numel()));
}

// Every value of `g`: sources as replay_source_values gives them, the rest zero.
std::vector<ReplayBuffer> replay_values(const Graph& g, const models::Feeds<double>& feeds,
                                        const models::ExecOptions& options) {
  std::vector<ReplayBuffer> values;
  values.reserve(g.values().size());
  for (std::size_t i = 0; i < g.values().size(); ++i)
    values.push_back(value_buffer(g, static_cast<ValueId>(i), g.values()[i].producer < 0, feeds, options));
  return values;
}

std::vector<std::vector<float>> widened(const std::vector<ReplayBuffer>& values) {
  std::vector<std::vector<float>> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(v.widened());
  return out;
}

}  // namespace

CpuReplay replay_on_cpu(const Graph& g, const models::Feeds<double>& feeds,
                        const models::ExecOptions& options) {
  check_replay_types(g, ReplayTypes::kF32AndBf16);
  for (const auto& [id, values] : feeds)  // as the reference executor: a feed must name a value
    if (id < 0 || static_cast<std::size_t>(id) >= g.values().size())
      throw models::GraphError(fmt::format("feed for unknown value id {}", id));
  auto values = replay_values(g, feeds, options);
  CpuReplay r;
  for (const auto& n : g.nodes()) {
    PreparedNode node(g, n);
    auto b = buffers(n, values);
    node.load(b.in, b.out);
    node.kernel();
    node.store();
    r.nodes.push_back(node.backend());
  }
  r.values = widened(values);
  return r;
}

namespace {

void check_timing(const TimingOptions& options, std::string_view what) {
  if (options.warmup < 0 || options.repeat < 1)
    throw std::invalid_argument(fmt::format("{}: warm-up {} must be >= 0 and repetitions {} >= 1", what,
                                            options.warmup, options.repeat));
}

// Median, min and max of `seconds`, which `run` fills with `repeat` timed runs after `warmup` untimed ones.
template <class F>
void time_runs(const TimingOptions& options, F&& run, double& median, double& min, double& max) {
  for (int i = 0; i < options.warmup; ++i) run();
  std::vector<double> seconds;
  for (int i = 0; i < options.repeat; ++i) {
    util::Stopwatch watch;
    run();
    seconds.push_back(watch.seconds());
  }
  std::sort(seconds.begin(), seconds.end());
  const std::size_t mid = seconds.size() / 2;
  median = seconds.size() % 2 ? seconds[mid] : (seconds[mid - 1] + seconds[mid]) / 2;
  min = seconds.front();
  max = seconds.back();
}

}  // namespace

NodeTiming time_node(const Graph& g, NodeId id, const TimingOptions& options) {
  if (id < 0 || static_cast<std::size_t>(id) >= g.nodes().size())
    throw std::out_of_range(fmt::format("time_node: graph '{}' has no node {}", g.name(), id));
  check_timing(options, "time_node");
  check_replay_types(g, ReplayTypes::kF32AndBf16);
  const Node& n = g.node(id);
  models::ExecOptions exec;
  exec.seed = options.seed;
  std::vector<ReplayBuffer> values(g.values().size());
  for (auto v : n.inputs) values[static_cast<std::size_t>(v)] = value_buffer(g, v, true, {}, exec);
  for (auto v : n.outputs) values[static_cast<std::size_t>(v)] = value_buffer(g, v, false, {}, exec);
  PreparedNode node(g, n);
  auto b = buffers(n, values);
  node.load(b.in, b.out);
  NodeTiming t;
  time_runs(
      options, [&] { node.kernel(); }, t.median_seconds, t.min_seconds, t.max_seconds);
  t.backend = node.backend();
  return t;
}

GraphTiming time_graph(const Graph& g, const TimingOptions& options) {
  check_timing(options, "time_graph");
  check_replay_types(g, ReplayTypes::kF32AndBf16);
  models::ExecOptions exec;
  exec.seed = options.seed;
  GraphTiming t;
  auto values = replay_values(g, {}, exec);
  // First pass: prepare and bind every node in graph order, so that a node packing an input when bound
  // (a convolution's weights) sees its producer's result; run it, views included.
  struct Step {
    std::unique_ptr<PreparedNode> node;
    NodeBuffers buffers;
    bool reference = false;
  };
  std::vector<Step> kernels;
  for (const auto& n : g.nodes()) {
    auto node = std::make_unique<PreparedNode>(g, n);
    auto b = buffers(n, values);
    node->load(b.in, b.out);
    node->kernel();
    node->store();
    t.nodes.push_back(node->backend());
    if (models::is_view(n) || models::split_is_view(g, n)) {
      ++t.view_nodes;
      continue;
    }
    const bool reference = node->backend().backend == CpuBackend::kReference;
    kernels.push_back({std::move(node), std::move(b), reference});
  }
  t.kernels = static_cast<int>(kernels.size());
  time_runs(
      options,
      [&] {
        for (auto& k : kernels) {
          if (k.reference) k.node->load(k.buffers.in, k.buffers.out);  // reads the producers' outputs now
          k.node->kernel();
          k.node->store();
        }
      },
      t.median_seconds, t.min_seconds, t.max_seconds);
  t.values = widened(values);
  return t;
}

#else  // oneDNN not found at configure time

namespace {
[[noreturn]] void no_onednn() {
  throw std::runtime_error(std::string(kOneDnnMissing));
}
}  // namespace

bool onednn_available() {
  return false;
}
std::string onednn_description() {
  return "oneDNN not found at build time (install libdnnl-dev)";
}
CpuReplay replay_on_cpu(const Graph&, const models::Feeds<double>&, const models::ExecOptions&) {
  no_onednn();
}
NodeTiming time_node(const Graph&, NodeId, const TimingOptions&) {
  no_onednn();
}
GraphTiming time_graph(const Graph&, const TimingOptions&) {
  no_onednn();
}
bool cpu_runs_bf16() {
  return false;
}
std::string cpu_bf16_matmul_note() {
  return "none (built without oneDNN)";
}

#endif

CpuProfile profile_on_cpu(const Graph& g, const TimingOptions& options, std::string_view device) {
  if (!onednn_available()) throw std::runtime_error(std::string(kOneDnnMissing));
  return profile_graph(g, device,
                       [&](const Graph& graph, NodeId id) { return time_node(graph, id, options); });
}

CpuProfile profile_graph(const Graph& g, std::string_view device,
                         const std::function<NodeTiming(const Graph&, NodeId)>& time) {
  CpuProfile p;
  std::map<std::string, std::size_t> seen;  // key -> index into p.ops
  for (std::size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (models::is_view(n) || models::split_is_view(g, n)) {
      ++p.view_nodes;
      continue;
    }
    auto key = models::profile_key(g, n, device);
    if (auto it = seen.find(key); it != seen.end()) {
      ++p.ops[it->second].instances;
      continue;
    }
    ProfiledOp op{key, static_cast<NodeId>(i), 1, time(g, static_cast<NodeId>(i))};
    p.db.add(key, op.timing.median_seconds);
    seen.emplace(std::move(key), p.ops.size());
    p.ops.push_back(std::move(op));
  }
  return p;
}

CpuProfile least_disturbed(std::span<const CpuProfile> rounds) {
  if (rounds.empty()) throw std::invalid_argument("least_disturbed: no rounds");
  CpuProfile best = rounds.front();
  best.rounds = 0;
  for (const auto& round : rounds) {
    if (round.ops.size() != best.ops.size())
      throw std::invalid_argument(
          fmt::format("least_disturbed: a round has {} operator instances, another {}", round.ops.size(),
                      best.ops.size()));
    best.rounds += round.rounds;
  }
  best.db = {};
  for (std::size_t i = 0; i < best.ops.size(); ++i) {
    auto& op = best.ops[i];
    RoundExtremes extremes;
    for (const auto& round : rounds) {
      const auto& other = round.ops[i];
      if (other.key != op.key)
        throw std::invalid_argument(fmt::format(
            "least_disturbed: instance {} is '{}' in one round, '{}' in another", i, op.key, other.key));
      extremes.add(other.timing.median_seconds);  // a combined round brings its own slowest round along
      extremes.add(other.timing.median_seconds * (1 + other.round_spread));
      if (other.timing.median_seconds < op.timing.median_seconds) op.timing = other.timing;
    }
    op.round_spread = extremes.spread();
    best.db.add(op.key, op.timing.median_seconds);
  }
  return best;
}

}  // namespace strata::validate
