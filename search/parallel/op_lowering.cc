#include "search/parallel/op_lowering.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "sim/collective_runner.h"
#include "sim/nccl_model.h"

namespace strata::search::parallel {

using models::ParallelDimKind;
using models::ValueKind;

namespace {

double dtype_bytes_of(const models::Graph& g, models::ValueId v) {
  return models::dtype_bytes(g.type(v).dtype);
}

}  // namespace

// ---- CommTables ----

CommTables::CommTables(const hw::Topology& topo) : topo_(topo), gpus_(topo.num_gpus()) {
  routes_.resize(ix(gpus_) * ix(gpus_));
  route_known_.assign(routes_.size(), 0);
}

const std::vector<std::int32_t>& CommTables::route_resources(int src, int dst) {
  const auto k = ix(src) * ix(gpus_) + ix(dst);
  if (!route_known_[k]) {
    // Non-blocking backplanes (Link::shared false) never limit a flow: they are no resource.
    for (auto l : topo_.route(src, dst))
      if (topo_.link(l).shared) routes_[k].push_back(gpus_ + l);
    route_known_[k] = 1;
  }
  return routes_[k];
}

sim::SimTime CommTables::transfer_time(int src, int dst, double bytes) const {
  return sim::seconds_to_time(topo_.route_latency(src, dst) + bytes / topo_.route_bandwidth(src, dst));
}

int CommTables::group(const std::vector<int>& ranks) {
  auto [it, fresh] = group_index_.emplace(ranks, static_cast<int>(groups_.size()));
  if (fresh) {
    Group g{ranks, {}};
    for (std::size_t k = 0; k < ranks.size(); ++k)
      for (auto l : topo_.route(ranks[k], ranks[(k + 1) % ranks.size()]))
        if (topo_.link(l).shared) g.links.push_back(gpus_ + l);
    std::sort(g.links.begin(), g.links.end());
    g.links.erase(std::unique(g.links.begin(), g.links.end()), g.links.end());
    groups_.push_back(std::move(g));
  }
  return it->second;
}

const CommTables::Choice& CommTables::allreduce(int group, double bytes) {
  const auto key = std::make_pair(group, bytes);
  if (auto it = allreduce_.find(key); it != allreduce_.end()) return it->second;
  sim::CollectiveRequest req;
  req.spec.op = sim::CollectiveOp::kAllReduce;
  req.spec.group = groups_[ix(group)].ranks;
  req.spec.bytes = bytes;
  const auto r = sim::run_collective(topo_, req);
  return allreduce_.emplace(key, Choice{r.algorithm, r.protocol, sim::seconds_to_time(r.seconds)})
      .first->second;
}

// ---- OpLowering ----

OpLowering::OpLowering(const PlanSpace& space, const ShardCosts& costs, Options options)
    : space_(&space), costs_(&costs), options_(options) {
  const auto& g = space.graph();
  const auto n = ix(space.size());
  ins_.resize(n), outs_.resize(n), consumers_.resize(n), producers_.resize(n), param_inputs_.resize(n);
  for (int i = 0; i < space.size(); ++i) {
    const auto& node = g.node(space.nodes()[ix(i)]);
    for (std::size_t j = 0; j < node.inputs.size(); ++j) {
      const auto& v = g.value(node.inputs[j]);
      int p = -1;
      if (v.producer >= 0) p = space.index_of(v.producer);
      ins_[ix(i)].push_back({static_cast<int>(j), p, v.producer_output});
      if (p >= 0) {
        outs_[ix(p)].push_back({i, static_cast<int>(j), v.producer_output});
        producers_[ix(i)].push_back(p);
        consumers_[ix(p)].push_back(i);
      }
      if (v.kind == ValueKind::kParam) param_inputs_[ix(i)].push_back(static_cast<int>(j));
    }
  }
  // Transfer tasks are numbered (edge x part x part) within their block, as 32-bit ints.
  const std::int64_t g2 = static_cast<std::int64_t>(space.gpus()) * space.gpus();
  for (int i = 0; i < space.size(); ++i) {
    const auto edges = static_cast<std::int64_t>(std::max(ins_[ix(i)].size(), outs_[ix(i)].size()));
    if (edges * g2 >= INT32_MAX)
      throw std::invalid_argument(
          fmt::format("node '{}' has {} edges: too many for per-operator plans on {} GPUs (edges x GPUs^2 "
                      "must stay below 2^31)",
                      g.node(space.nodes()[ix(i)]).name, edges, space.gpus()));
  }
  // Tied weights: users of each weight value (planned nodes only), in node order.
  std::map<models::ValueId, std::vector<std::pair<int, int>>> users;
  tied_of_input_.resize(n);
  partners_.resize(n);
  for (int i = 0; i < space.size(); ++i) {
    const auto& node = g.node(space.nodes()[ix(i)]);
    tied_of_input_[ix(i)].assign(node.inputs.size(), -1);
    for (int j : param_inputs_[ix(i)]) users[node.inputs[ix(j)]].push_back({i, j});
  }
  for (auto& [value, us] : users) {
    if (us.size() < 2) continue;
    std::sort(us.begin(), us.end());
    const int w = static_cast<int>(tied_users_.size());
    for (const auto& [i, j] : us) {
      tied_of_input_[ix(i)][ix(j)] = w;
      for (const auto& [k, unused] : us)
        if (k != i) partners_[ix(i)].push_back(k);
    }
    tied_users_.push_back(std::move(us));
  }
  for (auto* list : {&consumers_, &producers_, &partners_})
    for (auto& l : *list) {
      std::sort(l.begin(), l.end());
      l.erase(std::unique(l.begin(), l.end()), l.end());
    }
}

std::uint64_t OpLowering::key(int node, OpBlock block, std::int32_t local) const {
  const auto b = static_cast<std::uint64_t>(block);
  const auto n = static_cast<std::uint64_t>(space_->size());
  const auto i = static_cast<std::uint64_t>(node);
  const std::uint64_t rank = b < 3 ? i * 3 + b : 3 * n + (n - 1 - i) * 3 + (b - 3);
  return rank << 32 | static_cast<std::uint32_t>(local);
}

int OpLowering::reduction_group(int i, const OpConfig& c, int part) const {
  const auto dims = space_->dims(i);
  const auto idx = space_->part_index(i, c, part);
  int gid = 0;
  for (std::size_t k = 0; k < dims.size(); ++k)
    if (dims[k].kind != ParallelDimKind::kReduction) gid = gid * c.degrees[k] + idx[k];
  return gid;
}

TaskRef OpLowering::final_task(int p_node, const OpConfig& c, int part) const {
  if (space_->reduction_degree(p_node, c) > 1)
    return {p_node, OpBlock::kRed, reduction_group(p_node, c, part)};
  return {p_node, OpBlock::kFwd, part};
}

void OpLowering::lower(int i, OpBlock first, const OpPlan& plan, CommTables& comm,
                       std::vector<LoweredTask>& a, std::vector<LoweredTask>& b) const {
  a.clear(), b.clear();
  switch (first) {
    case OpBlock::kFwdIn:
      return lower_forward(i, plan, comm, a, b);
    case OpBlock::kBwdIn:
      return lower_backward(i, plan, comm, a, b);
    case OpBlock::kRed:
      return lower_reduction(i, plan, comm, a);
    case OpBlock::kSync:
      return lower_sync(i, plan, comm, a);
    default:
      throw std::logic_error("OpLowering::lower: not a first block");
  }
}

void OpLowering::lower_forward(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& in,
                               std::vector<LoweredTask>& fwd) const {
  const auto& g = space_->graph();
  const auto& node = g.node(space_->nodes()[ix(i)]);
  const auto& c = space_->config(i, plan.choice[ix(i)]);
  const int G = space_->gpus(), parts = c.parts();
  const double seconds = costs_->get(i, plan.choice[ix(i)]).forward;
  for (int q = 0; q < parts; ++q)
    fwd.push_back({OpTaskKind::kCompute, q, c.device(q), -1, -1, 0, seconds, {}});
  for (const auto& e : ins_[ix(i)]) {
    if (e.producer < 0) continue;
    const auto& pc = space_->config(e.producer, plan.choice[ix(e.producer)]);
    const double elem = dtype_bytes_of(g, node.inputs[ix(e.input)]);
    const int pparts = pc.parts();
    for (int q = 0; q < parts; ++q) {
      const auto want = space_->input_block(i, c, q, e.input);
      const int dev = c.device(q);
      // One representative per producer output block: a part on this GPU when there is one, else the first.
      std::vector<int> rep(ix(pparts), -1);
      for (int p = 0; p < pparts; ++p) {
        const int grp = reduction_group(e.producer, pc, p);
        int& r = rep[ix(grp)];
        if (r < 0 || (pc.device(p) == dev && pc.device(r) != dev)) r = p;
      }
      for (int p : rep) {
        if (p < 0) continue;
        const double ov = overlap_elements(space_->output_block(e.producer, pc, p, e.output), want);
        if (ov <= 0) continue;
        const TaskRef src = final_task(e.producer, pc, p);
        if (pc.device(p) == dev) {
          fwd[ix(q)].deps.push_back(src);
          continue;
        }
        const auto local = static_cast<std::int32_t>((e.input * G + q) * G + p);
        in.push_back({OpTaskKind::kTransfer, local, pc.device(p), dev, -1, ov * elem, 0, {src}});
        fwd[ix(q)].deps.push_back({i, OpBlock::kFwdIn, local});
      }
    }
  }
  (void)comm;
}

void OpLowering::lower_backward(int i, const OpPlan& plan, CommTables& comm, std::vector<LoweredTask>& in,
                                std::vector<LoweredTask>& bwd) const {
  const auto& g = space_->graph();
  const auto& node = g.node(space_->nodes()[ix(i)]);
  const auto& c = space_->config(i, plan.choice[ix(i)]);
  const int G = space_->gpus(), parts = c.parts();
  const double seconds = costs_->get(i, plan.choice[ix(i)]).backward;
  for (int p = 0; p < parts; ++p)
    bwd.push_back({OpTaskKind::kCompute, p, c.device(p), -1, -1, 0, seconds, {{i, OpBlock::kFwd, p}}});
  const auto& outs = outs_[ix(i)];
  for (std::size_t k = 0; k < outs.size(); ++k) {
    const auto& e = outs[k];
    const auto v = node.outputs[ix(e.output)];
    if (!models::is_float(g.type(v).dtype)) continue;  // no gradient flows through indices
    const auto& cc = space_->config(e.consumer, plan.choice[ix(e.consumer)]);
    const double elem = dtype_bytes_of(g, v);
    for (int p = 0; p < parts; ++p) {
      const auto have = space_->output_block(i, c, p, e.output);
      for (int q = 0; q < cc.parts(); ++q) {
        const double ov = overlap_elements(have, space_->input_block(e.consumer, cc, q, e.input));
        if (ov <= 0) continue;
        const TaskRef src{e.consumer, OpBlock::kBwd, q};
        if (cc.device(q) == c.device(p)) {
          bwd[ix(p)].deps.push_back(src);
          continue;
        }
        const auto local = static_cast<std::int32_t>((static_cast<int>(k) * G + p) * G + q);
        in.push_back({OpTaskKind::kTransfer, local, cc.device(q), c.device(p), -1, ov * elem, 0, {src}});
        bwd[ix(p)].deps.push_back({i, OpBlock::kBwdIn, local});
      }
    }
  }
  (void)comm;
}

void OpLowering::lower_reduction(int i, const OpPlan& plan, CommTables& comm,
                                 std::vector<LoweredTask>& red) const {
  const auto& g = space_->graph();
  const auto& node = g.node(space_->nodes()[ix(i)]);
  const auto& c = space_->config(i, plan.choice[ix(i)]);
  if (space_->reduction_degree(i, c) == 1) return;
  std::map<int, std::vector<int>> members;
  for (int p = 0; p < c.parts(); ++p) members[reduction_group(i, c, p)].push_back(p);
  for (const auto& [gid, ps] : members) {
    double bytes = 0;
    for (std::size_t o = 0; o < node.outputs.size(); ++o)
      bytes += space_->output_block(i, c, ps[0], static_cast<int>(o)).elements() *
               dtype_bytes_of(g, node.outputs[o]);
    std::vector<int> ranks;
    LoweredTask t{OpTaskKind::kAllReduce, gid, -1, -1, -1, bytes, 0, {}};
    for (int p : ps) {
      ranks.push_back(c.device(p));
      t.deps.push_back({i, OpBlock::kFwd, p});
    }
    t.group = comm.group(ranks);
    red.push_back(std::move(t));
  }
}

int OpLowering::tied_weight(int i, int j) const {
  return tied_of_input_[ix(i)][ix(j)];
}

namespace {
// Where a node's parts hold a weight: (GPU, block) per part, sorted.
std::vector<std::pair<int, Block>> weight_layout(const PlanSpace& space, int i, const OpConfig& c, int j) {
  std::vector<std::pair<int, Block>> l;
  for (int p = 0; p < c.parts(); ++p) l.emplace_back(c.device(p), space.input_block(i, c, p, j));
  std::sort(l.begin(), l.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second.lo, a.second.hi) < std::tie(b.first, b.second.lo, b.second.hi);
  });
  return l;
}
bool same_layout(const std::vector<std::pair<int, Block>>& a, const std::vector<std::pair<int, Block>>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const auto& x, const auto& y) {
    return x.first == y.first && x.second.lo == y.second.lo && x.second.hi == y.second.hi;
  });
}
}  // namespace

