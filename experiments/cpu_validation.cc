// The `cpu-validation` and `gpu-validation` experiment kinds (configs/experiments/validate_cpu.yaml,
// validate_gpu.yaml; docs/replay.md §4): the cost model checked against this machine's CPU
// (oneDNN kernels) or GPU (cuBLAS/cuDNN, validate/replay_device.h) over a grid of models, what `strata
// validate profile --hw`, `validate graphs` and `validate calibrate-cost` do one model at a time. The two
// kinds differ only in the device they replay on. Optionally calibrates the cost model first
// (microbenchmarks, never the models checked), then per model: every distinct operator instance measured
// (profile_on_cpu) beside its predicted time, the whole graph measured (time_graph) beside its predicted
// time, and optionally the graph optimizers' candidates ranked.
//   ops.csv          model, op, node, instances, measured_us, predicted_us, error (predicted/measured - 1)
//   models.csv       per model: per-operator |error| median, mean, worst; whole graph measured / predicted
//   graphs.csv       (graphs:) every candidate: predicted, measured, spread, equivalence
//   graph_stats.csv  (graphs:) per model: top-1/3/5, Spearman, regret, the optimizers' measured speedups
//   cost_params.json the parameters used (the fit when calibrate:), for --cost-params
//   summary.md, ops_scatter.png, op_errors.png, candidates_scatter.png (graphs:)
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/experiment.h"
#include "experiments/optimize_report.h"
#include "experiments/option_ranges.h"
#include "hw/config_error.h"
#include "hw/system_loader.h"
#include "hw/units.h"
#include "models/cost/cost_params.h"
#include "models/zoo/model_ref.h"
#include "search/subst/xfers.h"
#include "util/path.h"
#include "validate/cost_calibration.h"
#include "validate/cpu_replay.h"
#include "validate/graph_check.h"
#include "validate/host_bench.h"
#include "validate/replay_device.h"
#include "validate/stats.h"

