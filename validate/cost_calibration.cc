#include "validate/cost_calibration.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "models/ir/op_def.h"
#include "validate/stats.h"

namespace strata::validate {
namespace {

using models::Attrs;
using models::DType;
using models::Graph;
using models::Ints;
using models::Shape;
using models::TensorType;
using models::ValueId;

// Single-operator graphs. Every operand is a graph input (weights too: the replay binds and packs every input
// once, outside the timing, as it does for a model's weights).
class SuiteBuilder {
 public:
  SuiteBuilder(bool quick, bool large) : quick_(quick), large_(large) {}
  void add(std::string label, std::string_view op, const std::vector<Shape>& inputs, Attrs attrs = {}) {
    std::vector<TensorType> types;
    for (const auto& shape : inputs) types.push_back({shape, DType::kF32});
    add(std::move(label), op, types, std::move(attrs));
  }
  void add(std::string label, std::string_view op, const std::vector<TensorType>& inputs, Attrs attrs = {}) {
    Graph g(label);
    std::vector<ValueId> ins;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      ins.push_back(g.add_input("x" + std::to_string(i), inputs[i]));
    g.mark_output(g.add(op, ins, std::move(attrs)));
    suite_.push_back({std::move(label), std::move(g)});
  }
  // In quick mode only every `stride`-th candidate of a family is kept.
  bool keep(int index, int stride = 4) const { return !quick_ || index % stride == 0; }
  std::vector<Microbenchmark> take() { return std::move(suite_); }
  // The larger shapes a GPU needs to reach its peak (calibration_suite's `large`).
  bool large() const { return large_; }
  double max_flops() const { return large_ ? kLargeMaxFlops : kMaxFlops; }

  static constexpr double kMaxFlops = 3e9;        // keeps each benchmark under ~0.1 s on one CPU core
  static constexpr double kLargeMaxFlops = 2e11;  // ~4 ms at a GPU's 50 TFLOP/s of plain FP32

