#include "search/parallel/llm_step.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/ir/graph.h"

namespace strata::search::parallel {
namespace {

using models::zoo::LayerCost;
using models::zoo::PhaseCost;
using models::zoo::TransformerSpec;

void need(std::vector<std::string>& out, bool ok, std::string why) {
  if (!ok) out.push_back(std::move(why));
}

// Builds the passes, communication and synchronisation of a step.
class StepLowering {
 public:
  StepLowering(const TransformerSpec& spec, const LlmStrategy& st, const models::CostModel& cost,
               const LlmCosts& costs, const reduce::Placement& placement, bool representative_only)
      : spec_(spec), st_(st), cost_(cost), costs_(costs), pl_(placement), rep_only_(representative_only) {}

  StepDescription run() {
    d_.p = st_.pp;
    d_.m = static_cast<int>(st_.micro_batches());
    d_.v = st_.virtual_stages;
    d_.schedule = st_.schedule;
    d_.overlap_grad_reduce = st_.overlap_grad_reduce;
    const int V = d_.p * d_.v;
    for (int s = 0; s < d_.p; ++s) d_.rep.push_back(gpu(s, 0, 0, 0));
    d_.stages.resize(static_cast<std::size_t>(d_.p));
    d_.fwd.resize(static_cast<std::size_t>(V));
    d_.bwd.resize(static_cast<std::size_t>(V));
    for (int vs = 0; vs < V; ++vs) build_passes(vs);
    for (int vs = 0; vs + 1 < V; ++vs) {
      d_.send_fwd.push_back(p2p(vs % d_.p, (vs + 1) % d_.p, "pp send activations"));
      d_.send_bwd.push_back(p2p((vs + 1) % d_.p, vs % d_.p, "pp send gradients"));
    }
    for (int s = 0; s < d_.p; ++s) finish_stage(s);
    return std::move(d_);
  }

 private:
  hw::Rank gpu(int pp, int dp, int cp, int tp) const {
    const int coords[4] = {pp, dp, cp, tp};
    return static_cast<hw::Rank>(pl_.device(coords));
  }
  double s_local() const { return static_cast<double>(spec_.seq) / st_.cp; }
  double act_bytes() const { return st_.micro_batch * s_local() * static_cast<double>(spec_.hidden) * 2; }

  int add(CommOp op) {
    if (rep_only_) op.instances.resize(1);
    d_.comms.push_back(std::move(op));
    return static_cast<int>(d_.comms.size()) - 1;
  }