namespace strata::experiments {
namespace {

namespace v = validate;
namespace ss = search::subst;

// The issue 15 targets the summary checks.
constexpr double kOpErrorTarget = 0.15;  // per-operator median |error| on the zoo CNNs and BERT-base
constexpr double kTop1Target = 0.80;  // share of models whose predicted-fastest candidate is measured fastest

enum class Calibrate : std::uint8_t { kNo, kFull, kQuick };

struct ModelEntry {
  std::string ref, label;
  std::int64_t batch = 0, seq = 0;
  bool target = false;  // a zoo CNN or BERT-base: the per-operator error target applies
  models::Graph graph;
};

struct GraphsConfig {
  int sample = 5, path_steps = 16, repeat = 3, node_repeat = 10, warmup = 2;
  double min_gain = ss::kDefaultMinGain;  // both optimizers (search/subst/min_gain.h); YAML in percent
  std::string rules_path;
  std::vector<ss::Rule> rules;
};

struct Config {
  const v::ReplayDevice* device = &v::cpu_replay_device();
  std::string kind, name, description, hw_label, cost_params_label;
  hw::GpuSpec gpu;            // as the file gives it; with measure_host, replaced by the measurement in run
  bool measure_host = false;  // hw: measure (the CPU only): `strata validate host` first, in the run
  models::CostParams
      params;  // from cost_params:, or the built-in priors (replaced by the fit when calibrating)
  Calibrate calibrate = Calibrate::kNo;
  std::vector<ModelEntry> models;
  int repeat = 20, warmup = 3;
  int rounds = 3;  // passes over every model's instances (and the microbenchmarks); the smallest median kept
  std::uint64_t seed = 1;
  std::optional<GraphsConfig> graphs;
};

struct ModelResult {
  std::vector<v::OpError> ops;
  v::ErrorSummary errors;                          // over the distinct instances
  double whole_measured = 0, whole_predicted = 0;  // seconds, weight-only nodes folded
  double round_spread = 0;                 // median over the instances of (slowest round / fastest - 1)
  int fast = 0, reference = 0, views = 0;  // distinct instances on the device's library / the reference
  std::optional<v::GraphCheckReport> graphs;
};

struct Results {
  models::CostParams params;
  std::vector<v::FamilyFit> fits;
  std::size_t microbenchmarks = 0;
  std::string kernels, threads, cpu;  // the device's libraries (device->description()), OMP threads, CPU
  hw::GpuSpec gpu;                    // the device spec that priced everything (measured with hw: measure)
  std::string host_yaml;              // with hw: measure, the measured system file
  std::vector<ModelResult> models;
};

std::string csv_field(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string pct(double share) {
  return fmt::format("{:.1f}%", 100 * share);
}

// ---------------------------------------------------------------------------------------------------- parse

// hw: the system whose GPU entry prices the device: host-cpu for the CPU (default: strata's
// configs/validate/host-cpu.yaml), a GPU of the catalogue for the GPU (required).
hw::GpuSpec parse_hw(const ExperimentFile& file, Config& c) {
  const YamlReader& root = file.root();
  const auto h = root.maybe("hw");
  if (!h && c.device->system_file.empty())
    throw root.error(
        fmt::format("expected hw: a system whose gpu is the GPU {} replays on (e.g. "
                    "../hw/dgx-h100.yaml): its peaks price the operators",
                    file.kind()));
  if (h && h->as_string() == "measure") {
    if (!c.device->on_host_cpu)
      throw h->error(
          fmt::format("'measure' runs `strata validate host` on this CPU; {} needs the system of "
                      "the GPU it replays on",
                      file.kind()));
    c.measure_host = true;
    c.hw_label = "this CPU, measured in the run (strata validate host)";
    return hw::load_system(util::find_data_file(c.device->system_file).string()).gpu();  // its device name
  }
  c.hw_label = h ? h->as_string() : std::string(c.device->system_file);
  const hw::Topology topo =
      h ? file.load_system(*h) : hw::load_system(util::find_data_file(c.hw_label).string());
  if (auto why = v::pricing_mismatch(*c.device, topo.gpu(), "hw " + c.hw_label); !why.empty())
    throw h ? h->error(why) : root.error(why);
  return topo.gpu();
}

void parse_cost(const ExperimentFile& file, Config& c) {
  const YamlReader& root = file.root();
  c.params.device = c.gpu.name;
  c.params.roofline = models::RooflineParams::defaults();
  c.cost_params_label = "the built-in priors (uncalibrated)";
  if (auto cal = root.maybe("calibrate")) {
    const std::string s = cal->as_string();
    if (s == "true")
      c.calibrate = Calibrate::kFull;
    else if (s == "quick")
      c.calibrate = Calibrate::kQuick;
    else if (s != "false")
      throw cal->error(fmt::format("expected true, false or quick, got '{}'", s));
  }
  if (auto p = root.maybe("cost_params")) {
    if (c.calibrate != Calibrate::kNo)
      throw p->error("give either cost_params (a fitted file) or calibrate (fit in this run), not both");
    const std::string path = file.resolve_path(*p);
    try {
      c.params = models::load_cost_params(path);
    } catch (const ConfigError& e) {
      throw p->error(e.what());
    }
    if (c.params.device != c.gpu.name)
      throw p->error(fmt::format("the parameters were fitted on '{}', the system's device is '{}'",
                                 c.params.device, c.gpu.name));
    c.cost_params_label = p->as_string();
  }
  if (c.calibrate != Calibrate::kNo)
    c.cost_params_label = fmt::format("fitted in this run ({} calibration suite)",
                                      c.calibrate == Calibrate::kQuick ? "quick" : "full");
}

ModelEntry parse_model(const YamlReader& m) {
  m.expect_map({"model", "batch", "seq"});
  ModelEntry e;
  e.ref = m.at("model").as_string();
  if (auto b = m.maybe("batch")) e.batch = b->as_int_in(1, kMaxModelDim);
  if (auto s = m.maybe("seq")) e.seq = s->as_int_in(1, kMaxModelDim);
  models::zoo::ModelRef ref;
  try {
    ref = models::zoo::resolve_model_ref(e.ref);
  } catch (const std::exception& err) {
    throw m.at("model").error(err.what());
  }
  if (ref.kind != models::zoo::ModelRefKind::kZoo && ref.kind != models::zoo::ModelRefKind::kTransformer)
    throw m.at("model").error(fmt::format("expected a zoo name ({}) or transformer:..., got '{}'",
                                          models::zoo::zoo_names(), e.ref));
  try {
    models::zoo::ModelRefOptions mo;
    mo.batch = e.batch;
    mo.seq = e.seq;
    mo.dtype = models::DType::kF32;  // the replay computes in f32
    e.graph = models::zoo::build_model_ref(ref, mo);
  } catch (const std::exception& err) {
    throw m.error(err.what());
  }
  e.label = e.ref + (e.batch ? fmt::format(" batch {}", e.batch) : "") +
            (e.seq ? fmt::format(" seq {}", e.seq) : "");
  const auto* zoo = ref.kind == models::zoo::ModelRefKind::kZoo ? models::zoo::find_model(e.ref) : nullptr;
  e.target = zoo && (zoo->family == "cnn" || zoo->name == "bert-base");
  return e;
}

GraphsConfig parse_graphs(const ExperimentFile& file, const YamlReader& g) {
  g.expect_map({"sample", "path_steps", "repeat", "node_repeat", "warmup", "min_gain", "rules"});
  GraphsConfig out;
  if (auto s = g.maybe("sample")) out.sample = s->as_int32_in(0, 100000);
  if (auto s = g.maybe("path_steps")) out.path_steps = s->as_int32_in(0, 100000);
  if (auto s = g.maybe("repeat")) out.repeat = s->as_int32_in(1, 1000);
  if (auto s = g.maybe("node_repeat")) out.node_repeat = s->as_int32_in(1, 100000);
  if (auto s = g.maybe("warmup")) out.warmup = s->as_int32_in(0, 100000);
  if (auto s = g.maybe("min_gain")) out.min_gain = min_gain_fraction(*s);
  const auto field = g.maybe("rules");
  out.rules_path =
      field ? file.resolve_path(*field) : util::find_data_file(experiments::kDefaultRules).string();
  try {
    out.rules = ss::load_rules(out.rules_path, ss::RuleFileFormat::kAutomatic, ss::TasoShapes::kUnknown);
  } catch (const ConfigError& e) {
    throw field ? field->error(e.what()) : g.error(e.what());
  }
  return out;
}

Config parse(const ExperimentFile& file, const v::ReplayDevice& device) {
  file.expect_keys(
      {"hw", "cost_params", "calibrate", "models", "repeat", "warmup", "rounds", "seed", "graphs"});
  const YamlReader& root = file.root();
  Config c;
  c.device = &device;
  c.kind = file.kind();
  c.name = file.name();
  c.description = file.description();
  c.gpu = parse_hw(file, c);
  parse_cost(file, c);
  if (auto r = root.maybe("repeat")) c.repeat = r->as_int32_in(1, 100000);
  if (auto w = root.maybe("warmup")) c.warmup = w->as_int32_in(0, 100000);
  if (auto n = root.maybe("rounds")) c.rounds = n->as_int32_in(1, 100);
  if (auto s = root.maybe("seed")) c.seed = static_cast<std::uint64_t>(s->as_int_in(0, INT64_MAX));
  const YamlReader ms = root.at("models");
  ms.expect_sequence();
  for (std::size_t i = 0; i < ms.size(); ++i) c.models.push_back(parse_model(ms.at(i)));
  if (c.models.empty()) throw ms.error("expected at least one model");
  if (auto g = root.maybe("graphs")) c.graphs = parse_graphs(file, *g);
  return c;
}

// ------------------------------------------------------------------------------------------------------ run

void calibrate(const Config& c, Results& r) {
  const auto suite = v::calibration_suite(c.calibrate == Calibrate::kQuick, c.device->large_kernels);
  std::cerr << fmt::format("[calibrate] {} microbenchmarks\n", suite.size());
  v::MeasureOptions mo;
  // measure_suite keeps at least 3 repetitions per benchmark.
  mo.timing = {.warmup = c.warmup, .repeat = std::max(c.repeat, 3), .seed = c.seed};
  mo.rounds = c.rounds;
  mo.progress = [](std::size_t done, std::size_t total, const v::CalibrationPoint& p) {
    std::cerr << fmt::format("[calibrate {:>3}/{}] {:<44} {}\n", done, total, p.label,
                             units::format_duration(p.measured));
  };
  const auto points = v::measure_suite(suite, mo, *c.device);
  auto fit = v::fit_cost_params(points, r.gpu);
  fit.params.fit.update({{"command", fmt::format("strata run (kind {}, calibrate)", c.kind)},
                         {"experiment", c.name},
                         {"system", c.hw_label},
                         {"quick", c.calibrate == Calibrate::kQuick},
                         {"replay_device", std::string(c.device->name)},
                         {"kernels", r.kernels},
                         {"threads", r.threads}});
  r.params = std::move(fit.params);
  r.fits = std::move(fit.fits);
  r.microbenchmarks = points.size();
}

v::GraphCheckReport rank_candidates(const Config& c, const ModelEntry& m, const models::CostModel& cost) {
  const auto& gc = *c.graphs;
  v::CandidateOptions co;
  co.backtrack.xfers = ss::make_xfers({});
  co.sample = gc.sample;
  co.max_path_steps = gc.path_steps;
  co.backtrack.min_gain = co.eqsat.min_gain = gc.min_gain;
  co.seed = c.seed;
  const auto set = v::optimizer_candidates(m.graph, gc.rules, cost, co);
  std::cerr << fmt::format("[{}] {} candidates\n", m.label, set.candidates.size());
  for (const auto& line : set.declined) std::cerr << fmt::format("[{}] {}\n", m.label, line);
  v::CandidateCheckOptions check;
  check.timing = {.warmup = gc.warmup, .repeat = gc.node_repeat, .seed = c.seed};
  check.repeat = gc.repeat;
  check.device = c.device;
  check.log = [&](std::string_view line) { std::cerr << fmt::format("[{}] {}\n", m.label, line); };
  auto report = v::check_candidates(set, cost, check);
  if (report.ranked != static_cast<int>(report.rows.size()))
    throw std::runtime_error(fmt::format(
        "{}: a candidate computes a different function than the original (a bug; see above)", m.label));
  return report;
}

// One model measured in `c.rounds` rounds, each round one pass over every model (measure_models), so that
// the rounds of an instance lie apart in time.
struct ModelMeasurement {
  std::vector<v::CpuProfile> profiles;  // one per round
  v::RoundExtremes whole;               // the whole graph's round medians
};

std::vector<ModelMeasurement> measure_models(const Config& c) {
  std::vector<ModelMeasurement> out(c.models.size());
  const v::TimingOptions timing{.warmup = c.warmup, .repeat = c.repeat, .seed = c.seed};
  for (int round = 0; round < c.rounds; ++round)
    for (std::size_t i = 0; i < c.models.size(); ++i) {
      const auto& m = c.models[i];
      auto& mm = out[i];
      mm.profiles.push_back(c.device->profile(m.graph, timing, c.device->profile_device()));
      const double whole = v::measure_whole_graph_seconds(m.graph, timing, *c.device);
      mm.whole.add(whole);
      std::cerr << fmt::format("[round {}/{}] {}: {} distinct operator instances, whole graph {}\n",
                               round + 1, c.rounds, m.label, mm.profiles.back().ops.size(),
                               units::format_duration(whole));
    }
  return out;
}

ModelResult check_model(const Config& c, const ModelEntry& m, const ModelMeasurement& measured,
                        const models::CostModel& cost) {
  ModelResult mr;
  const auto profile = v::least_disturbed(measured.profiles);
  mr.views = profile.view_nodes;
  std::vector<double> spreads;
  for (const auto& op : profile.ops) {
    (op.timing.backend.backend == v::CpuBackend::kReference ? mr.reference : mr.fast) += 1;
    spreads.push_back(op.round_spread);
  }
  mr.round_spread = v::median(spreads);
  mr.ops = v::compare_with_cost_model(m.graph, profile, cost);
  std::vector<double> predicted, measured_seconds;
  for (const auto& o : mr.ops) {
    predicted.push_back(o.predicted);
    measured_seconds.push_back(o.measured);
  }
  mr.errors = v::error_summary(predicted, measured_seconds);
  mr.whole_measured = measured.whole.smallest;
  mr.whole_predicted = ss::graph_cost(m.graph, cost);
  std::cerr << fmt::format(
      "[{}] {} distinct operator instances: median |error| {} (rounds apart by {}); whole graph measured {}, "
      "predicted {}\n",
      m.label, mr.ops.size(), pct(mr.errors.median_abs), pct(mr.round_spread),
      units::format_duration(mr.whole_measured), units::format_duration(mr.whole_predicted));
  if (c.graphs) mr.graphs = rank_candidates(c, m, cost);
  return mr;
}

// hw: measure: this CPU's peak, bandwidth, cache level and per-kernel overhead (strata validate host), the
// device spec everything is then priced with.
void measure_host(Results& r) {
  if (!v::host_bench_available()) throw ConfigError("hw: measure: " + v::host_bench_missing());
  std::cerr << "[host] measuring this CPU (strata validate host)\n";
  const auto bench = v::run_host_bench({});
  r.host_yaml = v::host_system_yaml(bench);
  r.gpu = hw::load_system_from_string(r.host_yaml, "host.yaml").gpu();
  std::cerr << fmt::format("[host] {:.1f} GFLOP/s fp32, {} from memory\n", r.gpu.peak_fp32 / 1e9,
                           units::format_bandwidth(r.gpu.hbm_bandwidth));
}

Results run(const Config& c) {
  // Refused before anything runs; `strata run --check` still checks the file.
  if (auto why = c.device->unavailable(); !why.empty())
    throw ConfigError(fmt::format("experiment {} (kind {}): {}", c.name, c.kind, why));
  Results r;
  r.kernels = c.device->description();
  r.threads = v::omp_threads_note();
  r.cpu = v::read_cpu_info().model;
  std::cerr << fmt::format("[{}] {} models on {} (CPU {}, {}), {}\n", c.kind, c.models.size(), r.kernels,
                           r.cpu.empty() ? "unknown" : r.cpu, r.threads, c.cost_params_label);
  r.params = c.params;
  r.gpu = c.gpu;
  if (c.measure_host) measure_host(r);
  if (c.calibrate != Calibrate::kNo) calibrate(c, r);
  const models::CostModel cost(r.gpu, r.params.roofline);
  const auto measured = measure_models(c);
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    std::cerr << fmt::format("[model {}/{}] {} ({} nodes)\n", i + 1, c.models.size(), m.label,
                             m.graph.nodes().size());
    r.models.push_back(check_model(c, m, measured[i], cost));
  }
  return r;
}

// --------------------------------------------------------------------------------------------------- report

std::string ops_csv(const Config& c, const Results& r) {
  std::string csv = "model,op,node,instances,measured_us,predicted_us,error,round_spread\n";
  for (std::size_t i = 0; i < c.models.size(); ++i)
    for (const auto& o : r.models[i].ops)
      csv += fmt::format("{},{},{},{},{:.4f},{:.4f},{:.6f},{:.6f}\n", csv_field(c.models[i].label), o.op,
                         csv_field(o.node), o.instances, o.measured * 1e6, o.predicted * 1e6, o.error(),
                         o.round_spread);
  return csv;
}

// The models table: models.csv and the summary's rows.
std::string models_section(const Config& c, const Results& r, std::string& csv) {
  csv =
      "model,target,distinct_ops,library_ops,reference_ops,views,median_abs_error,mean_abs_error,mean_error,"
      "worst_abs_error,worst_op,whole_measured_ms,whole_predicted_ms,whole_error,round_spread\n";
  std::string md = fmt::format(
      "## Per model\n\nPer-operator |error| = |predicted / measured - 1| over the distinct operator "
      "instances (each timed alone, median); whole graph: one inference pass (weight-only nodes folded, "
      "views not re-run) measured against the cost model's graph time; rounds apart: the median over the "
      "instances of how much slower an instance's slowest round was than its fastest.\n\n"
      "| model | distinct ops ({} / reference) | median \\|error\\| | mean \\|error\\| | mean signed | "
      "worst (op) | whole graph measured | predicted | error | rounds apart |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n",
      c.device->library);
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    const auto& mr = r.models[i];
    const v::OpError* worst = nullptr;
    for (const auto& o : mr.ops)
      if (!worst || std::fabs(o.error()) > std::fabs(worst->error())) worst = &o;
    const std::string worst_op = worst ? worst->op + " " + worst->node : "";
    const double whole_error = mr.whole_predicted / mr.whole_measured - 1;
    csv += fmt::format("{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{},{:.6f},{:.6f},{:.6f},{:.6f}\n",
                       csv_field(m.label), m.target ? 1 : 0, mr.ops.size(), mr.fast, mr.reference, mr.views,
                       mr.errors.median_abs, mr.errors.mean_abs, mr.errors.mean, mr.errors.max_abs,
                       csv_field(worst_op), mr.whole_measured * 1e3, mr.whole_predicted * 1e3, whole_error,
                       mr.round_spread);
    md += fmt::format("| {}{} | {} ({} / {}) | {} | {} | {:+.1f}% | {} ({}) | {} | {} | {:+.1f}% | {} |\n",
                      m.label, m.target ? " (target)" : "", mr.ops.size(), mr.fast, mr.reference,
                      pct(mr.errors.median_abs), pct(mr.errors.mean_abs), 100 * mr.errors.mean,
                      pct(mr.errors.max_abs), worst_op, units::format_duration(mr.whole_measured),
                      units::format_duration(mr.whole_predicted), 100 * whole_error, pct(mr.round_spread));
  }
  return md;
}

// Per operator family over every model: median, min and max |error| (op_errors.png draws the same).
std::string families_section(const Results& r) {
  std::map<std::string, std::vector<double>> by_op;
  for (const auto& mr : r.models)
    for (const auto& o : mr.ops) by_op[o.op].push_back(std::fabs(o.error()));
  std::string md =
      "\n## Per operator family (all models)\n\n| operator | distinct instances | median \\|error\\| | min | "
      "max |\n|---|---|---|---|---|\n";
  for (auto& [op, errs] : by_op) {
    const auto [lo, hi] = std::minmax_element(errs.begin(), errs.end());
    md += fmt::format("| {} | {} | {} | {} | {} |\n", op, errs.size(), pct(validate::median(errs)), pct(*lo),
                      pct(*hi));
  }
  return md;
}

std::string graphs_section(const Config& c, const Results& r, ResultsDir& out) {
  std::string rows =
      "model,candidate,nodes,predicted_ms,measured_ms,spread,error,node_sum_ms,equivalent,max_rel_error,"
      "how\n";
  std::string stats =
      "model,candidates,noise,top1,top1_exact,top3,top5,spearman,regret,median_abs_error,backtrack_speedup,"
      "backtrack_slower,eqsat_speedup,eqsat_slower\n";
  std::string md = fmt::format(
      "\n## Optimizer candidates (as `strata validate graphs`)\n\nCandidates: the original, up to {} graphs "
      "of "
      "the backtracking path and its result, the eqsat result, {} seeded one-rewrite samples; each measured "
      "{} times (whole graph, median of {} passes), interleaved. Top-k with the noise (median spread) as "
      "tolerance.\n\n| model | candidates | noise | top-1 (exact) | top-3 | top-5 | Spearman | regret | "
      "backtrack speedup | eqsat speedup |\n|---|---|---|---|---|---|---|---|---|---|\n",
      c.graphs->path_steps, c.graphs->sample, c.graphs->repeat, c.graphs->node_repeat);
  const auto hit = [](bool h) { return h ? "hit" : "miss"; };
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& g = *r.models[i].graphs;
    const auto& label = c.models[i].label;
    for (const auto& row : g.rows)  // times and spread exact (shortest round trip): ties recomputed from the
      rows +=                       // CSV are the ties the statistics saw
          fmt::format("{},{},{},{},{},{},{:.6f},{:.6f},{},{:.3g},{}\n", csv_field(label), csv_field(row.name),
                      row.nodes, row.predicted * 1e3, row.measured() * 1e3, row.spread(),
                      row.measured() > 0 ? row.predicted / row.measured() - 1 : 0.0, row.node_sum() * 1e3,
                      row.equivalent ? 1 : 0, row.max_rel_error, csv_field(row.how));
    stats += fmt::format("{},{},{:.4f},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{},{:.4f},{}\n",
                         csv_field(label), g.ranked, g.noise, int(g.top1), int(g.top1_exact), int(g.top3),
                         int(g.top5), g.spearman, g.regret, g.errors.median_abs, g.backtrack_speedup,
                         int(g.backtrack_slower), g.eqsat_speedup, int(g.eqsat_slower));
    const auto speedup = [](double s, bool slower) {
      return fmt::format("{:.3f}x{}", s, slower ? " (slower beyond the noise)" : "");
    };
    md += fmt::format("| {} | {} | {} | {} ({}) | {} | {} | {:.3f} | {:.3f} | {} | {} |\n", label, g.ranked,
                      pct(g.noise), hit(g.top1), hit(g.top1_exact), hit(g.top3), hit(g.top5), g.spearman,
                      g.regret, speedup(g.backtrack_speedup, g.backtrack_slower),
                      speedup(g.eqsat_speedup, g.eqsat_slower));
  }
  out.write("graphs.csv", rows);
  out.write("graph_stats.csv", stats);
  return md;
}

