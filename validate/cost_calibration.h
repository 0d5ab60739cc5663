// Calibrating the roofline cost model (models/cost/cost_model.h) on microbenchmarks (issue 15;
// docs/replay.md §3): single-operator graphs on synthetic shapes, chosen independently of the zoo models
// the calibration is then checked on (calibration is not validation), are timed on the CPU with oneDNN, and
// the efficiency curves eff(t) = max·t/(t + half) of each operator and each operator kind are fitted to them.
//
// Why the curve can be fitted at all: with eff as above, the roofline's compute time of a kernel whose ideal
// time is t is t / eff(t) = (t + half) / max: a straight line in t with slope 1/max and a fixed cost
// half/max. The model's time is launch + max(compute line, memory line), so each operator's fit has four
// parameters (max and half of the compute and the memory curve), found by minimizing the mean absolute log
// ratio of predicted to measured time over its microbenchmarks (Nelder-Mead in log-parameter space, from the
// priors).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/gpu_spec.h"
#include "models/cost/cost_params.h"
#include "models/ir/graph.h"
#include "validate/cpu_replay.h"
#include "validate/replay_device.h"

namespace strata::validate {

// One microbenchmark: a graph of a single f32 operator node on synthetic shapes.
struct Microbenchmark {
  std::string label;  // e.g. "conv2d 1x96x40x40 k3 s1 o192"
  models::Graph graph;
};

// The suite, deterministic. `quick`: a subset of every family (for tests and CI), about a tenth of the work.
// Families: matmul, batch_matmul, conv2d (dense, grouped, depth-wise, 1x1, strided), maxpool2d, avgpool2d
// (windowed and global), relu, sigmoid, tanh, gelu, ewadd, ewmul, scalar_mul, softmax, layernorm,
// batchnorm, reduce_mean, concat, transpose. Shapes are spaced geometrically over the sizes CNNs and
// transformers use, and avoid the zoo models' exact layer shapes.
// `large`: also the shapes a GPU needs to approach its peak (matmuls up to 200 GFLOP, the dense
// convolutions at batch 16 and 64, element-wise ops over up to 100 M elements, batch-32 batchnorms): a
// curve fitted on batch-1 shapes alone extrapolates a GPU's small-kernel efficiency to large kernels.
std::vector<Microbenchmark> calibration_suite(bool quick, bool large = false);

// A measured microbenchmark: what the cost model needs to price it again with other parameters.
struct CalibrationPoint {
  std::string label;
  std::string curve;    // the curve it calibrates: operator name, or "name:variant" (models::cost_curve_name)
  models::Graph graph;  // the single-node graph
  double measured = 0;  // median seconds (the smallest of the rounds' medians)
  double round_spread = 0;  // slowest round's median / fastest's - 1 (0 with one round)
};

struct MeasureOptions {
  TimingOptions timing;         // warm-up and repetitions per microbenchmark (adapted, see below)
  double target_seconds = 0.2;  // repetitions are reduced so one benchmark takes about this long (>= 3)
  // Passes over the whole suite; each benchmark keeps its smallest median (why: least_disturbed in
  // validate/cpu_replay.h).
  int rounds = 1;
  // After each benchmark of each round: `done` of `total` (the suite's size times the rounds), the point as
  // this round measured it.
  std::function<void(std::size_t done, std::size_t total, const CalibrationPoint&)> progress;
};
// Times every microbenchmark on `device` (the CPU with oneDNN, or the GPU; throws where it cannot run).
// Benchmarks that fall back to the reference kernel are an error: their time says nothing about the fast
// kernels the models run. Throws std::invalid_argument for rounds < 1.
std::vector<CalibrationPoint> measure_suite(const std::vector<Microbenchmark>& suite,
                                            const MeasureOptions& options,
                                            const ReplayDevice& device = cpu_replay_device());

// Result of a fit for one operator (or one kind: `op` is then the kind's name).
struct FamilyFit {
  std::string name;
  bool is_kind = false;
  int points = 0;
  models::KindEfficiency fitted;
  double median_abs_error_before = 0, median_abs_error_after = 0;  // |pred/meas - 1| over its points
  double max_abs_error_after = 0;
};

struct CalibrationResult {
  models::CostParams params;
  std::vector<FamilyFit> fits;  // per operator (with >= min_points points), then per kind
};

// Fits parameters on `points` for the device `gpu` (its peaks, bandwidth and launch overhead as given: a
// measured host spec, strata validate host). Operators with at least `min_points` points get their own
// curves; every kind with points gets curves fitted on all its points (used by operators without their own).
// Deterministic for the same points. params.fit gets the provenance: the device's peak and bandwidth, the
// number of microbenchmarks and every family's errors before and after (callers add how the run was made).
CalibrationResult fit_cost_params(const std::vector<CalibrationPoint>& points, const hw::GpuSpec& gpu,
                                  int min_points = 4);

// Time of a point under `params` on `gpu`: the cost model's node cost of its single node.
double predicted_seconds(const CalibrationPoint& p, const hw::GpuSpec& gpu,
                         const models::RooflineParams& params);

// Minimizes f over R^n from x0 by Nelder-Mead (Nelder & Mead, Computer Journal 7(4), 1965; standard
// coefficients 1, 2, 0.5, 0.5), initial simplex x0 + step·e_i, stopping after `iterations` or when the
// simplex's values differ by less than `tolerance`. Deterministic.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int iterations,
                                double tolerance = 1e-12);

}  // namespace strata::validate

namespace strata::validate {

// The cost model's prediction beside the measured time of every distinct operator instance of a profile
// (`cost` must have no profile database, or it would return the measurements).
struct OpError {
  std::string op, node, key;  // operator, the first node with this key, the profile key
  int instances = 0;
  double measured = 0, predicted = 0;  // seconds, one instance
  double round_spread = 0;             // the profile's: slowest round's median / fastest's - 1
  double error() const { return predicted / measured - 1; }
};
std::vector<OpError> compare_with_cost_model(const models::Graph& g, const CpuProfile& profile,
                                             const models::CostModel& cost);

}  // namespace strata::validate
