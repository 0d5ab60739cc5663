#include "experiments/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "experiments/sweep_mpi.h"
#include "experiments/sweep_report.h"
#include "experiments/sweep_spec.h"
#include "hw/yaml_patch.h"
#include "util/file.h"
#include "util/hash.h"
#include "util/timer.h"
#include "util/version.h"

namespace strata::experiments {
namespace fs = std::filesystem;
namespace {

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out << node;
  return std::string(out.c_str()) + "\n";
}

// One point made ready: its file parsed by the kind, its key and its effective configuration.
struct PreparedPoint {
  std::string key;
  std::string experiment_yaml;  // the effective experiment file (no sweep section)
  std::vector<InputFile> inputs;
  std::function<void(ResultsDir&, const RunOptions&)> run;
};

// The sweep of one experiment file: its spec, the kind and the store.
class Sweep {
 public:
  Sweep(const ExperimentFile& file, std::string text, const ExperimentKind& kind, const RunOptions& options)
      : file_(file),
        text_(std::move(text)),
        kind_(kind),
        spec_(parse_sweep(file.root().at("sweep"))),
        store_(fs::path(options.output_root) / ".store" / file.name()) {}

  const SweepSpec& spec() const { return spec_; }
  std::size_t size() const { return spec_.points.size(); }
  fs::path stored(const std::string& key) const { return store_ / key; }
  bool in_store(const std::string& key) const {
    std::error_code ec;
    return fs::is_directory(stored(key), ec);
  }
  const fs::path& store() const { return store_; }

  // Writes the point's values into a fresh tree of the file and runs the kind's parse step on it.
  PreparedPoint prepare(std::size_t i) const {
    try {
      return prepare_unlabelled(i);
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{} (sweep point {}: {})", e.what(), i, point_label(spec_, i)));
    }
  }

  // The hash of everything that decides the point's results (see sweep.h).
  static std::string key_of(const PreparedPoint& p) {
    std::string blob = fmt::format("{}\n{}\n{}", util::kVersion, p.experiment_yaml.size(), p.experiment_yaml);
    for (const auto& input : p.inputs) {
      const std::string content =
          input.hardware ? input.effective_yaml
                         : util::read_file<ConfigError>(input.path, "a file the experiment reads");
      blob += fmt::format("{}\n{}\n{}", input.hardware ? "hw" : "file", content.size(), content);
    }
    return fmt::format("{:016x}{:016x}", util::fnv1a(blob), util::fnv1a(blob, util::mix64(util::kFnvOffset)));
  }

  // Runs the point into the store: its own files, its effective configuration, point.json.
  void compute(std::size_t i, const PreparedPoint& p, const RunOptions& options) const {
    ResultsDir out(stored(p.key));
    fs::create_directories(out.staged("effective"));
    out.write("effective/experiment.yaml",
              fmt::format("# Effective configuration of point {} of {} ({}); relative paths are taken from "
                          "the directory of that file.\n{}",
                          i, file_.path(), point_label(spec_, i), p.experiment_yaml));
    nlohmann::json inputs = nlohmann::json::array();
    std::size_t n = 0;
    for (const auto& input : p.inputs) {
      nlohmann::json j = {{"path", input.path}, {"hardware", input.hardware}};
      if (input.hardware) {
        const std::string name =
            fmt::format("effective/hw{}-{}", n++, fs::path(input.path).filename().string());
        out.write(name, input.effective_yaml);
        j["effective"] = name;
      }
      inputs.push_back(j);
    }
    RunOptions point_options = options;
    point_options.plots = false;  // one figure for the sweep
    p.run(out, point_options);
    const nlohmann::json point = {
        {"key", p.key}, {"strata_version", util::kVersion}, {"experiment", file_.name()}, {"inputs", inputs}};
    out.write("point.json", point.dump(2) + "\n");
    out.commit();
  }