std::string targets_section(const Config& c, const Results& r) {
  std::string md = "\n## Issue 15 targets\n\n";
  std::vector<std::string> met, missed;
  for (std::size_t i = 0; i < c.models.size(); ++i)
    if (c.models[i].target)
      (r.models[i].errors.median_abs <= kOpErrorTarget ? met : missed)
          .push_back(fmt::format("{} {}", c.models[i].label, pct(r.models[i].errors.median_abs)));
  md += fmt::format("- Per-operator median |error| <= {:.0f}% on the zoo CNNs and BERT-base: ",
                    100 * kOpErrorTarget);
  if (met.empty() && missed.empty())
    md += "not evaluated (no zoo CNN or BERT-base in this grid).\n";
  else
    md += fmt::format("**{}** (met on {} of {} models: {}; missed: {}).\n",
                      missed.empty() ? "met" : "not met", met.size(), met.size() + missed.size(),
                      met.empty() ? "none" : fmt::format("{}", fmt::join(met, ", ")),
                      missed.empty() ? "none" : fmt::format("{}", fmt::join(missed, ", ")));
  if (!c.graphs) {
    md +=
        "- Top-1 >= 80% of models and always top-3: not evaluated (no `graphs:` section).\n"
        "- The optimizer's choice never slower than the original: not evaluated (no `graphs:` section).\n";
    return md;
  }
  int top1 = 0, top3 = 0, slower = 0;
  std::vector<std::string> slower_models;
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& g = *r.models[i].graphs;
    top1 += g.top1;
    top3 += g.top3;
    if (g.backtrack_slower || g.eqsat_slower) {
      ++slower;
      slower_models.push_back(fmt::format("{} (backtrack {:.3f}x, eqsat {:.3f}x)", c.models[i].label,
                                          g.backtrack_speedup, g.eqsat_speedup));
    }
  }
  const auto n = static_cast<int>(c.models.size());
  const bool top_met = top1 >= kTop1Target * n && top3 == n;
  md += fmt::format(
      "- Top-1 >= {:.0f}% of models and always top-3: **{}** (top-1 {} of {} = {:.0f}%, top-3 {} of {}).\n",
      100 * kTop1Target, top_met ? "met" : "not met", top1, n, 100.0 * top1 / n, top3, n);
  md += fmt::format("- The optimizer's choice never slower than the original (beyond the noise): **{}**{}.\n",
                    slower ? "not met" : "met",
                    slower ? fmt::format(" ({} of {} models: {})", slower, n, fmt::join(slower_models, "; "))
                           : fmt::format(" (0 of {} models)", n));
  return md;
}