  // Groups varying `axis` for stage s, one per combination of the other (non-pp) coordinates, the
  // representative's first. `inner`: restrict dp to a block of ep consecutive ranks (expert groups).
  const std::vector<std::vector<hw::Rank>>& groups(int s, int axis) {
    auto [it, fresh] = group_cache_.try_emplace({s, axis});
    if (fresh) it->second = make_groups(s, axis);
    return it->second;
  }
  std::vector<std::vector<hw::Rank>> make_groups(int s, int axis) const {
    std::vector<std::vector<hw::Rank>> out;
    for (int k = 0; k < st_.dp; ++k)
      for (int c = 0; c < st_.cp; ++c)
        for (int r = 0; r < st_.tp; ++r) {
          const int coords[4] = {s, k, c, r};
          if (coords[axis] != 0) continue;
          std::vector<hw::Rank> g;
          const int n = axis == kAxisDp ? st_.dp : axis == kAxisCp ? st_.cp : st_.tp;
          for (int i = 0; i < n; ++i) {
            int cc[4] = {s, k, c, r};
            cc[axis] = i;
            g.push_back(gpu(cc[0], cc[1], cc[2], cc[3]));
          }
          out.push_back(std::move(g));
          if (rep_only_) return out;
        }
    return out;
  }
  // Expert-parallel groups: ep consecutive data-parallel ranks.
  const std::vector<std::vector<hw::Rank>>& expert_groups(int s) {
    auto [it, fresh] = group_cache_.try_emplace({s, kExpertGroups});
    if (fresh) it->second = make_expert_groups(s);
    return it->second;
  }
  std::vector<std::vector<hw::Rank>> make_expert_groups(int s) const {
    std::vector<std::vector<hw::Rank>> out;
    for (int k0 = 0; k0 < st_.dp; k0 += st_.ep)
      for (int c = 0; c < st_.cp; ++c)
        for (int r = 0; r < st_.tp; ++r) {
          std::vector<hw::Rank> g;
          for (int e = 0; e < st_.ep; ++e) g.push_back(gpu(s, k0 + e, c, r));
          out.push_back(std::move(g));
          if (rep_only_) return out;
        }
    return out;
  }
  // Data-parallel gradient groups: dense parameters over dp x cp, expert parameters over the dp ranks that
  // hold the same experts (stride ep) x cp; one group per tp rank (and expert slot).
  const std::vector<std::vector<hw::Rank>>& grad_groups(int s, bool expert) {
    auto [it, fresh] = group_cache_.try_emplace({s, expert ? kExpertGradGroups : kDenseGradGroups});
    if (fresh) it->second = make_grad_groups(s, expert);
    return it->second;
  }
  std::vector<std::vector<hw::Rank>> make_grad_groups(int s, bool expert) const {
    std::vector<std::vector<hw::Rank>> out;
    const int slots = expert ? st_.ep : 1;
    for (int e = 0; e < slots; ++e)
      for (int r = 0; r < st_.tp; ++r) {
        std::vector<hw::Rank> g;
        for (int k = e; k < st_.dp; k += slots)
          for (int c = 0; c < st_.cp; ++c) g.push_back(gpu(s, k, c, r));
        out.push_back(std::move(g));
        if (rep_only_) return out;
      }
    return out;
  }

  int p2p(int from, int to, const std::string& label) {
    CommOp op;
    op.cls = CommClass::kPipeline;
    op.p2p = true;
    op.bytes = act_bytes() / st_.tp;  // Megatron's scatter/gather: each TP rank sends its 1/t
    for (int k = 0; k < st_.dp; ++k)
      for (int c = 0; c < st_.cp; ++c)
        for (int r = 0; r < st_.tp && !(rep_only_ && !op.instances.empty()); ++r)
          op.instances.push_back({gpu(from, k, c, r), gpu(to, k, c, r)});
    op.label = label;
    return add(std::move(op));
  }

  // One CommOp per distinct operation: `inst` must be one of the cached group lists (its address identifies
  // it).
  int collective(CommClass cls, sim::CollectiveOp o, double bytes,
                 const std::vector<std::vector<hw::Rank>>& inst, std::string label) {
    const auto key = std::make_tuple(static_cast<int>(cls), static_cast<int>(o), bytes, label, &inst);
    if (auto it = op_ids_.find(key); it != op_ids_.end()) return it->second;
    CommOp op;
    op.cls = cls;
    op.op = o;
    op.bytes = bytes;
    op.instances = inst;
    op.label = std::move(label);
    const int id = add(std::move(op));
    op_ids_.emplace(key, id);
    return id;
  }

  static Segment compute(double seconds, std::string label, TimeKind kind = TimeKind::kCompute) {
    Segment s;
    s.seconds = seconds;
    s.label = std::move(label);
    s.time = kind;
    return s;
  }
  static Segment comm(int op, TimeKind kind) {
    Segment s;
    s.kind = Segment::Kind::kComm;
    s.comm = op;
    s.time = kind;
    return s;
  }
  static Segment async(int op) {
    Segment s;
    s.kind = Segment::Kind::kAsync;
    s.comm = op;
    return s;
  }

