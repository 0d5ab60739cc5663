#include "search/parallel/op_plan.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::search::parallel {

using models::Graph;
using models::NodeId;
using models::ParallelDim;
using models::ParallelDimKind;
using models::TensorType;

namespace {

std::size_t u(std::int64_t i) {
  return static_cast<std::size_t>(i);
}

// The default rule for operators without a trait: the sample dimension when axis 0 of every output and of
// every activation input agrees (other inputs, e.g. weights, are needed whole); otherwise no dimension.
std::vector<ParallelDim> default_dims(const Graph& g, const models::Node& n) {
  const auto outs = models::output_types(g, n);
  if (outs.empty() || outs[0].rank() == 0) return {};
  const std::int64_t batch = outs[0].shape[0];
  for (const auto& t : outs)
    if (t.rank() == 0 || t.shape[0] != batch) return {};
  ParallelDim d{"batch", ParallelDimKind::kSample, batch, 0, {}};
  for (std::size_t j = 0; j < n.inputs.size(); ++j) {
    const auto& v = g.value(n.inputs[j]);
    const bool carries = v.type.rank() >= 1 && v.type.shape[0] == batch;
    if (carries)
      d.input_axes.emplace_back(static_cast<int>(j), 0);
    else if (v.kind == models::ValueKind::kActivation && v.type.rank() >= 1)
      return {};
  }
  return {std::move(d)};
}

bool divides_all(const ParallelDim& d, std::span<const TensorType> in, int degree) {
  if (d.extent % degree != 0) return false;
  for (const auto& [j, axis] : d.input_axes)
    if (in[u(j)].shape[u(axis)] % degree != 0) return false;
  return true;
}

// All degree vectors (powers of two, dividing) with product <= gpus.
void enumerate_degrees(std::span<const ParallelDim> dims, std::span<const TensorType> in, int gpus,
                       std::size_t k, std::vector<int>& cur, int product,
                       std::vector<std::vector<int>>& out) {
  if (k == dims.size()) {
    out.push_back(cur);
    return;
  }
  for (int d = 1; product * d <= gpus; d *= 2) {
    if (!divides_all(dims[k], in, d)) break;  // a power of two that does not divide: no larger one does
    cur.push_back(d);
    enumerate_degrees(dims, in, gpus, k + 1, cur, product * d, out);
    cur.pop_back();
  }
}

// The machine views (start, stride) for `parts` parts on `gpus` ranks. Up to kAllViewsUpTo GPUs: every start
// and every power-of-two stride that fits. Beyond, the space would grow as GPUs x log(GPUs) per degree
// vector, so only aligned views are kept (as FlexFlow's released search, which places parts in blocks):
// contiguous blocks starting at a multiple of their size, and the parts spread evenly (stride gpus / parts)
// from each start below the stride.
std::vector<std::pair<int, int>> views(int parts, int gpus) {
  std::vector<std::pair<int, int>> v;
  if (parts == 1) {
    for (int s = 0; s < gpus; ++s) v.emplace_back(s, 1);
    return v;
  }
  if (gpus <= kAllViewsUpTo) {
    for (int stride = 1; (parts - 1) * stride < gpus; stride *= 2)
      for (int s = 0; s + (parts - 1) * stride < gpus; ++s) v.emplace_back(s, stride);
    return v;
  }
  for (int s = 0; s + parts <= gpus; s += parts) v.emplace_back(s, 1);
  const int spread = gpus / parts;
  if (spread > 1)
    for (int s = 0; s < spread && s + (parts - 1) * spread < gpus; ++s) v.emplace_back(s, spread);
  return v;
}

Block whole(const TensorType& t) {
  Block b;
  b.lo.assign(t.shape.size(), 0);
  b.hi = t.shape;
  return b;
}

}  // namespace

int OpConfig::parts() const {
  int p = 1;
  for (int d : degrees) p *= d;
  return p;
}

double Block::elements() const {
  double e = 1;
  for (std::size_t a = 0; a < lo.size(); ++a) e *= static_cast<double>(hi[a] - lo[a]);
  return e;
}

double overlap_elements(const Block& a, const Block& b) {
  double e = 1;
  for (std::size_t k = 0; k < a.lo.size(); ++k) {
    const auto lo = std::max(a.lo[k], b.lo[k]), hi = std::min(a.hi[k], b.hi[k]);
    if (hi <= lo) return 0;
    e *= static_cast<double>(hi - lo);
  }
  return e;
}

PlanSpace::PlanSpace(const Graph& graph, int gpus) : graph_(&graph), gpus_(gpus) {
  if (gpus < 1) throw std::invalid_argument(fmt::format("a plan needs at least one GPU, got {}", gpus));
  index_.assign(graph.nodes().size(), -1);
  for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
    const auto& node = graph.nodes()[n];
    if (node.op->kind == models::OpKind::kConstant) continue;
    index_[n] = static_cast<int>(nodes_.size());
    nodes_.push_back(static_cast<NodeId>(n));
    const auto in = models::input_types(graph, node);
    std::vector<ParallelDim> dims;
    if (node.op->parallel_dims) {
      dims = node.op->parallel_dims(in, models::output_types(graph, node), node.attrs);
      declared_.push_back(1);
    } else {
      dims = default_dims(graph, node);
      declared_.push_back(0);
    }
    std::vector<std::vector<int>> degrees;
    std::vector<int> cur;
    enumerate_degrees(dims, in, gpus, 0, cur, 1, degrees);
    std::vector<OpConfig> configs;
    for (const auto& d : degrees) {
      OpConfig c{d, 0, 1};
      for (const auto& [s, stride] : views(c.parts(), gpus)) configs.push_back({d, s, stride});
    }
    dims_.push_back(std::move(dims));
    configs_.push_back(std::move(configs));
  }
}

