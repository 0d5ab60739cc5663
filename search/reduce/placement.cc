#include "search/reduce/placement.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace strata::search::reduce {
namespace {

// Product of positive sizes; sizes typed by users (--axes 1048576,1048576,...) can overflow 64 bits. The
// error starts with `option` when the sizes came from one.
long long product(std::span<const int> v, std::string_view option = {}) {
  long long p = 1;
  for (int x : v)
    if (__builtin_mul_overflow(p, static_cast<long long>(x), &p))
      throw std::invalid_argument(fmt::format("{}{}the sizes {} multiply to more than 2^63", option,
                                              option.empty() ? "" : ": ", fmt::join(v, ",")));
  return p;
}

// Column by column: level j's cardinality is split into one factor per axis, each dividing what the axis
// still has left to place. Factors are tried in increasing order, so matrices come out in lexicographic
// order of their columns; the caller re-sorts row-major.
void enumerate_column(std::span<const int> levels, std::size_t level, std::size_t axis, int level_left,
                      std::vector<int>& axis_left, Matrix& current, std::vector<Matrix>& out) {
  const std::size_t num_axes = axis_left.size();
  if (axis == num_axes) {
    if (level_left != 1) return;
    if (level + 1 == levels.size()) {
      if (std::all_of(axis_left.begin(), axis_left.end(), [](int a) { return a == 1; }))
        out.push_back(current);
      return;
    }
    enumerate_column(levels, level + 1, 0, levels[level + 1], axis_left, current, out);
    return;
  }
  for (int f = 1; f <= level_left; ++f) {
    if (level_left % f != 0 || axis_left[axis] % f != 0) continue;
    if (axis + 1 == num_axes && f != level_left) continue;
    current[axis][level] = f;
    axis_left[axis] /= f;
    enumerate_column(levels, level, axis + 1, level_left / f, axis_left, current, out);
    axis_left[axis] *= f;
  }
}

}  // namespace

std::vector<Matrix> enumerate_matrices(std::span<const int> level_counts, std::span<const int> axis_sizes) {
  if (level_counts.empty()) throw std::invalid_argument("the hierarchy has no levels");
  if (axis_sizes.empty()) throw std::invalid_argument("no parallelism axes given");
  for (int c : level_counts)
    if (c < 1) throw std::invalid_argument(fmt::format("level cardinality {} is not positive", c));
  for (int a : axis_sizes)
    if (a < 1) throw std::invalid_argument(fmt::format("axis size {} is not positive", a));
  if (product(level_counts) != product(axis_sizes))
    throw std::invalid_argument(
        fmt::format("the axis sizes [{}] multiply to {}, but the system has {} devices",
                    fmt::join(axis_sizes, ","), product(axis_sizes), product(level_counts)));
  std::vector<Matrix> out;
  std::vector<int> axis_left(axis_sizes.begin(), axis_sizes.end());
  Matrix current(axis_sizes.size(), std::vector<int>(level_counts.size(), 1));
  enumerate_column(level_counts, 0, 0, level_counts[0], axis_left, current, out);
  std::sort(out.begin(), out.end());
  return out;
}

std::string format_matrix(const Matrix& m) {
  std::string s = "[";
  for (std::size_t i = 0; i < m.size(); ++i) s += fmt::format("{}[{}]", i ? "," : "", fmt::join(m[i], ","));
  return s + "]";
}

Placement::Placement(std::vector<hw::Level> levels, std::vector<int> axes, Matrix matrix)
    : levels_(std::move(levels)), axes_(std::move(axes)), matrix_(std::move(matrix)) {
  if (matrix_.size() != axes_.size()) throw std::invalid_argument("matrix needs one row per axis");
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    if (matrix_[i].size() != levels_.size()) throw std::invalid_argument("matrix needs one column per level");
    if (product(matrix_[i]) != axes_[i])
      throw std::invalid_argument(
          fmt::format("row {} of {} does not multiply to axis size {}", i, format_matrix(matrix_), axes_[i]));
  }
  for (std::size_t j = 0; j < levels_.size(); ++j) {
    long long col = 1;
    for (const auto& row : matrix_) col *= row[j];
    if (col != levels_[j].count)
      throw std::invalid_argument(
          fmt::format("column {} of {} does not multiply to level '{}' cardinality {}", j,
                      format_matrix(matrix_), levels_[j].name, levels_[j].count));
    num_devices_ *= levels_[j].count;
  }
  // Level j's children are worth the product of the cardinalities below it; inside the level, axis i's digit
  // is worth the product of the factors of the axes after it.
  weight_.assign(axes_.size(), std::vector<int>(levels_.size(), 0));
  int level_weight = num_devices_;
  for (std::size_t j = 0; j < levels_.size(); ++j) {
    level_weight /= levels_[j].count;
    int w = level_weight;
    for (std::size_t i = axes_.size(); i-- > 0;) {
      weight_[i][j] = w;
      w *= matrix_[i][j];
    }
  }
}