bool OpLowering::merged_into_owner(int i, int j, const OpPlan& plan) const {
  const int w = tied_weight(i, j);
  if (w < 0) return false;
  const auto [oi, oj] = tied_users_[ix(w)].front();
  if (oi == i && oj == j) return false;
  return same_layout(weight_layout(*space_, i, space_->config(i, plan.choice[ix(i)]), j),
                     weight_layout(*space_, oi, space_->config(oi, plan.choice[ix(oi)]), oj));
}

void OpLowering::lower_sync(int i, const OpPlan& plan, CommTables& comm,
                            std::vector<LoweredTask>& sync) const {
  const auto& g = space_->graph();
  const auto& node = g.node(space_->nodes()[ix(i)]);
  const auto& c = space_->config(i, plan.choice[ix(i)]);
  const auto dims = space_->dims(i);
  for (int j : param_inputs_[ix(i)]) {
    if (merged_into_owner(i, j, plan)) continue;  // its owner's all-reduce carries its gradient
    // The owner of a tied weight also waits for the users merged into it (their parts on the same GPUs).
    std::vector<std::pair<int, const OpConfig*>> merged;
    if (const int w = tied_weight(i, j); w >= 0 && tied_users_[ix(w)].front() == std::pair{i, j})
      for (const auto& [u, uj] : tied_users_[ix(w)])
        if (std::pair{u, uj} != std::pair{i, j} && merged_into_owner(u, uj, plan))
          merged.emplace_back(u, &space_->config(u, plan.choice[ix(u)]));
    // Parts differing only in dimensions that do not split this weight hold copies of the same shard.
    std::map<std::vector<int>, std::vector<int>> members;
    for (int p = 0; p < c.parts(); ++p) {
      const auto idx = space_->part_index(i, c, p);
      std::vector<int> shard;
      for (std::size_t k = 0; k < dims.size(); ++k)
        for (const auto& ia : dims[k].input_axes)
          if (ia.first == j) shard.push_back(idx[k]);
      members[shard].push_back(p);
    }
    int gid = 0;
    for (const auto& [shard, ps] : members) {
      const int local = j * space_->gpus() + gid++;
      if (ps.size() < 2) continue;
      const double bytes =
          space_->input_block(i, c, ps[0], j).elements() * dtype_bytes_of(g, node.inputs[ix(j)]);
      LoweredTask t{OpTaskKind::kAllReduce, local, -1, -1, -1, bytes, 0, {}};
      std::vector<int> ranks;
      for (int p : ps) {
        ranks.push_back(c.device(p));
        t.deps.push_back({i, OpBlock::kBwd, p});
      }
      for (const auto& [u, uc] : merged)
        for (int q = 0; q < uc->parts(); ++q)
          if (std::find(ranks.begin(), ranks.end(), uc->device(q)) != ranks.end())
            t.deps.push_back({u, OpBlock::kBwd, q});
      t.group = comm.group(ranks);
      sync.push_back(std::move(t));
    }
  }
}

