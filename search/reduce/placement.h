// Parallelism placements (P2 section 2.1, 3.1): a parallelism matrix factors every parallelism axis over the
// levels of a machine hierarchy (row products = axis sizes, column products = level cardinalities), and a
// fixed layout convention maps each device to its axis coordinates. See docs/reduce.md.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"

namespace strata::search::reduce {

// x[axis][level]: how many children of a level-(j-1) node axis i is split across at level j.
using Matrix = std::vector<std::vector<int>>;

// Every parallelism matrix for `level_counts` (outermost first) and `axis_sizes`, in lexicographic order of
// the row-major entries. Throws std::invalid_argument when the products differ or a size is < 1.
std::vector<Matrix> enumerate_matrices(std::span<const int> level_counts, std::span<const int> axis_sizes);

// The paper's notation, e.g. "[[1,4],[4,4]]".
std::string format_matrix(const Matrix& m);

// A matrix made concrete: which physical device holds which axis coordinates.
//
// Layout convention (inferred from the device labels of P2 Fig. 2b-2d, which it matches): the device index is
// the mixed-radix number of the per-level child indices (top level most significant); a level's child index
// is the mixed-radix number of the per-axis digits of that level (axis 0 most significant); an axis
// coordinate is the mixed-radix number of its digits over the levels (top level most significant). Device
// indices equal hw::Rank when the hierarchy is the topology's levels() (node-major).
class Placement {
 public:
  Placement(std::vector<hw::Level> levels, std::vector<int> axes, Matrix matrix);

  const std::vector<hw::Level>& levels() const { return levels_; }
  const std::vector<int>& axes() const { return axes_; }
  const Matrix& matrix() const { return matrix_; }
  int num_devices() const { return num_devices_; }
  int num_axes() const { return static_cast<int>(axes_.size()); }
  int num_levels() const { return static_cast<int>(levels_.size()); }

  // Place value of digit u[axis][level] in the device index: device = sum of digit x weight.
  int digit_weight(int axis, int level) const {
    return weight_[static_cast<std::size_t>(axis)][static_cast<std::size_t>(level)];
  }
  // Coordinates of every axis for a device.
  std::vector<int> coordinates(int device) const;
  int device(std::span<const int> coordinates) const;

  // Devices that share every coordinate except those of `varying_axes`: the groups of a collective over those
  // axes. Members in device order; groups ordered by their first member.
  std::vector<std::vector<int>> groups(std::span<const int> varying_axes) const;

  // Human form: the matrix and, for every axis, its groups of GPUs ("n0.g3"), abbreviated when long.
  std::string describe(int max_groups_per_axis = 4) const;

 private:
  std::vector<hw::Level> levels_;
  std::vector<int> axes_;
  Matrix matrix_;
  int num_devices_ = 1;
  std::vector<std::vector<int>> weight_;
};

// "n1.g3" for device 19 of a 16-GPU-per-node hierarchy: one letter per level name, top level first.
std::string device_name(std::span<const hw::Level> levels, int device);

// Checks that `axes` multiply to the device count and `reduce_axes` are distinct valid axis indices; throws
// std::invalid_argument saying what is wrong.
// `reduce_field` names the option the reduction axes came from in messages (--reduce, or --joint for joint
// placement).
void check_axes(std::span<const hw::Level> levels, std::span<const int> axes,
                std::span<const int> reduce_axes, std::string_view reduce_field = "--reduce");

}  // namespace strata::search::reduce