 private:
  bool quick_, large_;
  std::vector<Microbenchmark> suite_;
};

void add_matmuls(SuiteBuilder& b) {
  int i = 0;
  std::vector<std::int64_t> rows{1, 12, 60, 300, 1500};
  if (b.large()) rows.insert(rows.end(), {6000, 24000});
  for (std::int64_t m : rows)
    for (auto [k, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {40, 40}, {200, 200}, {640, 640}, {2000, 2000}, {200, 2000}, {2000, 200}, {640, 2000}}) {
      if (2.0 * static_cast<double>(m * k * n) > b.max_flops() || !b.keep(i++)) continue;
      b.add(fmt::format("matmul {}x{}x{}", m, k, n), "matmul", {{m, k}, {k, n}});
    }
  i = 0;
  for (std::int64_t batch :
       b.large() ? std::vector<std::int64_t>{6, 24, 192} : std::vector<std::int64_t>{6, 24})
    for (auto [m, k, n] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
             {40, 48, 40}, {200, 48, 200}, {200, 200, 48}, {500, 80, 500}}) {
      if (!b.keep(i++, 3)) continue;
      b.add(fmt::format("batch_matmul {}x{}x{}x{}", batch, m, k, n), "batch_matmul",
            {{batch, m, k}, {batch, k, n}});
    }
}

struct ConvCase {
  std::int64_t n, c, h, o, kh, kw, stride, groups;
};

void add_convs(SuiteBuilder& b) {
  const ConvCase cases[] = {
      {1, 3, 200, 40, 7, 7, 2, 1},     {1, 40, 100, 40, 3, 3, 1, 1},  {1, 40, 100, 160, 1, 1, 1, 1},
      {1, 160, 50, 80, 1, 1, 1, 1},    {1, 80, 50, 80, 3, 3, 1, 1},   {1, 80, 50, 160, 3, 3, 2, 1},
      {1, 160, 25, 320, 3, 3, 1, 1},   {1, 320, 25, 640, 1, 1, 1, 1}, {1, 640, 12, 320, 1, 1, 1, 1},
      {1, 320, 12, 320, 3, 3, 1, 1},   {1, 640, 6, 1280, 1, 1, 1, 1}, {1, 1280, 6, 640, 3, 3, 1, 1},
      {1, 48, 30, 64, 5, 5, 1, 1},     {1, 128, 15, 128, 1, 7, 1, 1}, {1, 128, 15, 192, 7, 1, 1, 1},
      {4, 80, 30, 80, 3, 3, 1, 1},     {1, 160, 25, 160, 3, 3, 1, 8}, {1, 320, 12, 320, 3, 3, 1, 32},
      {1, 640, 12, 640, 3, 3, 2, 32},  {1, 96, 50, 96, 3, 3, 1, 96},  {1, 192, 25, 192, 5, 5, 1, 192},
      {1, 384, 12, 384, 3, 3, 2, 384}, {1, 64, 40, 64, 7, 7, 1, 64},  {1, 24, 60, 48, 3, 3, 2, 1},
  };
  std::vector<ConvCase> all(std::begin(cases), std::end(cases));
  if (b.large())  // the dense cases again at the batches GPUs train and serve with
    for (std::int64_t batch : {16, 64})
      for (const auto& c : cases)
        if (c.groups == 1 && c.n == 1) {
          ConvCase big = c;
          big.n = batch;
          const double flops = 2.0 * static_cast<double>(batch * c.o * c.c * c.kh * c.kw) *
                               static_cast<double>((c.h / c.stride) * (c.h / c.stride));
          if (flops <= b.max_flops()) all.push_back(big);
        }
  int i = 0;
  for (const auto& c : all) {
    if (!b.keep(i++, 3)) continue;
    const std::int64_t ph = (c.kh - 1) / 2, pw = (c.kw - 1) / 2;
    b.add(fmt::format("conv2d {}x{}x{}x{} k{}x{} s{} g{} o{}", c.n, c.c, c.h, c.h, c.kh, c.kw, c.stride,
                      c.groups, c.o),
          "conv2d", {{c.n, c.c, c.h, c.h}, {c.o, c.c / c.groups, c.kh, c.kw}},
          {{"strides", Ints{c.stride, c.stride}}, {"pads", Ints{ph, pw, ph, pw}}, {"groups", c.groups}});
  }
}

void add_pools(SuiteBuilder& b) {
  int i = 0;
  for (auto [c, h] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{40, 100}, {160, 50}, {320, 25}, {24, 60}})
    if (b.keep(i++, 2))
      b.add(fmt::format("maxpool2d 1x{}x{}x{} k3 s2", c, h, h), "maxpool2d", {{1, c, h, h}},
            {{"kernel", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
  // Windowed and global average pools are fitted as two curves ("avgpool2d" and "avgpool2d:global",
  // models/ops/pooling.cc), five shapes each so that each gets a curve of its own.
  i = 0;
  for (auto [c, h] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{96, 30}, {320, 15}, {40, 60}, {160, 20}, {512, 8}})
    if (b.keep(i++, 2))
      b.add(fmt::format("avgpool2d 1x{}x{}x{} k3 s1", c, h, h), "avgpool2d", {{1, c, h, h}},
            {{"kernel", Ints{3, 3}}, {"strides", Ints{1, 1}}, {"pads", Ints{1, 1, 1, 1}}});
  i = 0;
  for (auto [c, h] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {640, 6}, {1500, 10}, {200, 20}, {1024, 7}, {2500, 8}})
    if (b.keep(i++, 2))
      b.add(fmt::format("avgpool2d 1x{}x{}x{} global", c, h, h), "avgpool2d", {{1, c, h, h}},
            {{"kernel", Ints{h, h}}});
}

void add_elementwise(SuiteBuilder& b) {
  // Sizes from 3 K to 3 M elements, half a decade apart (with fewer, the fit's two explanations of a
  // streaming operator, memory line or a slow compute line, traded places between runs; docs/replay.md §3).
  // Rows of 128: oneDNN's broadcasting binary kernels run a row whose length is not a multiple of the vector
  // width ~1.6x slower (scalar_mul on rows of 100), and models' inner dimensions are such multiples.
  std::vector<std::int64_t> rows{24, 80, 240, 800, 2400, 8000, 24000};
  if (b.large()) rows.insert(rows.end(), {240000, 800000});  // 30 M and 100 M elements
  int i = 0;
  for (std::string_view op : {"relu", "sigmoid", "tanh", "gelu"})
    for (auto r : rows)
      if (b.keep(i++, 5)) b.add(fmt::format("{} {}x128", op, r), op, {{r, 128}});
  for (std::string_view op : {"ewadd", "ewmul"})
    for (auto r : rows)
      if (b.keep(i++, 5)) b.add(fmt::format("{} {}x128", op, r), op, {{r, 128}, {r, 128}});
  // A bias add: a row vector broadcast over the rows.
  for (auto [r, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{20, 512}, {100, 2560}, {600, 1024}})
    if (b.keep(i++, 2)) b.add(fmt::format("ewadd {}x{} + {}", r, n, n), "ewadd", {{r, n}, {n}});
  for (auto r : rows)
    if (b.keep(i++, 5)) b.add(fmt::format("scalar_mul {}x128", r), "scalar_mul", {{r, 128}, {}});
}

void add_reductions(SuiteBuilder& b) {
  int i = 0;
  for (auto [r, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {2400, 100}, {600, 50}, {2000, 500}, {1, 1000}, {40, 40}})
    if (b.keep(i++, 2))
      b.add(fmt::format("softmax {}x{}", r, n), "softmax", {{r, n}}, {{"axis", std::int64_t{-1}}});
  for (auto [r, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {50, 640}, {200, 640}, {200, 1000}, {1000, 320}, {10, 2000}})
    if (b.keep(i++, 2))
      b.add(fmt::format("layernorm {}x{}", r, n), "layernorm", {{r, n}, {n}, {n}},
            {{"axis", std::int64_t{-1}}});
  for (auto [c, h] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {40, 100}, {160, 50}, {320, 25}, {640, 12}, {1280, 6}, {96, 10}, {256, 9}, {160, 16}, {48, 20}})
    if (b.keep(i++, 2))
      for (std::int64_t n : b.large() ? std::vector<std::int64_t>{1, 32} : std::vector<std::int64_t>{1})
        b.add(fmt::format("batchnorm {}x{}x{}x{}", n, c, h, h), "batchnorm",
              {{n, c, h, h}, {c}, {c}, {c}, {c}});
  for (auto [r, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{{200, 640}, {3000, 100}, {20, 5000}})
    if (b.keep(i++, 2))
      b.add(fmt::format("reduce_mean {}x{} last axis", r, n), "reduce_mean", {{r, n}},
            {{"axes", Ints{-1}}, {"keepdims", std::int64_t{1}}});
}

void add_movement(SuiteBuilder& b) {
  int i = 0;
  for (auto [c, h] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{40, 50}, {160, 25}, {320, 12}, {64, 100}})
    if (b.keep(i++, 2))
      b.add(fmt::format("concat 2x 1x{}x{}x{}", c, h, h), "concat", {{1, c, h, h}, {1, c, h, h}},
            {{"axis", std::int64_t{1}}});
  // Attention's head split, 15 K to 800 K elements (below 4 points an operator gets no curve of its own and
  // falls back to its kind's, which concat and pooling dominate). The two smallest (since 2026-11-28) cover
  // short sequences: BERT-base's at 32 tokens are 24.6 K elements, which the curve otherwise extrapolated.
  for (auto [s, h, d] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{{100, 10, 64},
                                                                                          {400, 16, 48},
                                                                                          {50, 8, 32},
                                                                                          {20, 12, 128},
                                                                                          {1000, 8, 96},
                                                                                          {40, 6, 64},
                                                                                          {16, 20, 48}})
    if (b.keep(i++, 2))
      b.add(fmt::format("transpose {}x{}x{} -> {}x{}x{}", s, h, d, h, s, d), "transpose", {{1, s, h, d}},
            {{"perm", Ints{0, 2, 1, 3}}, {"shuffle", std::int64_t{1}}});
  // Embedding lookups: `n` rows of `d` floats from a table of `v` rows (tables up to 20 MB).
  for (auto [v, d, n] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
           {1000, 64, 64}, {5000, 256, 256}, {20000, 256, 16}, {2000, 128, 1024}, {8000, 512, 8}})
    if (b.keep(i++, 2))
      b.add(fmt::format("embedding {} of {}x{}", n, v, d), "embedding",
            std::vector<TensorType>{{{v, d}, DType::kF32}, {{n}, DType::kI64}});
}