  // The attention block's compute with context parallelism: the core runs in cp pieces, each after the
  // ring step that brought its keys and values (Liu et al. 2023, ring attention; Megatron's CP).
  void attention_compute(std::vector<Segment>& out, int s, double seconds, double core, bool backward,
                         TimeKind kind) {
    if (st_.cp == 1) {
      out.push_back(compute(seconds, backward ? "attn bwd" : "attn fwd", kind));
      return;
    }
    const double kv = 2 * st_.micro_batch * s_local() * static_cast<double>(spec_.kv_dim()) * 2 / st_.tp;
    const int ring = collective(CommClass::kContext, sim::CollectiveOp::kSendRecv, backward ? 2 * kv : kv,
                                groups(s, kAxisCp), backward ? "cp ring kv+grad" : "cp ring kv");
    const double rest = std::max(0.0, seconds - core);
    out.push_back(compute(rest / 2, backward ? "attn bwd (local)" : "attn fwd (qkv)", kind));
    int previous_ring = -1;  // the ring step issued with the previous piece brings this piece's keys/values
    for (int i = 0; i < st_.cp; ++i) {
      const int ring_step = static_cast<int>(out.size());
      if (i + 1 < st_.cp) out.push_back(async(ring));
      Segment piece = compute(core / st_.cp, backward ? "attn bwd core" : "attn core", kind);
      if (previous_ring >= 0) piece.waits.push_back(previous_ring);
      out.push_back(std::move(piece));
      previous_ring = ring_step;
    }
    out.push_back(compute(rest / 2, backward ? "attn bwd (proj)" : "attn fwd (proj)", kind));
  }

  void forward_layer(std::vector<Segment>& out, int s, const LayerCost& l, TimeKind kind) {
    std::vector<Segment> attn;
    attention_compute(attn, s, l.attn_fwd.seconds, l.attn_core_fwd.seconds, false, kind);
    wrap_tp(out, s, std::move(attn));
    mlp(out, s, l.mlp_fwd.seconds, "mlp fwd", kind);
  }

  // The TP collectives around a block (Megatron's f / g operators): with sequence parallelism an all-gather
  // before (unless `gather_before` is false) and a reduce-scatter after; without, one all-reduce after.
  void wrap_tp(std::vector<Segment>& out, int s, std::vector<Segment> body, bool gather_before = true) {
    const auto& tp = groups(s, kAxisTp);
    if (st_.tp > 1 && st_.sequence_parallel && gather_before)
      out.push_back(
          comm(collective(CommClass::kTensor, sim::CollectiveOp::kAllGather, act_bytes(), tp, "tp allgather"),
               TimeKind::kTensorComm));
    const int base = static_cast<int>(out.size());
    for (auto& seg : body) {
      for (auto& w : seg.waits) w += base;
      out.push_back(std::move(seg));
    }
    if (st_.tp > 1)
      out.push_back(comm(st_.sequence_parallel
                             ? collective(CommClass::kTensor, sim::CollectiveOp::kReduceScatter, act_bytes(),
                                          tp, "tp reducescatter")
                             : collective(CommClass::kTensor, sim::CollectiveOp::kAllReduce, act_bytes(), tp,
                                          "tp allreduce"),
                         TimeKind::kTensorComm));
  }

  void mlp(std::vector<Segment>& out, int s, double seconds, const std::string& label, TimeKind kind) {
    std::vector<Segment> body;
    const bool moe = spec_.moe() && st_.ep > 1;
    int a2a = -1;
    if (moe) {
      const double bytes = st_.micro_batch * s_local() * static_cast<double>(spec_.top_k) *
                           static_cast<double>(spec_.hidden) * 2;
      a2a = collective(CommClass::kExpert, sim::CollectiveOp::kAllToAll, bytes, expert_groups(s),
                       "ep alltoall");
      body.push_back(comm(a2a, TimeKind::kExpertComm));
    }
    body.push_back(compute(seconds, label, kind));
    if (moe) body.push_back(comm(a2a, TimeKind::kExpertComm));
    wrap_tp(out, s, std::move(body));
  }

