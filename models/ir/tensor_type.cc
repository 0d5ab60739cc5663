#include "models/ir/tensor_type.h"

#include <fmt/format.h>

namespace strata::models {

std::int64_t numel(std::span<const std::int64_t> shape) {
  bool empty = false;
  for (auto d : shape) {
    if (d < 0) throw ShapeOverflow(fmt::format("shape {} has a negative dimension", shape_str(shape)));
    empty = empty || d == 0;
  }
  if (empty) return 0;  // even when the other dimensions' product would not fit
  std::int64_t n = 1;
  for (auto d : shape) {
    if (__builtin_mul_overflow(n, d, &n))
      throw ShapeOverflow(fmt::format("shape {} has more than 2^63 - 1 elements", shape_str(shape)));
  }
  return n;
}

std::int64_t TensorType::numel() const {
  return models::numel(shape);
}

std::string shape_str(std::span<const std::int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

std::string type_str(const TensorType& t) {
  return std::string(dtype_name(t.dtype)) + shape_str(t.shape);
}

std::vector<std::int64_t> strides_of(std::span<const std::int64_t> shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[static_cast<std::size_t>(i)] =
        s[static_cast<std::size_t>(i) + 1] * shape[static_cast<std::size_t>(i) + 1];
  return s;
}

}  // namespace strata::models