std::string calibration_section(const Results& r) {
  std::string md = fmt::format(
      "\n## Calibration (this run)\n\n{} microbenchmarks (synthetic shapes, not the models above), fitted "
      "per "
      "operator and per kind.\n\n| fitted | points | prior median \\|error\\| | fitted | worst |\n"
      "|---|---|---|---|---|\n",
      r.microbenchmarks);
  for (const auto& f : r.fits)
    md += fmt::format("| {}{} | {} | {} | {} | {} |\n", f.is_kind ? "kind " : "", f.name, f.points,
                      pct(f.median_abs_error_before), pct(f.median_abs_error_after),
                      pct(f.max_abs_error_after));
  return md;
}

void report(const Config& c, const Results& r, ResultsDir& out, const RunOptions& options) {
  std::string md = fmt::format(
      "# {}\n\n{}\n\nReplayed on {} with {} (host CPU: {}), priced as `{}` from {} ({:.1f} GFLOP/s "
      "fp32, {}). Cost parameters: {}. Each distinct operator instance, each whole-graph pass and each "
      "microbenchmark: {} warm-up + {} timed runs, median, in {} round(s) apart in time (one round times "
      "every model before the next), the smallest round median kept; seed {}.\n\n",
      c.name, c.description, c.device->where, r.kernels, r.cpu.empty() ? "unknown" : r.cpu, r.gpu.name,
      c.hw_label, r.gpu.peak_fp32 / 1e9, units::format_bandwidth(r.gpu.hbm_bandwidth), c.cost_params_label,
      c.warmup, c.repeat, c.rounds, c.seed);
  std::string models_csv;
  md += models_section(c, r, models_csv);
  md += families_section(r);
  if (c.graphs) md += graphs_section(c, r, out);
  md += targets_section(c, r);
  if (c.calibrate != Calibrate::kNo) md += calibration_section(r);
  out.write("ops.csv", ops_csv(c, r));
  out.write("models.csv", models_csv);
  out.write("cost_params.json", models::cost_params_json(r.params));
  if (!r.host_yaml.empty()) out.write("host.yaml", r.host_yaml);
  md += fmt::format(
      "\nFiles: `ops.csv` (every distinct operator instance), `models.csv`, {}`cost_params.json` (the "
      "parameters used: `--cost-params`), `ops_scatter.png`, `op_errors.png`{}.\n",
      c.graphs ? "`graphs.csv` (every candidate), `graph_stats.csv`, " : "",
      c.graphs ? ", `candidates_scatter.png`" : "");
  draw_figures(md, options, "cpu_validation.py", {out.staging().string(), c.name});
  out.write("summary.md", md);
}

}  // namespace

ExperimentKind cpu_validation_kind() {
  return make_kind<Config, Results>(
      "cpu-validation",
      "the cost model against operators, whole graphs and optimizer candidates measured on this CPU (oneDNN)",
      [](const ExperimentFile& f) { return parse(f, v::cpu_replay_device()); }, run, report);
}

ExperimentKind gpu_validation_kind() {
  return make_kind<Config, Results>(
      "gpu-validation",
      "as cpu-validation, measured on this machine's GPU 0 (cuBLAS/cuDNN; hw: the system of that GPU)",
      [](const ExperimentFile& f) { return parse(f, v::find_replay_device("cuda")); }, run, report);
}

}  // namespace strata::experiments