  // Gradient buckets of a stage, per kind (dense / expert): bytes accumulated since the last launch.
  struct Bucketing {
    double pending[2] = {0, 0};
  };

  // Launches the buckets that are full (or, with `flush`, whatever is pending) after `segment`.
  // `chunk`, `first_layer`: where the bucket's parameters are first used in the forward pass (its gather's
  // deadline with ZeRO-1/2).
  void bucket(int s, Bucketing& b, std::vector<Segment>& pass, bool flush, int chunk, int first_layer) {
    for (int kind = 0; kind < 2; ++kind) {
      double& pending = b.pending[kind];
      if (pending <= 0 || (!flush && pending < bucket_bytes(st_))) continue;
      const bool expert = kind == 1;
      const bool single = (expert ? st_.dp / st_.ep : st_.dp) * st_.cp == 1;
      if (!single && st_.zero < 3) {
        const auto op = st_.zero == 0 ? sim::CollectiveOp::kAllReduce : sim::CollectiveOp::kReduceScatter;
        const int id = collective(
            CommClass::kData, op, pending, grad_groups(s, expert),
            fmt::format("dp {} {:.0f} MB", st_.zero == 0 ? "allreduce" : "reducescatter", pending / 1e6));
        d_.stages[static_cast<std::size_t>(s)].grad_sync.push_back(id);
        pass.back().grad_trigger =
            static_cast<int>(d_.stages[static_cast<std::size_t>(s)].grad_sync.size()) - 1;
        if (st_.zero >= 1) gathers_[s].push_back({id, pending, chunk, first_layer});
      }
      pending = 0;
    }
  }

