// Per-operator parallel plans (FlexFlow's SOAP strategies: Jia, Zaharia, Aiken, "Beyond Data and Model
// Parallelism for Deep Neural Networks", SysML 2019, arXiv 1807.05358, §3-4). Every compute node of a
// models/ graph gets a configuration: a degree per parallel dimension of its operator (OpDef::parallel_dims,
// models/ir/op_def.h) and a machine view, a strided block of GPU ranks (Unity's MachineView, OSDI'22). Part p
// of a node runs on rank start + p x stride; parts are numbered row-major over the node's dimensions.
// docs/parallel.md, "Per-operator plans and MCMC".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/ir/graph.h"

namespace strata::search::parallel {

// Up to this many GPUs a node may use any strided block of ranks; beyond it only aligned blocks and evenly
// spread parts (PlanSpace).
inline constexpr int kAllViewsUpTo = 16;

struct OpConfig {
  std::vector<int> degrees;  // per parallel dimension of the node (PlanSpace::dims)
  int start = 0;             // first GPU rank
  int stride = 1;            // rank distance between consecutive parts
  int parts() const;
  int device(int part) const { return start + part * stride; }
  bool operator==(const OpConfig&) const = default;
};

// [lo, hi) per axis of a tensor.
struct Block {
  std::vector<std::int64_t> lo, hi;
  double elements() const;
};
// Elements in both blocks (0 when disjoint).
double overlap_elements(const Block& a, const Block& b);

// The planned nodes of a graph with their parallel dimensions and valid configurations.
class PlanSpace {
 public:
  // gpus: how many GPU ranks a view may use (the topology's count). Degrees are powers of two that divide
  // the dimension's extent and every input axis it splits; a config's parts fit in `gpus`. Views: every start
  // and power-of-two stride up to kAllViewsUpTo GPUs, aligned blocks and evenly spread parts beyond.
  PlanSpace(const models::Graph& graph, int gpus);

  const models::Graph& graph() const { return *graph_; }
  int gpus() const { return gpus_; }
  // Planned nodes in topological order: every node except those of constant operators (OpKind::kConstant),
  // whose outputs are materialized once on every GPU.
  std::span<const models::NodeId> nodes() const { return nodes_; }
  int size() const { return static_cast<int>(nodes_.size()); }
  // Index among nodes() of a graph node, -1 when not planned.
  int index_of(models::NodeId n) const { return index_[static_cast<std::size_t>(n)]; }
  std::span<const models::ParallelDim> dims(int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::span<const OpConfig> configs(int i) const { return configs_[static_cast<std::size_t>(i)]; }
  // Whether dims came from the operator's trait (else the default rule).
  bool declared(int i) const { return declared_[static_cast<std::size_t>(i)] != 0; }
  const OpConfig& config(int i, int choice) const {
    return configs_[static_cast<std::size_t>(i)][static_cast<std::size_t>(choice)];
  }

  // The part's multi-index (one per dimension) and the blocks it reads and writes.
  std::vector<int> part_index(int i, const OpConfig& c, int part) const;
  Block output_block(int i, const OpConfig& c, int part, int output = 0) const;
  Block input_block(int i, const OpConfig& c, int part, int input) const;
  // Product of the degrees of the node's reduction dimensions (1: outputs are complete per part).
  int reduction_degree(int i, const OpConfig& c) const;

 private:
  const models::Graph* graph_;
  int gpus_;
  std::vector<models::NodeId> nodes_;
  std::vector<int> index_;
  std::vector<std::vector<models::ParallelDim>> dims_;
  std::vector<std::vector<OpConfig>> configs_;
  std::vector<char> declared_;
};

// A configuration per planned node: choice[i] indexes PlanSpace::configs(i).
struct OpPlan {
  std::vector<int> choice;
  bool operator==(const OpPlan&) const = default;
};

// Data parallelism: every node split along its sample dimension over the largest power of two <= gpus that
// divides the batch, on ranks 0, 1, ...; nodes without a sample dimension run whole on rank 0.
OpPlan data_parallel_plan(const PlanSpace& space);
// FlexFlow's expert baseline (Krizhevsky, "One weird trick for parallelizing convolutional neural networks",
// arXiv 1404.5997): data parallelism everywhere except matrix products with a trainable weight operand and
// embeddings, whose parameter dimension (output columns, embedding features) is split over all GPUs instead.
OpPlan expert_plan(const PlanSpace& space);

// One line per planned node: "conv1 (conv2d) batch=4 rows=1 -> gpus 0-3".
std::string describe_config(const PlanSpace& space, int i, const OpConfig& c);
std::string describe_plan(const PlanSpace& space, const OpPlan& plan);

}  // namespace strata::search::parallel
