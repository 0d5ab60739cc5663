// Models, graph optimization and parallel strategies (see bindings.h).
#include <optional>
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "experiments/model_report.h"
#include "experiments/optimize_report.h"
#include "experiments/parallel_mcmc_report.h"
#include "experiments/parallel_report.h"
#include "experiments/system_report.h"
#include "models/zoo/transformer_spec.h"
#include "python/bindings.h"
#include "search/subst/output_check.h"
#include "util/atomic_file.h"

namespace py = pybind11;

namespace strata::python {
namespace {

// A loaded model: the forward graph and, for transformers, the spec it was built from.
struct Model {
  models::Graph graph;
  std::optional<models::zoo::TransformerSpec> spec;
};

py::dict memory_dict(const models::MemoryProfile& m) {
  py::dict d;
  d["peak_bytes"] = m.peak();
  d["parameters_bytes"] = m.params;
  d["optimizer_state_bytes"] = m.optimizer_state;
  d["inputs_bytes"] = m.inputs;
  d["constants_bytes"] = m.constants;
  d["transient_bytes"] = m.peak_transient;
  return d;
}

py::dict summary_dict(const Model& model) {
  const auto s = experiments::summarize_model(model.graph);
  py::dict d;
  d["name"] = s.name;
  d["nodes"] = s.nodes;
  d["parameters"] = s.parameters;
  d["parameter_bytes"] = s.parameter_bytes;
  d["forward_flops"] = s.flops;
  d["matmul_macs"] = s.matmul_macs;
  d["activation_bytes"] = s.activation_bytes;
  d["memory"] = memory_dict(s.memory);
  py::list ops;
  for (const auto& r : s.operators) {
    py::dict o;
    o["op"] = r.op;
    o["count"] = r.count;
    o["flops"] = r.flops;
    o["bytes"] = r.bytes;
    ops.append(o);
  }
  d["operators"] = ops;
  if (model.spec) {
    d["transformer"] = models::zoo::format_transformer_spec(*model.spec);
    d["transformer_parameters"] = models::zoo::transformer_params(*model.spec).total;
  } else {
    d["transformer"] = py::none();
  }
  return d;
}

Model load_model(std::string model, std::int64_t batch, std::int64_t seq, std::string dtype,
                 std::vector<std::string> dims) {
  Model m;
  m.graph = without_gil([&] { return experiments::load_model({model, dtype, dims, batch, seq}, &m.spec); });
  return m;
}

py::dict simulate_model(experiments::ModelSimQuery q, int top, const std::string& trace) {
  if (!trace.empty()) util::check_output_path(trace);  // refused before the work, as the CLI does
  q.record_timeline = !trace.empty();
  const auto report = without_gil([&] {
    auto r = experiments::simulate_model(q);
    if (!trace.empty()) experiments::write_model_trace(r, trace);
    return r;
  });
  const auto& r = report.result;
  py::dict d;
  d["model"] = report.forward.name();
  d["system"] = report.topo.name();
  d["gpu"] = report.topo.gpu().name;
  d["batch"] = report.batch;
  d["train"] = q.train;
  d["step_seconds"] = r.seconds;
  d["flops"] = r.flops;
  d["samples_per_second"] = static_cast<double>(report.batch) / r.seconds;
  d["memory"] = memory_dict(r.memory);
  d["fits"] = r.memory.peak() <= report.topo.gpu().hbm_capacity;
  py::list ops;
  for (const auto& b : r.by_op) {
    py::dict o;
    o["op"] = b.op;
    o["count"] = b.count;
    o["seconds"] = b.seconds;
    o["flops"] = b.flops;
    o["bytes"] = b.bytes;
    o["measured"] = b.measured;
    ops.append(o);
  }
  d["operators"] = ops;
  d["text"] = experiments::describe_model_sim(q, report, top);
  return d;
}

// The optimized graph goes to `output` (ONNX) and `listing` (text) when they are not empty, as with the CLI's
// --output and --listing.
py::dict optimize(const experiments::OptimizeQuery& q, bool check, std::uint64_t seed,
                  const std::string& output, const std::string& listing) {
  namespace ss = search::subst;
  for (const auto& path : {output, listing})  // a bad output path is refused before the search runs
    if (!path.empty()) util::check_output_path(path);
  const auto setup = without_gil([&] { return experiments::prepare_optimize(q); });
  const auto res =
      without_gil([&] { return ss::optimize(setup.graph, setup.rules, setup.cost, setup.options); });
  py::dict d;
  d["model"] = setup.graph.name();
  d["device"] = setup.topo.gpu().name;
  d["rules"] = setup.rules.size();
  d["nodes_before"] = setup.graph.nodes().size();
  d["nodes_after"] = res.graph.nodes().size();
  d["cost_before_seconds"] = res.cost_before;
  d["cost_after_seconds"] = res.cost_after;
  d["speedup"] = res.cost_after > 0 ? res.cost_before / res.cost_after : 0.0;
  // The best graph found when it saved less than the minimum gain and the input was returned; else None.
  d["declined_cost_seconds"] = res.declined_cost ? py::cast(*res.declined_cost) : py::none();
  d["explored"] = res.explored;
  d["generated"] = res.generated;
  d["search_seconds"] = res.seconds;
  py::list applied;
  for (const auto& a : res.applied) {
    py::dict x;
    x["rule"] = a.rule;
    x["nodes"] = a.nodes;
    applied.append(x);
  }
  d["applied"] = applied;
  without_gil([&] {
    if (!output.empty()) experiments::export_optimized(res.graph, output);
    if (!listing.empty()) util::write_file_atomically(listing, ss::graph_listing(res.graph));
    return 0;
  });
  if (check) {
    const auto c =
        without_gil([&] { return ss::check_same_function(setup.graph, res.graph, {.seed = seed}); });
    d["check_passed"] = c.pass();
    d["check"] = c.verdict();
  }
  return d;
}

void add_model_functions(py::module_& m) {
  py::class_<Model>(m, "Model", "A model's forward graph (strata model show)")
      .def_property_readonly("name", [](const Model& x) { return x.graph.name(); })
      .def_property_readonly("num_nodes", [](const Model& x) { return x.graph.nodes().size(); })
      .def_property_readonly("parameters", [](const Model& x) { return x.graph.param_count(); })
      .def("summary", &summary_dict, "Nodes, parameters, FLOPs, memory and per-operator totals")
      .def(
          "show",
          [](const Model& x, bool nodes) { return experiments::describe_model(x.graph, nodes, x.spec); },
          py::arg("nodes") = false, "The text `strata model show` prints")
      .def("__repr__", [](const Model& x) {
        return "<strata.Model " + x.graph.name() + ": " + std::to_string(x.graph.nodes().size()) + " nodes>";
      });
  m.def("load_model", &load_model, py::arg("model"), py::arg("batch") = 0, py::arg("seq") = 0,
        py::arg("dtype") = "f32", py::arg("dims") = std::vector<std::string>{},
        "A zoo model, transformer:..., model YAML or ONNX file (0: the model's batch/seq)");
  m.def(
      "simulate_model",
      [](std::string model, std::string hw, bool train, std::string optimizer, int gpu, std::string dtype,
         std::int64_t batch, std::int64_t seq, std::string profile, std::string cost_params, int top,
         std::string trace) {
        experiments::ModelSimQuery q;
        q.model = {model, dtype, {}, batch, seq};
        q.hw = hw, q.profile = profile, q.cost_params = cost_params, q.optimizer = optimizer;
        q.train = train, q.gpu = gpu;
        return simulate_model(q, top, trace);
      },
      py::arg("model"), py::arg("hw"), py::arg("train") = false, py::arg("optimizer") = "adam",
      py::arg("gpu") = 0, py::arg("dtype") = "f16", py::arg("batch") = 0, py::arg("seq") = 0,
      py::arg("profile") = "", py::arg("cost_params") = "", py::arg("top") = 15, py::arg("trace") = "",
      "One inference pass or training step on one GPU (strata model sim)");
  m.def(
      "optimize",
      [](std::string model, std::string hw, std::string rules, double alpha, int budget, std::int64_t batch,
         std::int64_t seq, std::string xfers, std::string cost_params, bool check, std::uint64_t seed,
         std::string output, std::string listing, double min_gain_percent) {
        return optimize({model, hw, rules, cost_params, xfers, alpha, budget, batch, seq, min_gain_percent},
                        check, seed, output, listing);
      },
      py::arg("model"), py::arg("hw"), py::arg("rules") = "", py::arg("alpha") = 1.05,
      py::arg("budget") = 1000, py::arg("batch") = 0, py::arg("seq") = 0, py::arg("xfers") = "all",
      py::arg("cost_params") = "", py::arg("check") = true, py::arg("seed") = 1, py::arg("output") = "",
      py::arg("listing") = "", py::arg("min_gain_percent") = 100 * search::subst::kDefaultMinGain,
      "Cost-based backtracking search over substitution rules (strata optimize)");
}

void add_parallel_functions(py::module_& m) {
  m.def(
      "simulate_step",
      [](std::string model, std::string hw, std::int64_t global_batch, int nodes, int tp, int pp, int dp,
         int cp, int ep, int micro_batch, int virtual_stages, std::string schedule, std::string recompute,
         bool sequence_parallel, int zero, double bucket_mb, bool no_overlap, std::string placement,
         std::string dtype, std::int64_t seq, std::string trace) {
        if (!trace.empty()) util::check_output_path(trace);  // refused before the work, as the CLI does
        experiments::StepQuery q;
        q.model = model, q.hw = hw, q.global_batch = global_batch, q.nodes = nodes;
        q.tp = tp, q.pp = pp, q.dp = dp, q.cp = cp, q.ep = ep, q.micro_batch = micro_batch;
        q.virtual_stages = virtual_stages, q.schedule = schedule, q.recompute = recompute;
        q.sequence_parallel = sequence_parallel, q.zero = zero, q.bucket_mb = bucket_mb;
        q.no_overlap = no_overlap, q.placement = placement, q.dtype = dtype, q.seq = seq;
        q.record_timeline = !trace.empty();
        return to_python(without_gil([&] {
          const auto report = experiments::simulate_step(q);
          if (!trace.empty()) experiments::write_step_trace(report, trace);
          return experiments::step_json(report);
        }));
      },
      py::arg("model"), py::arg("hw"), py::arg("global_batch"), py::arg("nodes") = 0, py::arg("tp") = 1,
      py::arg("pp") = 1, py::arg("dp") = 1, py::arg("cp") = 1, py::arg("ep") = 1, py::arg("micro_batch") = 1,
      py::arg("virtual_stages") = 1, py::arg("schedule") = "", py::arg("recompute") = "none",
      py::arg("sequence_parallel") = false, py::arg("zero") = 0, py::arg("bucket_mb") = 0.0,
      py::arg("no_overlap") = false, py::arg("placement") = "", py::arg("dtype") = "bf16", py::arg("seq") = 0,
      py::arg("trace") = "",
      "One training step under a strategy: the record of `strata sim step --format json`");
  m.def(
      "parallelize",
      [](std::string model, std::string hw, std::int64_t global_batch, int nodes, int top, std::string dtype,
         bool megatron_placement, std::int64_t seq, std::string search, std::int64_t proposals,
         std::int64_t seed, double time_limit) {
        if (experiments::parse_search_kind(search) == experiments::SearchKind::kMcmc) {
          const auto topo = experiments::load_cluster(hw, nodes);
          const experiments::McmcQuery q{model, global_batch, seq, proposals, seed, time_limit};
          return to_python(without_gil(
              [&] { return experiments::mcmc_json(q, topo, experiments::mcmc_search(q, topo)); }));
        }
        const experiments::SearchQuery q{model, hw, dtype, nodes, top, global_batch, seq, megatron_placement};
        return to_python(
            without_gil([&] { return experiments::search_json(experiments::search_strategies(q)); }));
      },
      py::arg("model"), py::arg("hw"), py::arg("global_batch"), py::arg("nodes") = 0, py::arg("top") = 10,
      py::arg("dtype") = "bf16", py::arg("megatron_placement") = false, py::arg("seq") = 0,
      py::arg("search") = "exhaustive", py::arg("proposals") = 20000, py::arg("seed") = 1,
      py::arg("time_limit") = 0.0,
      "Strategy search: the record of `strata parallelize --format json` (search exhaustive: LLM strategies "
      "of "
      "a transformer; mcmc: per-operator plans of any model)");
}

}  // namespace

void add_model_bindings(py::module_& m) {
  add_model_functions(m);
  add_parallel_functions(m);
}

}  // namespace strata::python
