#include "models/ir/dtype.h"

namespace strata::models {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kF64:
      return "f64";
    case DType::kI64:
      return "i64";
    case DType::kI32:
      return "i32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "f32" || s == "fp32") return DType::kF32;
  if (s == "f16" || s == "fp16") return DType::kF16;
  if (s == "bf16") return DType::kBF16;
  if (s == "f64" || s == "fp64") return DType::kF64;
  if (s == "i64") return DType::kI64;
  if (s == "i32") return DType::kI32;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
  }
  return 4;
}

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

hw::DType to_hw(DType t) {
  switch (t) {
    case DType::kF16:
      return hw::DType::kFp16;
    case DType::kBF16:
      return hw::DType::kBf16;
    case DType::kF64:
      return hw::DType::kFp64;
    default:
      return hw::DType::kFp32;
  }
}

}  // namespace strata::models