  void build_passes(int vs) {
    const int s = vs % d_.p, chunk = vs / d_.p;
    const int V = d_.p * d_.v;
    const auto& l = costs_.layer;
    const auto& e = costs_.edge;
    const int layers = static_cast<int>(spec_.layers / V);
    const auto& tp = groups(s, kAxisTp);
    const double layer_grad_dense = (l.params - l.expert_params) * 2, layer_grad_expert = l.expert_params * 2;
    // ZeRO-3: every layer's parameters are gathered before its forward and backward, gradients
    // reduce-scattered after its backward, in every micro-batch.
    const bool zero3 = st_.zero == 3 && st_.dp * st_.cp > 1;
    auto& fwd = d_.fwd[static_cast<std::size_t>(vs)].segments;
    auto& bwd = d_.bwd[static_cast<std::size_t>(vs)].segments;
    std::vector<int> gather_seg;
    auto zero3_gathers = [&](std::vector<Segment>& pass) {
      gather_seg.clear();
      if (!zero3) return;
      const int ag = collective(CommClass::kData, sim::CollectiveOp::kAllGather, l.params * 2,
                                grad_groups(s, false), "zero3 allgather layer");
      for (int i = 0; i < layers; ++i) {
        gather_seg.push_back(static_cast<int>(pass.size()));
        pass.push_back(async(ag));
      }
    };
    auto wait_gather = [&](std::vector<Segment>& pass, std::size_t from, int i) {
      if (zero3) pass[from].waits.push_back(gather_seg[static_cast<std::size_t>(i)]);
    };
    // Forward.
    zero3_gathers(fwd);
    // Vocabulary-parallel embedding: partial lookups are summed (or reduce-scattered with SP).
    if (vs == 0) {
      const auto from = fwd.size();
      wrap_tp(fwd, s, {compute(e.embed_fwd.seconds, "embedding fwd")}, false);
      fwd[from].layer = -1;
    }
    for (int i = 0; i < layers; ++i) {
      const auto from = fwd.size();
      forward_layer(fwd, s, l, TimeKind::kCompute);
      wait_gather(fwd, from, i);
      fwd[from].layer = i;
    }
    // Output layer with the vocabulary-parallel cross-entropy: the hidden states are gathered (SP), the
    // logits stay split; the loss needs an all-reduce of three values per token (max, sum, target logit).
    if (vs == V - 1) {
      if (st_.tp > 1 && st_.sequence_parallel)
        fwd.push_back(comm(
            collective(CommClass::kTensor, sim::CollectiveOp::kAllGather, act_bytes(), tp, "tp allgather"),
            TimeKind::kTensorComm));
      fwd.push_back(compute(e.head_fwd.seconds, "head fwd + loss"));
      if (st_.tp > 1)
        fwd.push_back(comm(collective(CommClass::kTensor, sim::CollectiveOp::kAllReduce,
                                      3.0 * 4 * st_.micro_batch * s_local(), tp, "tp allreduce (loss)"),
                           TimeKind::kTensorComm));
    }
    // Backward (layers in reverse), with recomputation first in each layer.
    zero3_gathers(bwd);
    Bucketing buckets;
    if (vs == V - 1) {
      wrap_tp(bwd, s, {compute(e.head_bwd.seconds, "head bwd")}, false);
      buckets.pending[0] += (e.head_params + (spec_.tied_embeddings && d_.p > 1 ? e.embed_params : 0)) * 2;
    }
    for (int i = layers - 1; i >= 0; --i) {
      const auto from = bwd.size();
      if (st_.recompute == Recompute::kFull) forward_layer(bwd, s, l, TimeKind::kRecompute);
      mlp(bwd, s, l.mlp_bwd.seconds, "mlp bwd", TimeKind::kCompute);
      if (st_.recompute == Recompute::kSelective)
        bwd.push_back(compute(l.attn_core_fwd.seconds, "attn core recompute", TimeKind::kRecompute));
      std::vector<Segment> attn;
      attention_compute(attn, s, l.attn_bwd.seconds, l.attn_core_bwd.seconds, true, TimeKind::kCompute);
      wrap_tp(bwd, s, std::move(attn));
      wait_gather(bwd, from, layers - 1 - i);
      if (zero3) {
        bwd.push_back(async(collective(CommClass::kData, sim::CollectiveOp::kReduceScatter, l.params * 2,
                                       grad_groups(s, false), "zero3 reducescatter layer")));
      } else {
        buckets.pending[0] += layer_grad_dense;
        buckets.pending[1] += layer_grad_expert;
        bucket(s, buckets, bwd, false, chunk, i);
      }
    }
    if (vs == 0) {
      if (st_.tp > 1 && st_.sequence_parallel)
        bwd.push_back(comm(
            collective(CommClass::kTensor, sim::CollectiveOp::kAllGather, act_bytes(), tp, "tp allgather"),
            TimeKind::kTensorComm));
      bwd.push_back(compute(e.embed_bwd.seconds, "embedding bwd"));
      if (!zero3) buckets.pending[0] += e.embed_params * 2;
    }
    if (!zero3) bucket(s, buckets, bwd, true, chunk, vs == 0 ? -1 : 0);
    // Tied embeddings across stages: the first and last stage all-reduce the table's gradient.
    if (vs == 0 && spec_.tied_embeddings && d_.p > 1) {
      auto& pairs = group_cache_[{0, kEmbeddingPairs}];
      for (int k = 0; k < st_.dp; ++k)
        for (int c = 0; c < st_.cp; ++c)
          for (int r = 0; r < st_.tp; ++r) pairs.push_back({gpu(0, k, c, r), gpu(d_.p - 1, k, c, r)});
      const int id = collective(CommClass::kEmbedding, sim::CollectiveOp::kAllReduce, e.embed_params * 2,
                                pairs, "embedding grad allreduce");
      d_.stages[0].grad_sync.push_back(id);
    }
  }