 private:
  PreparedPoint prepare_unlabelled(std::size_t i) const {
    YamlReader root = YamlReader::from_string(text_, file_.path());
    YAML::Node tree = root.node();  // this parse's own tree
    tree.remove("sweep");
    HardwarePatch hardware;
    for (std::size_t a = 0; a < spec_.axes.size(); ++a) {
      const SweepAxis& axis = spec_.axes[a];
      const SweepValue& value = spec_.points[i][a];
      if (axis.target == AxisTarget::kExperiment) {
        if (const std::string why = hw::set_at_path(tree, axis.path, value.node); !why.empty())
          throw axis.where.error(fmt::format("in the experiment file: {}", why));
      } else if (axis.target == AxisTarget::kHardware) {
        // Written in this file, placed in the hardware file's tree: errors name the field, not a line.
        hardware.sets.push_back({axis.path, hw::copy_without_marks(value.node), axis.where});
      } else {
        hardware.scales.push_back({axis.path[0], *value.number, axis.where});
      }
    }
    PreparedPoint p;
    p.experiment_yaml = emit(tree);
    const ExperimentFile point =
        ExperimentFile::for_point(file_.path(), std::move(root), std::move(hardware));
    p.run = kind_.parse(point);
    p.inputs = point.inputs();
    const bool loads_hardware =
        std::any_of(p.inputs.begin(), p.inputs.end(), [](const InputFile& f) { return f.hardware; });
    for (const auto& axis : spec_.axes)
      if (axis.target != AxisTarget::kExperiment && !loads_hardware)
        throw axis.where.error(fmt::format(
            "the {} experiment loads no hardware file through its experiment file here, so a hw. or scale. "
            "axis has nothing to change",
            file_.kind()));
    p.key = key_of(p);
    return p;
  }

  const ExperimentFile& file_;
  std::string text_;
  const ExperimentKind& kind_;
  SweepSpec spec_;
  fs::path store_;
};

std::string file_text(const ExperimentFile& file, std::string_view text) {
  return text.empty() ? util::read_file<ConfigError>(file.path(), "an experiment file (YAML)")
                      : std::string(text);
}

const ExperimentKind& kind_of(const ExperimentFile& file, const ExperimentKind* kind) {
  return kind ? *kind : *find_experiment_kind(file.kind());
}

// Progress after each point: a bar redrawn in place on a terminal; otherwise a line with the rate and the ETA
// of the points still to compute, for every point of a sweep of up to kEveryLine points and, in larger ones,
// for the first and the last point and then at most every kLinePeriod seconds (a log, not a flood).
class Progress {
  static constexpr std::size_t kEveryLine = 100;
  static constexpr double kLinePeriod = 5;  // seconds

 public:
  Progress(std::size_t total, std::size_t to_compute) : total_(total), to_compute_(to_compute) {}
  // `rank`: the MPI rank that computed the point (-1: this process, not distributed).
  void point_done(std::size_t index, const std::string& label, bool computed, double seconds, int rank = -1) {
    ++done_;
    if (computed) ++computed_;
    const double elapsed = clock_.seconds();
    const double rate = computed_ > 0 && elapsed > 0 ? static_cast<double>(computed_) / elapsed : 0;
    const std::string eta =
        rate > 0 ? fmt::format("{:.0f} s", static_cast<double>(to_compute_ - computed_) / rate) : "-";
    if (tty_) {
      constexpr int kWidth = 30;
      const auto filled = static_cast<int>(static_cast<double>(done_) * kWidth / static_cast<double>(total_));
      std::cerr << fmt::format("\r\x1b[K[{}{}] {}/{} points, {:.2f} points/s, ETA {}",
                               std::string(filled, '#'), std::string(kWidth - filled, '.'), done_, total_,
                               rate, eta)
                << (done_ == total_ ? "\n" : "") << std::flush;
      return;
    }
    if (total_ > kEveryLine && done_ > 1 && done_ < total_ && elapsed - last_line_ < kLinePeriod) return;
    last_line_ = elapsed;
    std::cerr << fmt::format("[sweep {}/{}] point {} ({}): {}; {:.2f} points/s, ETA {}\n", done_, total_,
                             index, label,
                             computed ? fmt::format("computed in {:.2f} s{}", seconds,
                                                    rank >= 0 ? fmt::format(" on rank {}", rank) : "")
                                      : "from the store",
                             rate, eta);
  }

 private:
  std::size_t total_, to_compute_, done_ = 0, computed_ = 0;
  double last_line_ = 0;  // when the last line was printed (seconds on clock_)
  util::Stopwatch clock_;
  bool tty_ = isatty(fileno(stderr)) != 0;
};

}  // namespace

bool has_sweep(const ExperimentFile& file) {
  return file.root().is_map() && file.root().has("sweep");
}

void check_sweep(const ExperimentFile& file, std::string_view text) {
  const Sweep sweep(file, file_text(file, text), kind_of(file, nullptr), RunOptions{});
  for (std::size_t i = 0; i < sweep.size(); ++i) sweep.prepare(i);
}