// |log(predicted / measured)|: symmetric in over- and under-prediction, and (unlike its square) not ruled by
// the few microbenchmarks the curve cannot follow, so the fit serves the median error the targets are set on.
double log_ratio_error(double predicted, double measured) {
  return std::abs(std::log(predicted / measured));
}

// Parameters <-> log-space vector: [log cmax, log(chalf + floor), log mmax, log(mhalf + floor)].
constexpr double kHalfFloor = 1e-9;
std::vector<double> to_vector(const models::KindEfficiency& k) {
  return {std::log(k.compute.max), std::log(k.compute.half_seconds + kHalfFloor), std::log(k.memory.max),
          std::log(k.memory.half_seconds + kHalfFloor)};
}
models::KindEfficiency from_vector(const std::vector<double>& x) {
  auto max = [](double l) { return std::clamp(std::exp(l), 1e-4, 16.0); };
  auto half = [](double l) { return std::clamp(std::exp(l) - kHalfFloor, 0.0, 1.0); };
  return {{max(x[0]), half(x[1])}, {max(x[2]), half(x[3])}};
}

}  // namespace

std::vector<Microbenchmark> calibration_suite(bool quick, bool large) {
  SuiteBuilder b(quick, large);
  add_matmuls(b);
  add_convs(b);
  add_pools(b);
  add_elementwise(b);
  add_reductions(b);
  add_movement(b);
  return b.take();
}

