#include "experiments/sweep_spec.h"

#include <charconv>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "hw/what_if.h"
#include "hw/yaml_patch.h"

namespace strata::experiments {
namespace {

constexpr std::size_t kMaxPoints = 1'000'000;

std::optional<double> as_number(const std::string& text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

SweepValue value_of(const YAML::Node& node) {
  SweepValue v{node, "", std::nullopt};
  if (node.IsScalar()) {
    v.text = node.Scalar();
    v.number = as_number(v.text);
  } else {
    YAML::Emitter out;
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
    out << node;
    v.text = out.c_str();
  }
  return v;
}

SweepValue number_value(double x, const SweepRange& r) {
  std::string text = r.integer ? fmt::format("{}", static_cast<long long>(x)) : fmt::format("{}", x);
  if (!r.unit.empty()) text += " " + r.unit;
  return SweepValue{YAML::Node(text), text, x};
}

// Names the target of `name` and checks what can be swept.
void classify(SweepAxis& axis) {
  const std::string& name = axis.name;
  if (name.starts_with("hw.")) {
    axis.target = AxisTarget::kHardware;
    axis.path = hw::split_dot_path(std::string_view(name).substr(3));
  } else if (name.starts_with("scale.")) {
    axis.target = AxisTarget::kScale;
    axis.path = {name.substr(6)};
    if (!hw::is_scale_factor(axis.path[0]))
      throw axis.where.error(fmt::format("unknown scale factor '{}' (expected one of: {})", axis.path[0],
                                         hw::scale_factor_names()));
  } else {
    axis.target = AxisTarget::kExperiment;
    axis.path = hw::split_dot_path(name);
    const std::string& top = axis.path[0];
    if (top == "experiment" || top == "kind" || top == "sweep")
      throw axis.where.error(fmt::format(
          "'{}' cannot be swept (the experiment's name, kind and sweep stay the same at every point)", top));
  }
  for (const auto& segment : axis.path)
    if (segment.empty()) throw axis.where.error(fmt::format("'{}' has an empty path segment", name));
}

SweepRange read_range(const YamlReader& r) {
  r.expect_map({"min", "max", "log", "integer", "unit"});
  SweepRange range;
  range.min = r.at("min").as_double();
  range.max = r.at("max").as_double();
  if (range.min > range.max)
    throw r.error(fmt::format("expected min <= max, got min {} and max {}", range.min, range.max));
  if (auto l = r.maybe("log")) range.log = l->as_bool();
  if (auto i = r.maybe("integer")) range.integer = i->as_bool();
  if (auto u = r.maybe("unit")) range.unit = u->as_string();
  if (range.log && range.min <= 0) throw r.at("min").error("a log range needs min > 0");
  if (range.integer && (range.min != std::floor(range.min) || range.max != std::floor(range.max) ||
                        std::fabs(range.min) > 0x1p53 || std::fabs(range.max) > 0x1p53))
    throw r.error("an integer range needs whole-number min and max within +-2^53");
  return range;
}

// The axes of one mapping (`axes:` or `scale:`, whose names get the scale. prefix).
void read_axes(const YamlReader& section, std::string_view prefix, SweepMode mode,
               std::vector<SweepAxis>& axes) {
  if (!section.is_map()) throw section.error("expected a mapping of axis: values");
  for (const auto& kv : section.node()) {
    const std::string key = kv.first.Scalar();
    const YamlReader values = section.at(key);
    SweepAxis axis{std::string(prefix) + key, AxisTarget::kExperiment, {}, values, {}, std::nullopt};
    classify(axis);
    const bool sampled = mode == SweepMode::kRandom || mode == SweepMode::kLhs;
    if (values.is_map() && values.has("min")) {
      if (!sampled)
        throw values.error(
            fmt::format("a range {{min, max}} needs mode random or lhs (mode is {})", sweep_mode_name(mode)));
      axis.range = read_range(values);
    } else {
      if (!values.is_sequence())
        throw values.error(sampled ? "expected a list of values or a range {min: .., max: ..}"
                                   : "expected a list of values");
      if (values.size() == 0) throw values.error("expected at least one value (the axis is empty)");
      for (std::size_t i = 0; i < values.size(); ++i) axis.values.push_back(value_of(values.node()[i]));
    }
    if (axis.target == AxisTarget::kScale) {
      for (std::size_t i = 0; i < axis.values.size(); ++i)
        if (!axis.values[i].number || *axis.values[i].number <= 0)
          throw values.at(i).error("expected a scale factor: a number > 0");
      if (axis.range && (axis.range->min <= 0 || !axis.range->unit.empty()))
        throw values.error("expected a range of factors: min > 0 and no unit");
    }
    axes.push_back(std::move(axis));
  }
}

// A value of `axis` for the unit-interval draw `u`.
SweepValue draw(const SweepAxis& axis, double u) {
  if (!axis.range)
    return axis.values[std::min(axis.values.size() - 1, static_cast<std::size_t>(u * axis.values.size()))];
  const SweepRange& r = *axis.range;
  const double hi = r.integer ? r.max + 1 : r.max;
  double x =
      r.log ? std::exp(std::log(r.min) + u * (std::log(hi) - std::log(r.min))) : r.min + u * (hi - r.min);
  if (r.integer) x = std::floor(x);
  return number_value(std::clamp(x, r.min, r.max), r);
}

std::vector<std::vector<SweepValue>> expand_grid(const std::vector<SweepAxis>& axes) {
  std::size_t total = 1;
  for (const auto& a : axes) {
    total *= a.values.size();
    if (total > kMaxPoints) throw a.where.error(fmt::format("the grid has more than {} points", kMaxPoints));
  }
  std::vector<std::vector<SweepValue>> points;
  for (std::size_t i = 0; i < total; ++i) {
    std::vector<SweepValue> p(axes.size());
    std::size_t rest = i;  // the last axis varies fastest, as nested loops written in axis order
    for (std::size_t a = axes.size(); a-- > 0;) {
      p[a] = axes[a].values[rest % axes[a].values.size()];
      rest /= axes[a].values.size();
    }
    points.push_back(std::move(p));
  }
  return points;
}

std::vector<std::vector<SweepValue>> expand_zip(const std::vector<SweepAxis>& axes) {
  const std::size_t n = axes.front().values.size();
  for (const auto& a : axes)
    if (a.values.size() != n)
      throw a.where.error(
          fmt::format("zip pairs the i-th values of every axis: expected {} values like '{}', got {}", n,
                      axes.front().name, a.values.size()));
  std::vector<std::vector<SweepValue>> points(n);
  for (std::size_t i = 0; i < n; ++i)
    for (const auto& a : axes) points[i].push_back(a.values[i]);
  return points;
}

// Random: each point draws every axis in order from one generator. Latin hypercube: each axis in order
// draws a permutation of the n strata (Fisher-Yates) and then one position inside each stratum, so each
// axis has exactly one sample in each of its n equal slices (of log(value) for a log range).
std::vector<std::vector<SweepValue>> expand_sampled(const SweepSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  const std::size_t n = spec.samples;
  std::vector<std::vector<SweepValue>> points(n, std::vector<SweepValue>(spec.axes.size()));
  if (spec.mode == SweepMode::kRandom) {
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t a = 0; a < spec.axes.size(); ++a) points[i][a] = draw(spec.axes[a], uniform01(rng));
    return points;
  }
  for (std::size_t a = 0; a < spec.axes.size(); ++a) {
    std::vector<std::size_t> stratum(n);
    std::iota(stratum.begin(), stratum.end(), std::size_t{0});
    for (std::size_t i = n; i-- > 1;) std::swap(stratum[i], stratum[uniform_index(rng, i + 1)]);
    for (std::size_t i = 0; i < n; ++i) {
      const double u = (static_cast<double>(stratum[i]) + uniform01(rng)) / static_cast<double>(n);
      points[i][a] = draw(spec.axes[a], std::min(u, std::nextafter(1.0, 0.0)));
    }
  }
  return points;
}

std::vector<std::vector<SweepValue>> read_points(const YamlReader& list, std::vector<SweepAxis>& axes) {
  list.expect_sequence();
  if (list.size() == 0) throw list.error("expected at least one point");
  std::vector<std::vector<SweepValue>> points;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YamlReader p = list.at(i);
    if (!p.is_map() || p.size() == 0) throw p.error("expected a mapping of axis: value");
    std::vector<SweepValue> values;
    std::size_t a = 0;
    for (const auto& kv : p.node()) {
      const std::string key = kv.first.Scalar();
      if (i == 0) {
        SweepAxis axis{key, AxisTarget::kExperiment, {}, p.at(key), {}, std::nullopt};
        classify(axis);
        axes.push_back(std::move(axis));
      } else if (a >= axes.size() || axes[a].name != key) {
        std::string names;
        for (const auto& ax : axes) names += (names.empty() ? "" : ", ") + ax.name;
        throw p.at(key).error(
            fmt::format("every point lists the same axes in the same order as the first "
                        "point ({}); got '{}'",
                        names, key));
      }
      values.push_back(value_of(kv.second));
      if (axes[a].target == AxisTarget::kScale && (!values.back().number || *values.back().number <= 0))
        throw p.at(key).error("expected a scale factor: a number > 0");
      ++a;
    }
    if (a != axes.size())
      throw p.error(fmt::format("expected {} axes like the first point, got {}", axes.size(), a));
    points.push_back(std::move(values));
  }
  return points;
}

SweepMode read_mode(const YamlReader& sweep) {
  const auto m = sweep.maybe("mode");
  if (!m) return SweepMode::kGrid;
  const std::string mode = m->as_string();
  for (auto candidate :
       {SweepMode::kGrid, SweepMode::kList, SweepMode::kZip, SweepMode::kRandom, SweepMode::kLhs})
    if (sweep_mode_name(candidate) == mode) return candidate;
  throw m->error(fmt::format("unknown sweep mode '{}' (expected grid, list, zip, random or lhs)", mode));
}

}  // namespace

