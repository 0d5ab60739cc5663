#include "python/bindings.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <pybind11/stl.h>

#include "experiments/collective_sweep.h"
#include "experiments/experiment.h"
#include "experiments/sweep.h"
#include "experiments/synth_report.h"
#include "experiments/system_report.h"
#include "hw/config_error.h"
#include "util/atomic_file.h"
#include "util/path.h"
#include "util/version.h"

namespace py = pybind11;

namespace strata::python {

py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list list;
      for (const auto& x : j) list.append(to_python(x));
      return list;
    }
    case nlohmann::json::value_t::object: {
      py::dict dict;
      for (const auto& [key, value] : j.items()) dict[py::str(key)] = to_python(value);
      return dict;
    }
    default:
      throw std::logic_error("to_python: a JSON value of no known type");
  }
}

namespace {

// strata's data files (configs/, experiments/plots/) are found from the program (util::find_data_file):
// inside the build tree the module stands for a program of the build; installed, for <prefix>/bin/strata.
void anchor_data_files(const std::string& module_file) {
  namespace fs = std::filesystem;
  const fs::path module = fs::absolute(module_file).lexically_normal();
  const auto rel = module.lexically_relative(fs::path(STRATA_BINARY_DIR).lexically_normal());
  if (!rel.empty() && *rel.begin() != "..")
    util::set_executable_path(module);
  else
    util::set_executable_path((module.parent_path() / STRATA_MODULE_TO_BINDIR / "strata").lexically_normal());
}

hw::Rank checked_rank(const hw::Topology& topo, int rank) {
  if (rank < 0 || rank >= topo.num_gpus())
    throw ConfigError(
        fmt::format("rank {} is not a GPU of {} (0..{})", rank, topo.name(), topo.num_gpus() - 1));
  return rank;
}

py::dict gpu_dict(const hw::GpuSpec& g) {
  py::dict d;
  d["name"] = g.name;
  d["description"] = g.description;
  d["arch"] = std::string(hw::arch_name(g.arch));
  d["hbm_capacity_bytes"] = g.hbm_capacity;
  d["hbm_bandwidth_Bps"] = g.hbm_bandwidth;
  d["peak_bf16_flops"] = g.peak_flops(hw::DType::kBf16);
  return d;
}

py::list levels_list(const hw::Topology& topo) {
  py::list out;
  for (const auto& l : topo.levels()) {
    py::dict d;
    d["name"] = l.name;
    d["count"] = l.count;
    out.append(d);
  }
  return out;
}

// One row of the nccl-tests table, units in the key names (GB = 10^9 B, as nccl-tests).
py::dict row_dict(const experiments::SweepConfig& cfg, const experiments::SweepRow& r) {
  py::dict d;
  d["size_bytes"] = r.bytes;
  d["count_elements"] = r.count;
  d["type"] = std::string(hw::dtype_name(cfg.dtype));
  d["redop"] = std::string(experiments::redop_column(cfg.op));
  d["root"] = experiments::root_column(cfg.op);
  d["time_us"] = r.seconds * 1e6;
  d["algbw_GBps"] = r.algbw / 1e9;
  d["busbw_GBps"] = r.busbw / 1e9;
  d["algorithm"] = r.algorithm;
  d["protocol"] = std::string(sim::protocol_name(r.protocol));
  if (cfg.nccl_rating)
    d["nccl_time_us"] = r.nccl_seconds ? py::cast(*r.nccl_seconds * 1e6) : py::object(py::none());
  return d;
}

py::list collective(const hw::Topology& topo, const experiments::CollectiveQuery& q, const std::string& trace,
                    bool nccl_rating) {
  if (!trace.empty()) util::check_output_path(trace);  // refused before the sweep runs, as the CLI does
  auto cfg = experiments::sweep_config(topo, q);
  cfg.nccl_rating = nccl_rating;
  const auto rows = without_gil([&] {
    auto r = experiments::run_sweep(topo, cfg);
    if (!trace.empty() && !r.empty()) experiments::write_collective_trace(topo, cfg, r.back(), trace);
    return r;
  });
  py::list out;
  for (const auto& r : rows) out.append(row_dict(cfg, r));
  return out;
}

py::object synthesize_json(const experiments::SynthQuery& q) {
  return to_python(without_gil([&] { return experiments::synth_json(experiments::synthesize(q), q.all); }));
}

void add_system_bindings(py::module_& m) {
  py::class_<hw::Topology>(m, "System", "A hardware system loaded from a YAML file (strata hw show)")
      .def_property_readonly("name", &hw::Topology::name)
      .def_property_readonly("num_gpus", &hw::Topology::num_gpus)
      .def_property_readonly("nodes", &hw::Topology::nodes)
      .def_property_readonly("gpus_per_node", &hw::Topology::gpus_per_node)
      .def_property_readonly("gpu", [](const hw::Topology& t) { return gpu_dict(t.gpu()); })
      .def_property_readonly("levels", &levels_list)
      .def("show", &experiments::describe_system, "The text `strata hw show` prints")
      .def(
          "route_bandwidth_Bps",
          [](const hw::Topology& t, int a, int b) {
            return t.route_bandwidth(checked_rank(t, a), checked_rank(t, b));
          },
          py::arg("src"), py::arg("dst"), "Bottleneck bandwidth of the route from GPU src to GPU dst, B/s")
      .def(
          "route_latency_s",
          [](const hw::Topology& t, int a, int b) {
            return t.route_latency(checked_rank(t, a), checked_rank(t, b));
          },
          py::arg("src"), py::arg("dst"), "Latency of the route from GPU src to GPU dst, seconds")
      .def("__repr__", [](const hw::Topology& t) {
        return fmt::format("<strata.System {}: {} x {} {}>", t.name(), t.nodes(), t.gpus_per_node(),
                           t.gpu().name);
      });
  m.def("load_system", &experiments::load_cluster, py::arg("path"), py::arg("nodes") = 0,
        "Load a system YAML (configs/hw/*.yaml); nodes > 0 overrides the file's node count");
  m.def(
      "_collective",
      [](const hw::Topology& topo, std::string op, std::string algo, std::string protocol, std::string sizes,
         std::string dtype, std::string granularity, std::string group, int channels, std::string trace,
         bool nccl_rating) {
        return collective(topo, {op, algo, protocol, sizes, dtype, granularity, group, channels}, trace,
                          nccl_rating);
      },
      py::arg("system"), py::arg("op"), py::arg("algo"), py::arg("protocol"), py::arg("sizes"),
      py::arg("dtype"), py::arg("granularity"), py::arg("group"), py::arg("channels"), py::arg("trace"),
      py::arg("nccl_rating"));
}

void add_synth_and_run_bindings(py::module_& m) {
  m.def(
      "synthesize",
      [](std::string hw, std::string axes, std::string reduce, std::string bytes, std::string algo, int nodes,
         int top, int max_size, std::string canonical, bool all, bool split_levels,
         std::vector<std::string> joint) {
        const experiments::SynthQuery q{hw,    axes, reduce,   bytes, algo,        canonical,
                                        nodes, top,  max_size, all,   split_levels};
        if (!joint.empty())
          return to_python(
              without_gil([&] { return experiments::joint_json(experiments::synthesize_joint(q, joint)); }));
        return synthesize_json(q);
      },
      py::arg("hw"), py::arg("axes"), py::arg("reduce") = "0", py::arg("bytes") = "4GiB",
      py::arg("algo") = "ring", py::arg("nodes") = 0, py::arg("top") = 10, py::arg("max_size") = 5,
      py::arg("canonical") = "none", py::arg("all") = false, py::arg("split_levels") = false,
      py::arg("joint") = std::vector<std::string>{},
      "Placements and reduction programs ranked on the simulator: the records of `strata synth --format "
      "json`; "
      "with joint=[\"AXES:BYTES\", ...] one placement for several reductions (strata synth --joint)");
  m.def(
      "run_experiment",
      [](std::string path, std::string output, bool plots) {
        return without_gil([&] {
          return experiments::run_experiment(path, experiments::RunOptions{output, plots});
        });
      },
      py::arg("path"), py::arg("output") = "results", py::arg("plots") = true,
      "Run an experiment YAML (strata run); returns the results folder");
  m.def(
      "dry_run",
      [](std::string path, std::string output) {
        return experiments::dry_run(path, experiments::RunOptions{output, false});
      },
      py::arg("path"), py::arg("output") = "results",
      "The points of a sweep, their store keys and which are already computed (strata run --dry-run)");
  m.def(
      "check_experiment",
      [](std::string path) {
        const auto file = experiments::check_experiment(path);
        py::dict d;
        d["kind"] = file.kind();
        d["name"] = file.name();
        return d;
      },
      py::arg("path"), "Validate an experiment file and the files it names (strata run --check)");
}

}  // namespace
}  // namespace strata::python

PYBIND11_MODULE(_strata, m) {
  m.doc() = "strata's C++ core; use the `strata` package";
  // strata's errors for bad input (ConfigError, util::InputError and other std::invalid_argument) are
  // strata.Error with the message the command line prints after "strata: error: ".
  static py::exception<strata::ConfigError> error(m, "Error", PyExc_Exception);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const strata::ConfigError& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.attr("__version__") = std::string(strata::util::kVersion);
  m.def("_anchor_data_files", &strata::python::anchor_data_files, py::arg("module_file"));
  strata::python::add_system_bindings(m);
  strata::python::add_synth_and_run_bindings(m);
  strata::python::add_model_bindings(m);
}