void OpLowering::add_memory(int i, const OpPlan& plan, int sign, std::vector<std::int64_t>& per_gpu) const {
  const auto& g = space_->graph();
  const auto& node = g.node(space_->nodes()[ix(i)]);
  const auto& c = space_->config(i, plan.choice[ix(i)]);
  for (int p = 0; p < c.parts(); ++p) {
    double bytes = 0;
    for (int j : param_inputs_[ix(i)]) {
      if (merged_into_owner(i, j, plan)) continue;  // its owner holds the shards on the same GPUs
      const auto v = node.inputs[ix(j)];
      const double elems = space_->input_block(i, c, p, j).elements();
      const double eb = dtype_bytes_of(g, v);
      bytes += elems * 2 * eb;  // weights and gradients
      if (options_.adam) bytes += elems * (8 + (eb < 4 ? 4 : 0));
    }
    for (std::size_t o = 0; o < node.outputs.size(); ++o)
      bytes +=
          space_->output_block(i, c, p, static_cast<int>(o)).elements() * dtype_bytes_of(g, node.outputs[o]);
    for (const auto& e : ins_[ix(i)]) {
      if (e.producer < 0) continue;
      const auto& pc = space_->config(e.producer, plan.choice[ix(e.producer)]);
      const auto want = space_->input_block(i, c, p, e.input);
      // Received from other GPUs unless a part of the producer on this GPU holds all of it.
      double local = 0;
      for (int q = 0; q < pc.parts(); ++q)
        if (pc.device(q) == c.device(p))
          local = std::max(local, overlap_elements(space_->output_block(e.producer, pc, q, e.output), want));
      bytes += (want.elements() - local) * dtype_bytes_of(g, node.inputs[ix(e.input)]);
    }
    per_gpu[ix(c.device(p))] += sign * static_cast<std::int64_t>(std::llround(bytes));
  }
}

}  // namespace strata::search::parallel