  void finish_stage(int s) {
    auto& sync = d_.stages[static_cast<std::size_t>(s)];
    // ZeRO-1/2 (distributed optimizer): updated parameters are gathered before the next forward; in steady
    // state that is at the start of the step, one gather per gradient bucket.
    sync.param_gather.assign(static_cast<std::size_t>(d_.v), {});
    for (const auto& g : gathers_[s]) {
      auto op = d_.comms[static_cast<std::size_t>(g.reduce_op)];
      op.op = sim::CollectiveOp::kAllGather;
      op.label = fmt::format("dp param allgather {:.0f} MB", g.bytes / 1e6);
      sync.param_gather[static_cast<std::size_t>(g.chunk)].push_back({add(std::move(op)), g.first_layer});
    }
    // Issued in the order the forward pass needs them (buckets were formed backward).
    for (auto& chunk : sync.param_gather)
      std::stable_sort(chunk.begin(), chunk.end(),
                       [](const auto& a, const auto& b) { return a.first_layer < b.first_layer; });
    // Adam on the parameters this GPU updates (its ZeRO shard).
    const auto params = stage_params(spec_, st_, costs_.layer, costs_.edge, s);
    const double d_dense = static_cast<double>(st_.dp) * st_.cp;
    const double d_expert = std::max(1.0, d_dense / st_.ep);
    const double n =
        st_.zero >= 1 ? params.dense / d_dense + params.expert / d_expert : params.dense + params.expert;
    sync.optimizer_seconds = adam_seconds(n);
  }

  double adam_seconds(double n) const {
    if (n < 1) return 0;
    models::Graph g("adam");
    const auto len = static_cast<std::int64_t>(n);
    const auto dt = st_.dtype == hw::DType::kFp16 ? models::DType::kF16 : models::DType::kBF16;
    const auto p = g.add_input("param", {{len}, dt});
    const auto grad = g.add_input("grad", {{len}, dt});
    const auto m = g.add_input("m", {{len}, models::DType::kF32});
    const auto v = g.add_input("v", {{len}, models::DType::kF32});
    const auto master = g.add_input("master", {{len}, models::DType::kF32});
    const auto outs = g.add_node("adam_update", {p, grad, m, v, master}, {}, "adam");
    (void)outs;
    return cost_.node_cost(g, g.nodes().back()).seconds;
  }