std::vector<CalibrationPoint> measure_suite(const std::vector<Microbenchmark>& suite, const MeasureOptions& o,
                                            const ReplayDevice& device) {
  if (const auto why = device.unavailable(); !why.empty()) throw std::runtime_error(why);
  if (o.rounds < 1)
    throw std::invalid_argument(fmt::format("measure_suite: {} rounds (at least 1)", o.rounds));
  const models::NodeId node = 0;
  std::vector<CalibrationPoint> points;
  std::vector<TimingOptions> timing;  // per benchmark, decided in the first round
  std::vector<RoundExtremes> rounds;  // per benchmark, its rounds' medians
  const std::size_t total = suite.size() * static_cast<std::size_t>(o.rounds);
  for (int round = 0; round < o.rounds; ++round)
    for (std::size_t i = 0; i < suite.size(); ++i) {
      const auto& m = suite[i];
      if (round == 0) {
        // One untimed probe run decides how many repetitions fit the target time (at least 3).
        TimingOptions probe = o.timing;
        probe.repeat = 1;
        const auto first = device.time_node(m.graph, node, probe);
        TimingOptions t = o.timing;
        if (first.median_seconds > 0)
          t.repeat =
              std::clamp(static_cast<int>(o.target_seconds / first.median_seconds), 3, o.timing.repeat);
        timing.push_back(t);
      }
      const auto measured = device.time_node(m.graph, node, timing[i]);
      if (measured.backend.backend == CpuBackend::kReference)
        throw std::runtime_error(
            fmt::format("microbenchmark '{}' ran on the reference kernel ({}): its time says "
                        "nothing about {}'s kernels",
                        m.label, measured.backend.detail, device.kernels));
      CalibrationPoint p{m.label, models::cost_curve_name(m.graph, m.graph.node(node)), m.graph,
                         measured.median_seconds};
      if (o.progress) o.progress(static_cast<std::size_t>(round) * suite.size() + i + 1, total, p);
      if (round == 0) {
        points.push_back(std::move(p));
        rounds.emplace_back();
      }
      rounds[i].add(measured.median_seconds);
    }
  for (std::size_t i = 0; i < points.size(); ++i) {
    points[i].measured = rounds[i].smallest;
    points[i].round_spread = rounds[i].spread();
  }
  return points;
}

