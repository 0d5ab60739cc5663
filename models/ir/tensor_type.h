// Static tensor types: a shape (row-major, outermost dimension first) and an element type.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/ir/dtype.h"

namespace strata::models {

using Shape = std::vector<std::int64_t>;

struct TensorType {
  Shape shape;
  DType dtype = DType::kF32;

  int rank() const { return static_cast<int>(shape.size()); }
  std::int64_t numel() const;
  double bytes() const { return static_cast<double>(numel()) * dtype_bytes(dtype); }
  bool operator==(const TensorType&) const = default;
};

// A shape whose element count is negative or does not fit in int64 (checked, never wraps).
class ShapeOverflow : public std::overflow_error {
 public:
  using std::overflow_error::overflow_error;
};

// Throws ShapeOverflow for a negative dimension or more than 2^63 - 1 elements.
std::int64_t numel(std::span<const std::int64_t> shape);
std::string shape_str(std::span<const std::int64_t> shape);  // "[2,3,4]"
std::string type_str(const TensorType& t);                   // "f32[2,3,4]"
// Row-major strides of a shape.
std::vector<std::int64_t> strides_of(std::span<const std::int64_t> shape);

}  // namespace strata::models
