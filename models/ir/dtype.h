// Element types of IR tensors. Floating types map onto the hardware catalogue's hw::DType for costing;
// integer types exist for indices (embedding lookups, ONNX Gather).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "hw/gpu_spec.h"

namespace strata::models {

enum class DType : std::uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32 };

std::string_view dtype_name(DType t);                  // "f32", "f16", "bf16", "f64", "i64", "i32"
std::optional<DType> parse_dtype(std::string_view s);  // accepts the names above and fp32/fp16/fp64
int dtype_bytes(DType t);
bool is_float(DType t);
// The compute dtype a kernel on this element type runs at (f32 -> fp32, ints -> fp32 for costing).
hw::DType to_hw(DType t);

}  // namespace strata::models