std::string dry_run(const std::string& path, const RunOptions& options) {
  const auto file = check_experiment(path);
  if (has_sweep(file)) return sweep_dry_run(file, options);
  return fmt::format("{}: not a sweep (no `sweep:` section): one run of the {} experiment '{}'\n", path,
                     file.kind(), file.name());
}

std::string sweep_dry_run(const ExperimentFile& file, const RunOptions& options) {
  const Sweep sweep(file, file_text(file, {}), kind_of(file, nullptr), options);
  const SweepSpec& spec = sweep.spec();
  std::vector<std::string> keys;
  std::size_t stored = 0;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    keys.push_back(sweep.prepare(i).key);
    if (sweep.in_store(keys.back())) ++stored;
  }
  std::string text = fmt::format(
      "{}: sweep of the {} experiment '{}', mode {}, {} points: {} in the store, {} to compute (store: {})\n",
      file.path(), file.kind(), file.name(), sweep_mode_name(spec.mode), sweep.size(), stored,
      sweep.size() - stored, sweep.store().string());
  std::vector<std::size_t> width;
  std::string header = fmt::format("{:>5}  {:<8}  {:<32}", "point", "status", "key");
  for (const auto& axis : spec.axes) {
    std::size_t w = axis.name.size();
    for (const auto& p : spec.points) w = std::max(w, p[width.size()].text.size());
    width.push_back(w);
    header += fmt::format("  {:<{}}", axis.name, w);
  }
  text += header + "\n";
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    std::string line =
        fmt::format("{:>5}  {:<8}  {:<32}", i, sweep.in_store(keys[i]) ? "stored" : "missing", keys[i]);
    for (std::size_t a = 0; a < spec.axes.size(); ++a)
      line += fmt::format("  {:<{}}", spec.points[i][a].text, width[a]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    text += line + "\n";
  }
  return text;
}

namespace {

// The report of a sweep before it runs: every point checked and keyed (a bad point stops the sweep before
// it starts) and marked computed when its key is missing from the store and no earlier point has the same
// key (two points with the same effective configuration share one stored result).
SweepReport plan(const Sweep& sweep, const ExperimentFile& file, const std::string& text) {
  SweepReport report{&file, text, &sweep.spec(), {}, {}, {}};
  std::set<std::string> seen;
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    report.keys.push_back(sweep.prepare(i).key);
    report.stored.push_back(sweep.stored(report.keys.back()));
    report.computed.push_back(seen.insert(report.keys.back()).second && !sweep.in_store(report.keys.back()));
  }
  return report;
}

std::string write_outputs(const SweepReport& report, const ExperimentFile& file, const RunOptions& options) {
  ResultsDir out(fs::path(options.output_root) / file.name());
  write_sweep_report(report, out, options);
  return out.commit().string();
}

SweepOutcome run_here(const ExperimentFile& file, const RunOptions& options, const ExperimentKind* kind) {
  const std::string text = file_text(file, {});
  const Sweep sweep(file, text, kind_of(file, kind), options);
  SweepReport report = plan(sweep, file, text);
  Progress progress(sweep.size(), static_cast<std::size_t>(
                                      std::count(report.computed.begin(), report.computed.end(), true)));
  SweepOutcome outcome{"", sweep.size(), 0, 0};
  for (std::size_t i = 0; i < sweep.size(); ++i) {
    const util::Stopwatch clock;
    report.computed[i] = !sweep.in_store(report.keys[i]);  // as planned, unless another run stored it since
    if (report.computed[i]) {
      const PreparedPoint p = sweep.prepare(i);  // parsed again: a prepared point holds its whole config
      sweep.compute(i, p, options);
      ++outcome.computed;
    } else {
      ++outcome.reused;
    }
    progress.point_done(i, point_label(sweep.spec(), i), report.computed[i], clock.seconds());
  }
  outcome.folder = write_outputs(report, file, options);
  return outcome;
}