std::vector<int> PlanSpace::part_index(int i, const OpConfig& c, int part) const {
  std::vector<int> idx(c.degrees.size());
  for (std::size_t k = c.degrees.size(); k-- > 0;) {
    idx[k] = part % c.degrees[k];
    part /= c.degrees[k];
  }
  (void)i;
  return idx;
}

Block PlanSpace::output_block(int i, const OpConfig& c, int part, int output) const {
  const auto& node = graph_->node(nodes_[u(i)]);
  Block b = whole(graph_->type(node.outputs[u(output)]));
  const auto idx = part_index(i, c, part);
  const auto& dims = dims_[u(i)];
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (dims[k].output_axis < 0) continue;
    const auto a = u(dims[k].output_axis);
    const std::int64_t len = b.hi[a] / c.degrees[k];
    b.lo[a] = len * idx[k];
    b.hi[a] = len * (idx[k] + 1);
  }
  return b;
}

Block PlanSpace::input_block(int i, const OpConfig& c, int part, int input) const {
  const auto& node = graph_->node(nodes_[u(i)]);
  Block b = whole(graph_->type(node.inputs[u(input)]));
  const auto idx = part_index(i, c, part);
  const auto& dims = dims_[u(i)];
  for (std::size_t k = 0; k < dims.size(); ++k)
    for (const auto& [j, axis] : dims[k].input_axes) {
      if (j != input) continue;
      const auto a = u(axis);
      const std::int64_t len = b.hi[a] / c.degrees[k];
      b.lo[a] = len * idx[k];
      b.hi[a] = len * (idx[k] + 1);
    }
  return b;
}

int PlanSpace::reduction_degree(int i, const OpConfig& c) const {
  int r = 1;
  const auto& dims = dims_[u(i)];
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k].kind == ParallelDimKind::kReduction) r *= c.degrees[k];
  return r;
}

namespace {

// The config splitting dimension `k` `want` ways (or the largest valid power of two below) on ranks 0, 1,
// ...; k < 0: the whole node on rank 0. Returns its index in space.configs(i).
int split_one(const PlanSpace& space, int i, int k, int want) {
  int best = -1, best_parts = 0;
  const auto configs = space.configs(i);
  for (std::size_t ci = 0; ci < configs.size(); ++ci) {
    const auto& c = configs[ci];
    if (c.start != 0 || c.stride != 1) continue;
    bool only_k = true;
    for (std::size_t d = 0; d < c.degrees.size(); ++d)
      if (static_cast<int>(d) != k && c.degrees[d] != 1) only_k = false;
    if (only_k && c.parts() <= want && c.parts() > best_parts) {
      best = static_cast<int>(ci);
      best_parts = c.parts();
    }
  }
  if (best < 0) throw std::logic_error("plan space without a whole-node config on rank 0");
  return best;
}

int find_dim(const PlanSpace& space, int i, ParallelDimKind kind) {
  const auto dims = space.dims(i);
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k].kind == kind) return static_cast<int>(k);
  return -1;
}

}  // namespace

OpPlan data_parallel_plan(const PlanSpace& space) {
  OpPlan p;
  for (int i = 0; i < space.size(); ++i)
    p.choice.push_back(split_one(space, i, find_dim(space, i, ParallelDimKind::kSample), space.gpus()));
  return p;
}

OpPlan expert_plan(const PlanSpace& space) {
  OpPlan p = data_parallel_plan(space);
  const auto& g = space.graph();
  for (int i = 0; i < space.size(); ++i) {
    const auto& node = g.node(space.nodes()[u(i)]);
    const std::string_view op = node.op->name;
    bool weighted = false;
    if (op == "matmul" || op == "batch_matmul")
      weighted = g.value(node.inputs[1]).kind == models::ValueKind::kParam;
    else if (op == "embedding")
      weighted = true;
    if (!weighted) continue;
    const int k = find_dim(space, i, ParallelDimKind::kParameter);
    if (k >= 0) p.choice[u(i)] = split_one(space, i, k, space.gpus());
  }
  return p;
}

std::string describe_config(const PlanSpace& space, int i, const OpConfig& c) {
  const auto& node = space.graph().node(space.nodes()[u(i)]);
  std::string s = fmt::format("{} ({})", node.name, node.op->name);
  const auto dims = space.dims(i);
  bool any = false;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (c.degrees[k] > 1) {
      s += fmt::format(" {}={}", dims[k].name, c.degrees[k]);
      any = true;
    }
  if (!any) s += " whole";
  const int n = c.parts();
  if (n == 1)
    s += fmt::format(" -> gpu {}", c.start);
  else if (c.stride == 1)
    s += fmt::format(" -> gpus {}-{}", c.start, c.device(n - 1));
  else
    s += fmt::format(" -> gpus {}-{} step {}", c.start, c.device(n - 1), c.stride);
  return s;
}

std::string describe_plan(const PlanSpace& space, const OpPlan& plan) {
  std::string s;
  for (int i = 0; i < space.size(); ++i)
    s += describe_config(space, i, space.config(i, plan.choice[u(i)])) + "\n";
  return s;
}

}  // namespace strata::search::parallel
