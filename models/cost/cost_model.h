// Per-operator time on one GPU. A roofline — FLOPs over (peak x efficiency) against bytes over (HBM
// bandwidth x efficiency; with a cache level in the device spec, kernels whose bytes fit in it at the cache's
// bandwidth), plus the launch overhead — with efficiencies that depend on the operator kind
// and saturate with kernel size (small kernels cannot fill the GPU). A measured-profile database
// (JSON, docs/models.md; measured outside strata) overrides the roofline wherever it has an entry for the
// exact operator, attributes, input types and device.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hw/gpu_spec.h"
#include "models/ir/graph.h"
#include "sim/compute_model.h"

namespace strata::models {

// eff(t) = max * t / (t + half), t = the kernel's ideal (peak-rate) time in seconds.
struct Efficiency {
  double max = 1.0;
  double half_seconds = 0.0;
  double at(double ideal_seconds) const {
    return half_seconds <= 0 ? max : max * ideal_seconds / (ideal_seconds + half_seconds);
  }
};

struct KindEfficiency {
  Efficiency compute, memory;
};

struct RooflineParams {
  // Indexed by OpKind.
  std::array<KindEfficiency, 7> by_kind;
  // Per operator (its registered name), e.g. fitted by `strata validate calibrate-cost`; an entry here wins
  // over the operator's kind (models/cost/cost_params.h reads and writes both).
  // Keys are curve names (cost_curve_name below): an instance of variant "global" of avgpool2d is priced by
  // "avgpool2d:global" when there is one, else by "avgpool2d", else by the kind's curve.
  std::map<std::string, KindEfficiency, std::less<>> by_op;
  const KindEfficiency& efficiency(const OpDef& op, std::string_view variant = {}) const;
  static RooflineParams defaults();
};

// The kernel variant of a node (OpDef::cost_variant; "" for the operator's usual kernel), and the name of the
// efficiency curve it is priced with: the operator's, or "<name>:<variant>" (e.g. "avgpool2d:global").
std::string_view cost_variant_of(const Graph& g, const Node& n);
std::string cost_curve_name(const OpDef& op, std::string_view variant);
std::string cost_curve_name(const Graph& g, const Node& n);

// Key of a measured kernel: "op|attrs|input types|device", e.g.
// "matmul|activation=none,trans_a=0,trans_b=0|f16[2048,4096];f16[4096,4096]|a100-sxm4-80gb".
std::string profile_key(const Graph& g, const Node& n, std::string_view device);

class ProfileDb {
 public:
  // JSON: {"entries": [{"op": ..., "attrs": ..., "inputs": ["f16[..]", ...], "device": ..., "seconds":
  // ...}]}. Throws ConfigError naming the file, entry index and field; a key repeated in one JSON object and
  // two entries for the same kernel are errors too.
  static ProfileDb load(const std::string& path);
  // The same from text; source names it in errors.
  static ProfileDb parse(std::string_view text, std::string_view source);
  void save(const std::string& path) const;  // atomically
  void add(const std::string& key, double seconds) { entries_[key] = seconds; }
  const double* find(const std::string& key) const;
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, double> entries_;
};

struct OpCost {
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
  bool measured = false;  // from the profile database
  bool is_view = false;   // no kernel (reshape, layout-only transpose)
  bool compute_bound = false;
};

class CostModel {
 public:
  explicit CostModel(hw::GpuSpec gpu, RooflineParams params = RooflineParams::defaults(),
                     const ProfileDb* db = nullptr)
      : gpu_(std::move(gpu)), params_(params), db_(db) {}
  // On the model's GPU.
  OpCost node_cost(const Graph& g, const Node& n) const { return node_cost(g, n, gpu_); }
  // On `gpu` (profile entries are looked up under its name).
  OpCost node_cost(const Graph& g, const Node& n, const hw::GpuSpec& gpu) const;
  // The same with the roofline's compute peak taken at `compute` instead of the node's element type (e.g. a
  // bf16 graph's GEMMs run in fp8, as Transformer Engine does); profile entries still win.
  OpCost node_cost(const Graph& g, const Node& n, const hw::GpuSpec& gpu, hw::DType compute) const;
  const hw::GpuSpec& gpu() const { return gpu_; }

 private:
  hw::GpuSpec gpu_;
  RooflineParams params_;
  const ProfileDb* db_;
};

// The cost model as the simulator's sim::ComputeCost: operator kernels put on a sim::TaskGraph are timed
// by CostModel::node_cost on the GPU the simulator runs them on. add() registers a node (the cost model and
// the node's graph must outlive this object; nodes of several graphs may be mixed) and returns the work to
// give TaskGraph::add_compute; ComputeWork::kernel is the registration's index.
class KernelCost final : public sim::ComputeCost {
 public:
  explicit KernelCost(const CostModel& cost) : cost_(cost) {}
  sim::ComputeWork add(const Graph& g, NodeId node);
  // Throws std::invalid_argument for work that add() did not return.
  double seconds(const sim::ComputeWork& work, const hw::GpuSpec& gpu) const override;

 private:
  struct Kernel {
    const Graph* graph;
    NodeId node;
  };
  const CostModel& cost_;
  std::vector<Kernel> kernels_;
};

// Grouped convolutions (groups > 1, more than one input channel per group) run as one implicit GEMM per
// group: M = N*Ho*Wo output pixels, N_g = O/groups output channels, K_g = (C/groups)*kh*kw. GEMM kernels
// compute whole tiles, the smallest being the device's gemm_tile (hw::GemmTile: n x k in (N, K); about
// 32 x 16 on a GPU, one vector of f32 accumulators by 1 on a CPU), so a group narrower than a tile wastes
// the padding: utilization = N_g / roundup(N_g, tile.n) * K_g / roundup(K_g, tile.k), which divides the
// compute efficiency (docs/subst.md, "merge_gconv"). Depth-wise convolutions (one input channel per group)
// have dedicated direct kernels and are not GEMMs: utilization 1. Other nodes: 1.
double grouped_conv_tile_utilization(const Graph& g, const Node& n, const hw::GemmTile& tile);

// A split whose parts need no copy: each output is the input pointer plus an offset (as in TASO and
// torch.split), with the input's strides. Always when the parts are contiguous blocks (every dimension before
// the axis is 1, e.g. channels of a batch-1 NCHW tensor); otherwise the parts are row-strided, which is free
// only when every consumer reads strided operands at full bandwidth (element-wise kernels, GEMMs via their
// leading dimension) and no part is a graph output. Its cost is zero.
bool split_is_view(const Graph& g, const Node& n);

// A node that launches no kernel: it only reinterprets its input's memory.
bool is_view(const Node& n);

}  // namespace strata::models
