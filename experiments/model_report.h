// Models as `strata model show|sim` and the Python API see them: one resolver for every model reference, the
// summary `model show` prints and the single-GPU simulation `model sim` runs, each declared once for both.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "experiments/option_ranges.h"
#include "hw/topology.h"
#include "models/ir/graph.h"
#include "models/simulate/graph_sim.h"
#include "models/simulate/memory.h"
#include "models/train/training.h"
#include "models/zoo/transformer_spec.h"

namespace strata::experiments {

// A model reference with the command line's options: zoo name, transformer:..., model YAML or ONNX file
// (models/zoo/model_ref.h); `dims` are NAME=VALUE[,NAME=VALUE] for symbolic ONNX dimensions.
struct ModelQuery {
  std::string model, dtype = "f32";
  std::vector<std::string> dims;
  std::int64_t batch = 0, seq = 0;  // 0: the model's default
};

// The forward graph; `spec` (if set) receives the transformer the reference names, if any. Throws ConfigError
// or std::invalid_argument naming the option (--dtype, --dim, --batch) and what was expected.
models::Graph load_model(const ModelQuery& query,
                         std::optional<models::zoo::TransformerSpec>* spec = nullptr);

// "1.23 M", "4.56 G": counts with SI prefixes, as the model commands print them.
std::string count_str(double n);

struct OperatorTotals {
  std::string op;
  int count = 0;
  double flops = 0, bytes = 0;
};

struct ModelSummary {
  std::string name;
  std::size_t nodes = 0;
  double parameters = 0, parameter_bytes = 0;
  double flops = 0;                       // forward pass
  double matmul_macs = 0;                 // multiply-adds of contractions (matmul, conv)
  double activation_bytes = 0;            // every activation value
  models::MemoryProfile memory;           // one forward pass
  std::vector<OperatorTotals> operators;  // by operator name
};

ModelSummary summarize_model(const models::Graph& g);
// What `strata model show` prints.
std::string describe_model(const models::Graph& g, bool list_nodes,
                           const std::optional<models::zoo::TransformerSpec>& spec);

// "adam" or "sgd" (--optimizer).
models::Optimizer parse_optimizer(const std::string& name);

// `strata model sim`: one inference pass or training step on one GPU of `hw`.
struct ModelSimQuery {
  ModelQuery model{.model = "", .dtype = "f16", .dims = {}, .batch = 0, .seq = 0};
  std::string hw, profile, cost_params, optimizer = "adam";
  bool train = false, record_timeline = false;
  int gpu = 0;
};

struct ModelSimReport {
  hw::Topology topo;
  models::Graph forward, graph;  // graph: forward, or the training step
  std::int64_t batch = 1;
  models::GraphSimResult result;
};

ModelSimReport simulate_model(const ModelSimQuery& query);
// `--trace`: the simulated step (run with record_timeline) as a Chrome/Perfetto trace at `path`.
void write_model_trace(const ModelSimReport& report, const std::string& path);
// What `strata model sim` prints (without the trace line); `top` operator types in the breakdown.
std::string describe_model_sim(const ModelSimQuery& query, const ModelSimReport& report, int top);

}  // namespace strata::experiments
