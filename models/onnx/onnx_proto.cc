#include "models/onnx/onnx_proto.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::models::onnx_detail {

using OnnxType = ::onnx::TensorProto_DataType;

namespace {

// The element types strata and ONNX share, declared once for both directions.
struct TypePair {
  int onnx;
  DType dtype;
};
constexpr TypePair kTypes[] = {
    {::onnx::TensorProto_DataType_FLOAT, DType::kF32},
    {::onnx::TensorProto_DataType_FLOAT16, DType::kF16},
    {::onnx::TensorProto_DataType_BFLOAT16, DType::kBF16},
    {::onnx::TensorProto_DataType_DOUBLE, DType::kF64},
    {::onnx::TensorProto_DataType_INT64, DType::kI64},
    {::onnx::TensorProto_DataType_INT32, DType::kI32},
};

}  // namespace

std::optional<DType> from_onnx_type(int t) {
  for (const auto& p : kTypes)
    if (p.onnx == t) return p.dtype;
  return std::nullopt;
}
int to_onnx_type(DType t) {
  for (const auto& p : kTypes)
    if (p.dtype == t) return p.onnx;
  throw std::logic_error(fmt::format("element type {} has no ONNX counterpart", dtype_name(t)));
}
std::string onnx_type_name(int t) {
  return ::onnx::TensorProto_DataType_IsValid(t) ? ::onnx::TensorProto_DataType_Name(static_cast<OnnxType>(t))
                                                 : std::to_string(t);
}

namespace {

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal
      int e = -1;
      std::uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((m & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}
std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mant = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return static_cast<std::uint16_t>(sign | 0x7C00u | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    if ((mant >> (shift - 1)) & 1) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  if (mant & 0x1000) ++h;  // round half up
  return static_cast<std::uint16_t>(h);
}

template <class Raw>
std::vector<double> from_raw(const std::string& raw) {
  std::vector<double> out(raw.size() / sizeof(Raw));
  for (std::size_t i = 0; i < out.size(); ++i) {
    Raw r;
    std::memcpy(&r, raw.data() + i * sizeof(Raw), sizeof(Raw));
    out[i] = static_cast<double>(r);
  }
  return out;
}

}  // namespace

OnnxTensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& where) {
  OnnxTensor out;
  out.name = t.name();
  const auto dt = from_onnx_type(t.data_type());
  if (!dt)
    throw OnnxUnsupported(
        fmt::format("{}: tensor '{}' has element type {} (supported: FLOAT, FLOAT16, BFLOAT16, "
                    "DOUBLE, INT64, INT32)",
                    where, t.name(), onnx_type_name(t.data_type())));
  out.type.dtype = *dt;
  for (auto d : t.dims()) out.type.shape.push_back(d);
  if (t.data_location() == ::onnx::TensorProto_DataLocation_EXTERNAL)
    throw OnnxUnsupported(
        fmt::format("{}: tensor '{}' stores its data externally (not supported)", where, t.name()));
  const bool raw = t.has_raw_data();
  switch (t.data_type()) {
    case ::onnx::TensorProto_DataType_FLOAT:
      out.data = raw ? from_raw<float>(t.raw_data())
                     : std::vector<double>(t.float_data().begin(), t.float_data().end());
      break;
    case ::onnx::TensorProto_DataType_DOUBLE:
      out.data = raw ? from_raw<double>(t.raw_data())
                     : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    case ::onnx::TensorProto_DataType_INT64:
      out.data = raw ? from_raw<std::int64_t>(t.raw_data())
                     : std::vector<double>(t.int64_data().begin(), t.int64_data().end());
      break;
    case ::onnx::TensorProto_DataType_INT32:
      out.data = raw ? from_raw<std::int32_t>(t.raw_data())
                     : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
      break;
    default: {  // 16-bit floats: raw uint16 or int32_data holding the bits
      std::vector<std::uint16_t> bits;
      if (raw) {
        bits.resize(t.raw_data().size() / 2);
        std::memcpy(bits.data(), t.raw_data().data(), bits.size() * 2);
      } else {
        for (auto v : t.int32_data()) bits.push_back(static_cast<std::uint16_t>(v));
      }
      for (auto b : bits)
        out.data.push_back(t.data_type() == ::onnx::TensorProto_DataType_FLOAT16
                               ? half_to_float(b)
                               : std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16));
    }
  }
  std::int64_t count = 0;
  try {
    count = out.type.numel();
  } catch (const ShapeOverflow& e) {
    throw OnnxError(fmt::format("{}: tensor '{}': {}", where, t.name(), e.what()));
  }
  if (static_cast<std::int64_t>(out.data.size()) != count)
    throw OnnxError(fmt::format("{}: tensor '{}' has {} values for shape {}", where, t.name(),
                                out.data.size(), shape_str(out.type.shape)));
  return out;
}

void fill_proto(::onnx::TensorProto& t, const std::string& name, const TensorType& type,
                const std::vector<double>& data) {
  t.set_name(name);
  t.set_data_type(to_onnx_type(type.dtype));
  for (auto d : type.shape) t.add_dims(d);
  std::string raw;
  auto put = [&](auto v) { raw.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  for (double x : data) {
    switch (type.dtype) {
      case DType::kF32:
        put(static_cast<float>(x));
        break;
      case DType::kF64:
        put(x);
        break;
      case DType::kI64:
        put(static_cast<std::int64_t>(std::llround(x)));
        break;
      case DType::kI32:
        put(static_cast<std::int32_t>(std::llround(x)));
        break;
      case DType::kF16:
        put(float_to_half(static_cast<float>(x)));
        break;
      case DType::kBF16:
        put(static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(x)) >> 16));
        break;
    }
  }
  t.set_raw_data(raw);
}

std::string read_file(const std::string& path) {
  if (path.empty()) throw OnnxError("ONNX model path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw OnnxError(fmt::format("{}: is a directory, expected an ONNX model file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OnnxError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw OnnxError(fmt::format("{}: read failed", path));
  return ss.str();
}

}  // namespace strata::models::onnx_detail