std::string_view sweep_mode_name(SweepMode mode) {
  switch (mode) {
    case SweepMode::kGrid:
      return "grid";
    case SweepMode::kList:
      return "list";
    case SweepMode::kZip:
      return "zip";
    case SweepMode::kRandom:
      return "random";
    case SweepMode::kLhs:
      return "lhs";
  }
  return "grid";
}

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
  return std::min(n - 1, static_cast<std::size_t>(uniform01(rng) * static_cast<double>(n)));
}

SweepSpec parse_sweep(const YamlReader& sweep) {
  sweep.expect_map({"mode", "axes", "scale", "points", "samples", "seed", "plot"});
  SweepSpec spec;
  spec.mode = read_mode(sweep);
  const bool sampled = spec.mode == SweepMode::kRandom || spec.mode == SweepMode::kLhs;
  if (spec.mode == SweepMode::kList) {
    for (auto key : {"axes", "scale", "samples", "seed"})
      if (sweep.has(key))
        throw sweep.at(key).error(
            "mode list takes its axes from `points` (write scale factors there as "
            "scale.<name>: factor)");
    spec.points = read_points(sweep.at("points"), spec.axes);
  } else {
    if (sweep.has("points")) throw sweep.at("points").error("`points` needs mode list");
    if (auto a = sweep.maybe("axes")) read_axes(*a, "", spec.mode, spec.axes);
    if (auto s = sweep.maybe("scale")) read_axes(*s, "scale.", spec.mode, spec.axes);
    if (spec.axes.empty()) throw sweep.error("expected at least one axis under `axes` or `scale`");
    if (sampled) {
      spec.samples = static_cast<std::size_t>(sweep.at("samples").as_int_in(1, kMaxPoints));
      if (auto s = sweep.maybe("seed")) spec.seed = static_cast<std::uint64_t>(s->as_int_in(0, INT64_MAX));
      spec.points = expand_sampled(spec);
    } else {
      for (auto key : {"samples", "seed"})
        if (sweep.has(key)) throw sweep.at(key).error("`samples` and `seed` need mode random or lhs");
      spec.points = spec.mode == SweepMode::kZip ? expand_zip(spec.axes) : expand_grid(spec.axes);
    }
  }
  for (std::size_t a = 0; a < spec.axes.size(); ++a)
    for (std::size_t b = 0; b < a; ++b)
      if (spec.axes[a].name == spec.axes[b].name)
        throw spec.axes[a].where.error(fmt::format("axis '{}' is given twice", spec.axes[a].name));
  if (auto p = sweep.maybe("plot")) {
    p->expect_map({"metric", "table", "row", "where"});
    if (auto m = p->maybe("metric")) spec.plot.metric = m->as_string();
    if (auto t = p->maybe("table")) spec.plot.table = t->as_string();
    if (auto r = p->maybe("row")) {
      if (r->is_scalar() && r->as_string() == "all")
        spec.plot.all_rows = true;
      else
        spec.plot.row = r->as_int_in(-1'000'000'000, 1'000'000'000);
    }
    if (auto w = p->maybe("where")) {
      if (!w->is_map() || w->size() == 0)
        throw w->error("expected a mapping of sweep.csv columns to values, e.g. {algorithm: ring}");
      for (const auto& kv : w->node()) {
        const auto column = kv.first.as<std::string>();
        spec.plot.where.emplace_back(column, w->at(column).as_string());
      }
    }
  }
  return spec;
}

std::string point_label(const SweepSpec& spec, std::size_t point) {
  std::string label;
  for (std::size_t a = 0; a < spec.axes.size(); ++a)
    label += fmt::format("{}{}={}", a ? ", " : "", spec.axes[a].name, spec.points[point][a].text);
  return label;
}

}  // namespace strata::experiments