double predicted_seconds(const CalibrationPoint& p, const hw::GpuSpec& gpu,
                         const models::RooflineParams& params) {
  const models::CostModel cost(gpu, params);
  return cost.node_cost(p.graph, p.graph.node(0)).seconds;
}

std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                std::vector<double> x0, double step, int iterations, double tolerance) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> simplex{x0};
  for (std::size_t i = 0; i < n; ++i) {
    auto x = x0;
    x[i] += step;
    simplex.push_back(std::move(x));
  }
  std::vector<double> value(simplex.size());
  for (std::size_t i = 0; i < simplex.size(); ++i) value[i] = f(simplex[i]);
  auto along = [&](const std::vector<double>& from, const std::vector<double>& to, double t) {
    std::vector<double> x(n);
    for (std::size_t d = 0; d < n; ++d) x[d] = from[d] + t * (to[d] - from[d]);
    return x;
  };
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::size_t> order(simplex.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return value[a] < value[b]; });
    const std::size_t best = order.front(), worst = order.back(), second = order[order.size() - 2];
    if (value[worst] - value[best] < tolerance) break;
    std::vector<double> centroid(n, 0.0);
    for (std::size_t i : order)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d) centroid[d] += simplex[i][d] / static_cast<double>(n);
    const auto reflected = along(centroid, simplex[worst], -1.0);
    const double fr = f(reflected);
    if (fr < value[best]) {
      const auto expanded = along(centroid, simplex[worst], -2.0);
      const double fe = f(expanded);
      if (fe < fr)
        simplex[worst] = expanded, value[worst] = fe;
      else
        simplex[worst] = reflected, value[worst] = fr;
    } else if (fr < value[second]) {
      simplex[worst] = reflected, value[worst] = fr;
    } else {
      const bool outside = fr < value[worst];
      const auto contracted = along(centroid, outside ? reflected : simplex[worst], 0.5);
      const double fc = f(contracted);
      if (fc < std::min(fr, value[worst])) {
        simplex[worst] = contracted, value[worst] = fc;
      } else {  // shrink towards the best vertex
        for (std::size_t i = 0; i < simplex.size(); ++i)
          if (i != best) simplex[i] = along(simplex[best], simplex[i], 0.5), value[i] = f(simplex[i]);
      }
    }
  }
  const auto best = std::min_element(value.begin(), value.end()) - value.begin();
  return simplex[static_cast<std::size_t>(best)];
}