// Rank 0 of a distributed sweep (sweep_mpi.h): plans, hands out the missing points, computes some itself,
// checks that every point reached the store and writes the outputs as run_here does.
SweepOutcome run_rank0(SweepRanks& ranks, const ExperimentFile& file, const RunOptions& options,
                       const ExperimentKind* kind) {
  SweepOutcome outcome;
  bool served = false;
  try {
    const std::string text = file_text(file, {});
    const Sweep sweep(file, text, kind_of(file, kind), options);
    const SweepReport report = plan(sweep, file, text);
    std::vector<PointWork> work;
    for (std::size_t i = 0; i < sweep.size(); ++i)
      if (report.computed[i]) work.push_back({i, report.keys[i]});
    outcome = {"", sweep.size(), work.size(), sweep.size() - work.size()};
    std::cerr << fmt::format("[sweep] {} points, {} to compute on {} MPI ranks\n", sweep.size(), work.size(),
                             ranks.size());
    Progress progress(sweep.size(), work.size());
    for (std::size_t i = 0; i < sweep.size(); ++i)
      if (!report.computed[i]) progress.point_done(i, point_label(sweep.spec(), i), false, 0);
    std::vector<int> computed_by(sweep.size(), 0);
    served = true;
    ranks.serve(
        work, [&](const PointWork& w) { sweep.compute(w.index, sweep.prepare(w.index), options); },
        [&](const PointDone& d) {
          computed_by[d.index] = d.rank;
          progress.point_done(d.index, point_label(sweep.spec(), d.index), true, d.seconds, d.rank);
        });
    for (const auto& w : work)
      if (!sweep.in_store(w.key))
        throw ConfigError(fmt::format(
            "point {} (key {}), computed by rank {}, is not in the store at '{}': --output must name a "
            "folder every rank sees (a shared file system)",
            w.index, w.key, computed_by[w.index], sweep.stored(w.key).string()));
    outcome.folder = write_outputs(report, file, options);
  } catch (const std::exception&) {
    if (!served) ranks.serve({}, {}, {});  // the other ranks are told that there is nothing to compute
    ranks.agree(false);
    throw;
  }
  ranks.agree(true);
  return outcome;
}

// Another rank: computes the points rank 0 hands out, each checked against the key rank 0 derived.
SweepOutcome run_worker(SweepRanks& ranks, const ExperimentFile& file, const RunOptions& options,
                        const ExperimentKind* kind) {
  std::optional<Sweep> sweep;
  std::exception_ptr cannot_start;
  try {
    sweep.emplace(file, file_text(file, {}), kind_of(file, kind), options);
  } catch (const std::exception&) {
    cannot_start = std::current_exception();
  }
  SweepOutcome outcome;
  std::exception_ptr failed;
  std::optional<std::size_t> failed_point;  // the point being computed when the work stopped
  try {
    outcome.computed = ranks.work([&](const PointWork& w) {
      failed_point = w.index;
      if (cannot_start) std::rethrow_exception(cannot_start);
      const PreparedPoint p = sweep->prepare(w.index);
      if (p.key != w.key)
        throw ConfigError(fmt::format(
            "rank {} derives key {} for point {}, rank 0 derives {}: the experiment file or a file it reads "
            "differs between the ranks, or they run different strata versions",
            ranks.rank(), p.key, w.index, w.key));
      sweep->compute(w.index, p, options);
      failed_point.reset();
    });
  } catch (const std::exception&) {
    failed = std::current_exception();  // rank 0 knows of it; the ranks still end together
  }
  const bool ok = ranks.agree(false);
  if (failed) {
    try {
      std::rethrow_exception(failed);
    } catch (const std::exception& e) {  // rank 0's message too: mpirun may stop rank 0 before it prints
      if (failed_point)
        throw ConfigError(sweep_stopped({point_failure(ranks.rank(), *failed_point, e.what())}));
      throw ConfigError(fmt::format("rank {}: {}", ranks.rank(), e.what()));
    }
  }
  if (!ok) {
    // Rank 0 failed and reports why. This rank ends with status 0: mpirun stops the other ranks as soon as
    // one ends with another status, and could stop rank 0 before it has written its message. mpirun's own
    // status is still rank 0's (2).
    std::cerr << fmt::format("[sweep] rank {}: stopped with the sweep; rank 0 reports why\n", ranks.rank());
    return {};
  }
  outcome.points = sweep ? sweep->size() : 0;
  return outcome;
}

}  // namespace

SweepOutcome run_sweep(const ExperimentFile& file, const RunOptions& options, const ExperimentKind* kind) {
  SweepRanks ranks;  // MPI when launched by mpirun (sweep_mpi.h)
  if (!ranks.distributed()) return run_here(file, options, kind);
  try {
    return ranks.rank() == 0 ? run_rank0(ranks, file, options, kind) : run_worker(ranks, file, options, kind);
  } catch (const std::exception& e) {
    if (!ranks.finished()) ranks.abort(e.what());  // the other ranks would wait for this one
    throw;
  }
}

}  // namespace strata::experiments