  const TransformerSpec& spec_;
  const LlmStrategy& st_;
  const models::CostModel& cost_;
  const LlmCosts& costs_;
  const reduce::Placement& pl_;
  const bool rep_only_;
  StepDescription d_;
  // Group lists per (stage, kind): kAxisTp / kAxisCp, or one of the kinds below.
  static constexpr int kExpertGroups = 10, kDenseGradGroups = 11, kExpertGradGroups = 12,
                       kEmbeddingPairs = 13;
  std::map<std::pair<int, int>, std::vector<std::vector<hw::Rank>>> group_cache_;
  std::map<std::tuple<int, int, double, std::string, const void*>, int> op_ids_;
  struct Gather {
    int reduce_op;
    double bytes;
    int chunk, first_layer;
  };
  std::map<int, std::vector<Gather>> gathers_;  // per stage: the buckets whose parameters are gathered
};

}  // namespace

double bucket_bytes(const LlmStrategy& st) {
  return st.bucket_bytes > 0 ? st.bucket_bytes : std::max(40e6, 1e6 * st.dp) * 2;
}

std::string strategy_problems(const TransformerSpec& spec, const LlmStrategy& st, const hw::Topology& topo) {
  std::vector<std::string> p;
  need(p, st.tp >= 1 && st.pp >= 1 && st.dp >= 1 && st.cp >= 1 && st.ep >= 1,
       "every parallel degree (tp, pp, dp, cp, ep) must be at least 1");
  need(p, st.micro_batch >= 1, "--micro-batch must be at least 1");
  need(p, st.virtual_stages >= 1, "--virtual-stages must be at least 1");
  need(p, st.zero >= 0 && st.zero <= 3, "--zero must be 0, 1, 2 or 3");
  if (!p.empty()) return fmt::format("{}", fmt::join(p, "\n"));
  need(p, static_cast<std::int64_t>(st.gpus()) == topo.num_gpus(),
       fmt::format("tp x pp x dp x cp = {} x {} x {} x {} = {} GPUs, but the system has {}", st.tp, st.pp,
                   st.dp, st.cp, st.gpus(), topo.num_gpus()));
  need(p, spec.heads % st.tp == 0,
       fmt::format("heads ({}) must be a multiple of tp ({})", spec.heads, st.tp));
  need(p, spec.kv_heads % st.tp == 0 || st.tp % spec.kv_heads == 0,
       fmt::format("kv_heads ({}) and tp ({}) must divide one another", spec.kv_heads, st.tp));
  need(p, spec.ffn % st.tp == 0, fmt::format("ffn ({}) must be a multiple of tp ({})", spec.ffn, st.tp));
  need(p, spec.layers % (static_cast<std::int64_t>(st.pp) * st.virtual_stages) == 0,
       fmt::format("layers ({}) must be a multiple of pp x virtual stages ({} x {})", spec.layers, st.pp,
                   st.virtual_stages));
  need(p, spec.seq % (st.cp > 1 ? 2 * st.cp : 1) == 0,
       fmt::format("sequence ({}) must be a multiple of 2 x cp ({}) (load-balanced causal split)", spec.seq,
                   st.cp));
  need(p, !st.sequence_parallel || st.tp > 1, "--sequence-parallel needs tp > 1");
  need(p, !st.sequence_parallel || (spec.seq / st.cp) % st.tp == 0,
       fmt::format("sequence parallelism needs the local sequence ({}) to be a multiple of tp ({})",
                   spec.seq / st.cp, st.tp));
  const std::int64_t per_step = static_cast<std::int64_t>(st.dp) * st.micro_batch;
  need(p, st.global_batch > 0 && st.global_batch % per_step == 0,
       fmt::format("global batch ({}) must be a positive multiple of dp x micro-batch ({} x {})",
                   st.global_batch, st.dp, st.micro_batch));
  need(p, st.ep == 1 || spec.moe(), "--ep needs a mixture-of-experts model (experts > 1)");
  need(p, st.dp % st.ep == 0, fmt::format("ep ({}) must divide dp ({})", st.ep, st.dp));
  need(p, !spec.moe() || spec.experts % st.ep == 0,
       fmt::format("experts ({}) must be a multiple of ep ({})", spec.experts, st.ep));
  need(p, (st.schedule == PipelineSchedule::kInterleaved) == (st.virtual_stages > 1),
       "virtual stages > 1 go with the interleaved schedule (and only with it)");
  if (st.global_batch > 0 && st.global_batch % per_step == 0) {
    const auto problem =
        schedule_problem(st.schedule, st.pp, static_cast<int>(st.micro_batches()), st.virtual_stages);
    need(p, problem.empty(), problem);
  }
  return fmt::format("{}", fmt::join(p, "\n"));
}

reduce::Matrix megatron_placement(const hw::Topology& topo, const LlmStrategy& st) {
  const auto levels = topo.levels();
  reduce::Matrix m(4, std::vector<int>(levels.size(), 1));
  int left[4] = {st.pp, st.dp, st.cp, st.tp};
  for (int lvl = static_cast<int>(levels.size()) - 1; lvl >= 0; --lvl) {
    int room = levels[static_cast<std::size_t>(lvl)].count;
    for (int axis : {kAxisTp, kAxisCp, kAxisDp, kAxisPp}) {
      const int f = std::gcd(room, left[axis]);
      m[static_cast<std::size_t>(axis)][static_cast<std::size_t>(lvl)] = f;
      room /= f;
      left[axis] /= f;
    }
  }
  return m;
}

double model_flops_per_step(const TransformerSpec& spec, std::int64_t global_batch) {
  const double h = static_cast<double>(spec.hidden), s = static_cast<double>(spec.seq);
  const double f = static_cast<double>(spec.ffn), kv = static_cast<double>(spec.kv_dim());
  const double mlp_mats = spec.act == models::zoo::MlpActivation::kSwiglu ? 3 : 2;
  const double experts = spec.moe() ? static_cast<double>(spec.top_k) : 1;
  const double per_token_params = (2 * h * h + 2 * h * kv) + experts * mlp_mats * h * f;
  const double tokens = static_cast<double>(global_batch) * s;
  const double L = static_cast<double>(spec.layers);
  const double fwd = 2 * tokens * L * per_token_params +
                     4 * static_cast<double>(global_batch) * s * s * h * L +
                     2 * tokens * h * static_cast<double>(spec.vocab);
  return 3 * fwd;
}

StepDescription describe_llm_step(const TransformerSpec& spec, const LlmStrategy& st, const hw::Topology&,
                                  const models::CostModel& cost, const LlmCosts& costs,
                                  const reduce::Placement& placement, bool representative_only) {
  return StepLowering(spec, st, cost, costs, placement, representative_only).run();
}

double uncontended_step_seconds(const TransformerSpec& spec, const LlmStrategy& st, const hw::Topology& topo,
                                const models::CostModel& cost, const LlmCosts& costs,
                                const reduce::Matrix& placement, AloneTimes& alone) {
  const std::vector<int> axes = {st.pp, st.dp, st.cp, st.tp};
  const std::vector<hw::Level> levels(topo.levels().begin(), topo.levels().end());
  const auto description =
      describe_llm_step(spec, st, topo, cost, costs, reduce::Placement(levels, axes, placement), true);
  const auto graph = build_step_graph(topo, description, CommTiming::kAlone, true, &alone);
  return sim::simulate(topo, graph.graph).seconds();
}

LlmStepResult simulate_llm_step(const TransformerSpec& spec, const LlmStrategy& st, const hw::Topology& topo,
                                const models::CostModel& cost, const LlmCosts& costs,
                                const LlmStepOptions& options) {
  if (auto problems = strategy_problems(spec, st, topo); !problems.empty())
    throw std::invalid_argument(problems);
  LlmStepResult r;
  r.strategy = st;
  r.placement = options.placement ? *options.placement : megatron_placement(topo, st);
  const std::vector<int> axes = {st.pp, st.dp, st.cp, st.tp};
  const std::vector<hw::Level> levels(topo.levels().begin(), topo.levels().end());
  const reduce::Placement placement(levels, axes, r.placement);
  r.placement_text = reduce::format_matrix(r.placement);
  r.memory = llm_memory(spec, st, costs.layer, costs.edge);
  r.capacity = topo.gpu().hbm_capacity;
  r.fits = r.memory.total() <= r.capacity;
  r.model_flops = model_flops_per_step(spec, st.global_batch);
  if (!r.fits && !options.simulate_when_oom) return r;
  const auto description = describe_llm_step(spec, st, topo, cost, costs, placement, false);
  r.graph = build_step_graph(topo, description, options.comm_timing, !options.record_timeline, options.alone);
  r.isolated = r.graph.isolated;
  r.tasks = r.graph.graph.size();
  sim::SimOptions so;
  so.record_timeline = true;
  r.sim = sim::simulate(topo, r.graph.graph, so);
  r.simulated = true;
  r.step_seconds = r.sim.seconds();
  r.breakdown = breakdown(r.graph, r.sim, 0);
  if (!options.record_timeline) r.sim.timeline.clear();
  const double peak = topo.gpu().peak_flops(st.dtype);
  r.mfu = r.model_flops / (r.step_seconds * st.gpus() * peak);
  r.tokens_per_second = static_cast<double>(st.global_batch) * static_cast<double>(spec.seq) / r.step_seconds;
  return r;
}

}  // namespace strata::search::parallel