CalibrationResult fit_cost_params(const std::vector<CalibrationPoint>& points, const hw::GpuSpec& gpu,
                                  int min_points) {
  CalibrationResult result;
  result.params.device = gpu.name;
  result.params.roofline = models::RooflineParams::defaults();
  const auto defaults = models::RooflineParams::defaults();

  // Groups: per curve (operator name or name:variant) and per kind, in name order (deterministic).
  std::map<std::string, std::vector<const CalibrationPoint*>> by_curve, by_kind;
  for (const auto& p : points) {
    by_curve[p.curve].push_back(&p);
    by_kind[std::string(models::op_kind_name(p.graph.node(0).op->kind))].push_back(&p);
  }
  auto errors = [&](const std::vector<const CalibrationPoint*>& group, const models::RooflineParams& params) {
    std::vector<double> predicted, measured;
    const models::CostModel cost(gpu, params);
    for (const auto* p : group) {
      predicted.push_back(cost.node_cost(p->graph, p->graph.node(0)).seconds);
      measured.push_back(p->measured);
    }
    return error_summary(predicted, measured);
  };
  // Fits one group's curves, installed into `params` by `install`; returns the fit summary.
  auto fit_group =
      [&](const std::string& name, bool is_kind, const std::vector<const CalibrationPoint*>& group,
          const std::vector<models::KindEfficiency>& starts,
          const std::function<void(models::RooflineParams&, const models::KindEfficiency&)>& install) {
        FamilyFit fit;
        fit.name = name;
        fit.is_kind = is_kind;
        fit.points = static_cast<int>(group.size());
        models::RooflineParams trial = result.params.roofline;
        install(trial, starts.front());
        fit.median_abs_error_before = errors(group, trial).median_abs;
        auto objective = [&](const std::vector<double>& x) {
          install(trial, from_vector(x));
          double sum = 0;
          const models::CostModel cost(gpu, trial);  // one per evaluation, not one per point
          for (const auto* p : group)
            sum += log_ratio_error(cost.node_cost(p->graph, p->graph.node(0)).seconds, p->measured);
          return sum / static_cast<double>(group.size());
        };
        // From each start, rounds of shrinking initial simplices (Nelder-Mead can stall on a degenerate
        // simplex, and the max() of the two lines has kinks); the best end point wins.
        std::vector<double> x;
        double best = std::numeric_limits<double>::infinity();
        for (const auto& s0 : starts) {
          auto y = to_vector(s0);
          for (double step : {1.0, 0.3, 0.1}) y = nelder_mead(objective, y, step, 2000);
          if (const double v = objective(y); v < best) best = v, x = y;
        }
        fit.fitted = from_vector(x);
        install(trial, fit.fitted);
        const auto after = errors(group, trial);
        fit.median_abs_error_after = after.median_abs;
        fit.max_abs_error_after = after.max_abs;
        return fit;
      };
  for (const auto& [kind_name, group] : by_kind) {
    const auto k = group.front()->graph.node(0).op->kind;
    auto install = [k](models::RooflineParams& p, const models::KindEfficiency& e) {
      p.by_kind[static_cast<std::size_t>(k)] = e;
    };
    auto fit = fit_group(kind_name, true, group, {defaults.by_kind[static_cast<std::size_t>(k)]}, install);
    install(result.params.roofline, fit.fitted);
    result.fits.push_back(std::move(fit));
  }
  std::vector<FamilyFit> op_fits;
  for (const auto& [curve, group] : by_curve) {
    if (static_cast<int>(group.size()) < min_points) continue;
    const auto kind = group.front()->graph.node(0).op->kind;
    auto install = [curve = curve](models::RooflineParams& p, const models::KindEfficiency& e) {
      p.by_op[curve] = e;
    };
    const auto k = static_cast<std::size_t>(kind);
    auto fit =
        fit_group(curve, false, group, {defaults.by_kind[k], result.params.roofline.by_kind[k]}, install);
    install(result.params.roofline, fit.fitted);
    op_fits.push_back(std::move(fit));
  }
  op_fits.insert(op_fits.end(), std::make_move_iterator(result.fits.begin()),
                 std::make_move_iterator(result.fits.end()));
  result.fits = std::move(op_fits);
  // What the fit saw, for the file's `fit` provenance; callers add how it was run (command, system, threads).
  nlohmann::json families = nlohmann::json::array();
  for (const auto& f : result.fits)
    families.push_back({{"name", f.name},
                        {"kind", f.is_kind},
                        {"points", f.points},
                        {"median_abs_error_prior", f.median_abs_error_before},
                        {"median_abs_error_fitted", f.median_abs_error_after},
                        {"max_abs_error_fitted", f.max_abs_error_after}});
  result.params.fit = {{"peak_fp32_flops", gpu.peak_fp32},
                       {"memory_bandwidth_bytes_per_s", gpu.hbm_bandwidth},
                       {"microbenchmarks", points.size()},
                       {"families", std::move(families)}};
  return result;
}

}  // namespace strata::validate

namespace strata::validate {

std::vector<OpError> compare_with_cost_model(const models::Graph& g, const CpuProfile& profile,
                                             const models::CostModel& cost) {
  std::vector<OpError> rows;
  for (const auto& op : profile.ops) {
    const auto& n = g.node(op.node);
    const auto c = cost.node_cost(g, n);
    if (c.measured)
      throw std::invalid_argument(
          "compare_with_cost_model: the cost model has a profile database; its "
          "predictions would be the measurements");
    rows.push_back({std::string(n.op->name), n.name, op.key, op.instances, op.timing.median_seconds,
                    c.seconds, op.round_spread});
  }
  return rows;
}

}  // namespace strata::validate