std::vector<int> Placement::coordinates(int device) const {
  std::vector<int> coords(axes_.size(), 0);
  // Digits: device -> per-level child index -> per-axis digit; then each axis reads its digits top-down.
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    int c = 0;
    for (std::size_t j = 0; j < levels_.size(); ++j) {
      const int digit = (device / weight_[i][j]) % matrix_[i][j];
      c = c * matrix_[i][j] + digit;
    }
    coords[i] = c;
  }
  return coords;
}

int Placement::device(std::span<const int> coordinates) const {
  if (coordinates.size() != axes_.size()) throw std::invalid_argument("one coordinate per axis expected");
  int d = 0;
  for (std::size_t i = 0; i < axes_.size(); ++i) {
    int c = coordinates[i];
    if (c < 0 || c >= axes_[i])
      throw std::invalid_argument(fmt::format("coordinate {} out of range for axis {}", c, i));
    for (std::size_t j = levels_.size(); j-- > 0;) {
      d += (c % matrix_[i][j]) * weight_[i][j];
      c /= matrix_[i][j];
    }
  }
  return d;
}

std::vector<std::vector<int>> Placement::groups(std::span<const int> varying_axes) const {
  std::vector<bool> varies(axes_.size(), false);
  for (int a : varying_axes) {
    if (a < 0 || a >= num_axes()) throw std::invalid_argument(fmt::format("axis {} does not exist", a));
    varies[static_cast<std::size_t>(a)] = true;
  }
  std::map<std::vector<int>, std::vector<int>> by_key;
  std::vector<std::vector<int>> ordered_keys;
  for (int d = 0; d < num_devices_; ++d) {
    auto key = coordinates(d);
    for (std::size_t i = 0; i < key.size(); ++i)
      if (varies[i]) key[i] = -1;
    auto [it, inserted] = by_key.try_emplace(key);
    if (inserted) ordered_keys.push_back(key);
    it->second.push_back(d);
  }
  std::vector<std::vector<int>> out;
  out.reserve(ordered_keys.size());
  for (const auto& k : ordered_keys) out.push_back(std::move(by_key[k]));
  return out;
}

std::string device_name(std::span<const hw::Level> levels, int device) {
  std::vector<int> idx(levels.size());
  for (std::size_t j = levels.size(); j-- > 0;) {
    idx[j] = device % levels[j].count;
    device /= levels[j].count;
  }
  std::string s;
  for (std::size_t j = 0; j < levels.size(); ++j) {
    if (levels[j].count == 1 && j + 1 < levels.size()) continue;
    if (!s.empty()) s += '.';
    s += fmt::format("{}{}", levels[j].name.empty() ? 'l' : levels[j].name[0], idx[j]);
  }
  return s;
}

std::string Placement::describe(int max_groups_per_axis) const {
  std::string s = fmt::format("matrix {} (rows: axes [{}], columns: levels", format_matrix(matrix_),
                              fmt::join(axes_, ","));
  for (const auto& l : levels_) s += fmt::format(" {}x{}", l.name, l.count);
  s += ")\n";
  for (int a = 0; a < num_axes(); ++a) {
    const std::array<int, 1> one{a};
    const auto gs = groups(one);
    s += fmt::format("  axis {} (size {}): {} groups; ", a, axes_[static_cast<std::size_t>(a)], gs.size());
    for (std::size_t g = 0; g < gs.size() && static_cast<int>(g) < max_groups_per_axis; ++g) {
      // Long groups: the first four members, then how many more.
      std::vector<std::string> names;
      for (std::size_t m = 0; m < gs[g].size() && m < 4; ++m) names.push_back(device_name(levels_, gs[g][m]));
      if (gs[g].size() > 4) names.push_back(fmt::format("...+{}", gs[g].size() - 4));
      s += fmt::format("{}{{{}}}", g ? " " : "", fmt::join(names, ","));
    }
    if (static_cast<int>(gs.size()) > max_groups_per_axis) s += " ...";
    s += "\n";
  }
  return s;
}

void check_axes(std::span<const hw::Level> levels, std::span<const int> axes,
                std::span<const int> reduce_axes, std::string_view reduce_field) {
  std::vector<int> counts;
  for (const auto& l : levels) counts.push_back(l.count);
  const long long devices = product(counts);
  if (axes.empty()) throw std::invalid_argument("--axes: at least one parallelism axis is needed");
  for (int a : axes)
    if (a < 1) throw std::invalid_argument(fmt::format("--axes: axis size {} is not positive", a));
  if (product(axes, "--axes") != devices)
    throw std::invalid_argument(fmt::format("--axes: the sizes {} multiply to {}, but the system has {} GPUs",
                                            fmt::join(axes, ","), product(axes), devices));
  if (reduce_axes.empty())
    throw std::invalid_argument(fmt::format("{}: at least one reduction axis is needed", reduce_field));
  std::vector<int> seen;
  for (int r : reduce_axes) {
    if (r < 0 || r >= static_cast<int>(axes.size()))
      throw std::invalid_argument(fmt::format("{}: axis {} does not exist (axes are numbered 0..{})",
                                              reduce_field, r, axes.size() - 1));
    if (std::find(seen.begin(), seen.end(), r) != seen.end())
      throw std::invalid_argument(fmt::format("{}: axis {} is named twice", reduce_field, r));
    seen.push_back(r);
  }
}

}  // namespace strata::search::reduce
