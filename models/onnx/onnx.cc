#include "models/onnx/onnx.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "util/atomic_file.h"

namespace strata::models {
namespace {

using OnnxType = ::onnx::TensorProto_DataType;
constexpr std::string_view kStrataDomain = "ai.strata";
constexpr int kExportOpset = 17;

// ---------------- element types and tensor data ----------------
std::optional<DType> from_onnx_type(int t) {
  switch (t) {
    case ::onnx::TensorProto_DataType_FLOAT:
      return DType::kF32;
    case ::onnx::TensorProto_DataType_FLOAT16:
      return DType::kF16;
    case ::onnx::TensorProto_DataType_BFLOAT16:
      return DType::kBF16;
    case ::onnx::TensorProto_DataType_DOUBLE:
      return DType::kF64;
    case ::onnx::TensorProto_DataType_INT64:
      return DType::kI64;
    case ::onnx::TensorProto_DataType_INT32:
      return DType::kI32;
    default:
      return std::nullopt;
  }
}
int to_onnx_type(DType t) {
  switch (t) {
    case DType::kF32:
      return ::onnx::TensorProto_DataType_FLOAT;
    case DType::kF16:
      return ::onnx::TensorProto_DataType_FLOAT16;
    case DType::kBF16:
      return ::onnx::TensorProto_DataType_BFLOAT16;
    case DType::kF64:
      return ::onnx::TensorProto_DataType_DOUBLE;
    case DType::kI64:
      return ::onnx::TensorProto_DataType_INT64;
    case DType::kI32:
      return ::onnx::TensorProto_DataType_INT32;
  }
  return ::onnx::TensorProto_DataType_FLOAT;
}
std::string onnx_type_name(int t) {
  return ::onnx::TensorProto_DataType_IsValid(t) ? ::onnx::TensorProto_DataType_Name(static_cast<OnnxType>(t))
                                                 : std::to_string(t);
}

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
  if (static_cast<std::int64_t>(out.data.size()) != out.type.numel())
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

// ---------------- import ----------------
struct Importer;
using Handler = std::function<void(Importer&)>;
const std::map<std::string, Handler>& handlers();

struct Importer {
  std::string source;
  const OnnxImportOptions& options;
  Graph g;
  int opset = 1;
  std::map<std::string, ValueId> values;
  const ::onnx::NodeProto* node = nullptr;
  int emitted = 0;
  bool fuse_relu = false;  // the next node is the exporter's Relu of this node's fused activation
  // Transposes the exporter wrote for matmul's trans_a/trans_b: folded back into the matmul that reads them.
  std::map<std::string, ValueId> pending_transpose;

  std::string where() const {
    return fmt::format("{}: node '{}' ({})", source, node->name(), node->op_type());
  }
  [[noreturn]] void unsupported(const std::string& msg) const { throw OnnxUnsupported(where() + ": " + msg); }
  [[noreturn]] void malformed(const std::string& msg) const { throw OnnxError(where() + ": " + msg); }

  int num_inputs() const { return node->input_size(); }
  bool has_in(int i) const { return i < node->input_size() && !node->input(i).empty(); }
  ValueId in(int i) {
    if (!has_in(i)) malformed(fmt::format("input {} is missing", i));
    if (auto p = pending_transpose.find(node->input(i)); p != pending_transpose.end()) {
      // Read by something other than a matmul: materialize it.
      const auto& src = p->second;
      Ints perm;
      const int r = g.type(src).rank();
      for (int k = 0; k < r; ++k) perm.push_back(k);
      std::swap(perm[static_cast<std::size_t>(r - 1)], perm[static_cast<std::size_t>(r - 2)]);
      const auto t = g.add_node("transpose", {src}, {{"perm", perm}}, node->input(i))[0];
      values[node->input(i)] = t;
      pending_transpose.erase(p);
    }
    auto it = values.find(node->input(i));
    if (it == values.end())
      malformed(fmt::format("input '{}' is not produced by an earlier node", node->input(i)));
    return it->second;
  }
  Shape shape(int i) { return g.type(in(i)).shape; }
  std::vector<std::int64_t> const_ints(int i, std::string_view what) {
    const auto& v = g.value(in(i));
    if (!v.data) unsupported(fmt::format("{} (input {}) must be a constant", what, i));
    std::vector<std::int64_t> out;
    for (double x : *v.data) out.push_back(static_cast<std::int64_t>(std::llround(x)));
    return out;
  }
  const ::onnx::AttributeProto* attr(std::string_view name) const {
    for (const auto& a : node->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  std::int64_t attr_i(std::string_view name, std::int64_t def) const {
    const auto* a = attr(name);
    return a ? a->i() : def;
  }
  double attr_f(std::string_view name, double def) const {
    const auto* a = attr(name);
    return a ? a->f() : def;
  }
  std::string attr_s(std::string_view name, std::string def) const {
    const auto* a = attr(name);
    return a ? a->s() : def;
  }
  std::optional<Ints> attr_ints(std::string_view name) const {
    const auto* a = attr(name);
    if (!a) return std::nullopt;
    return Ints(a->ints().begin(), a->ints().end());
  }
  void allow_attrs(std::initializer_list<std::string_view> allowed) const {
    for (const auto& a : node->attribute()) {
      bool ok = false;
      for (auto n : allowed) ok = ok || a.name() == n;
      if (!ok) {
        std::string list;
        for (auto n : allowed) list += (list.empty() ? "" : ", ") + std::string(n);
        unsupported(fmt::format("attribute '{}' is not supported (supported: {})", a.name(),
                                list.empty() ? "none" : list));
      }
    }
  }
  void require_outputs(int n) const {
    for (int i = n; i < node->output_size(); ++i)
      if (!node->output(i).empty())
        unsupported(fmt::format("output {} ('{}') is not supported; only the first {} output(s)", i,
                                node->output(i), n));
  }
  ValueId add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    return add_multi(op, std::move(inputs), std::move(attrs))[0];
  }
  std::vector<ValueId> add_multi(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    const std::string base = node->name().empty() ? node->op_type() + std::to_string(emitted) : node->name();
    try {
      return g.add_node(op, std::move(inputs), std::move(attrs),
                        emitted++ == 0 ? base : fmt::format("{}/{}", base, emitted));
    } catch (const GraphError& e) {
      malformed(e.what());
    }
  }
  ValueId scalar(double v, DType dt) {
    return g.add_constant(fmt::format("{}/const{}", node->name(), g.values().size()), {{}, dt}, {v});
  }
  void bind(int out, ValueId v) {
    if (out >= node->output_size() || node->output(out).empty()) return;
    values[node->output(out)] = v;
    g.set_value_name(v, node->output(out));
  }
};

Ints pads_for(Importer& im, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const auto auto_pad = im.attr_s("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto p = im.attr_ints("pads").value_or(Ints{0, 0, 0, 0});
    if (p.size() != 4) im.unsupported("only 2-D pads [top, left, bottom, right] are supported");
    return p;
  }
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    im.unsupported(fmt::format("auto_pad '{}' (supported: NOTSET, VALID, SAME_UPPER, SAME_LOWER)", auto_pad));
  Ints begin(2), end(2);
  for (int i = 0; i < 2; ++i) {
    const auto in = x[static_cast<std::size_t>(2 + i)], s = strides[static_cast<std::size_t>(i)];
    const auto k = (kernel[static_cast<std::size_t>(i)] - 1) * dilations[static_cast<std::size_t>(i)] + 1;
    const auto total = std::max<std::int64_t>(((in + s - 1) / s - 1) * s + k - in, 0);
    begin[static_cast<std::size_t>(i)] = auto_pad == "SAME_UPPER" ? total / 2 : (total + 1) / 2;
    end[static_cast<std::size_t>(i)] = total - begin[static_cast<std::size_t>(i)];
  }
  return {begin[0], begin[1], end[0], end[1]};
}

void require_rank(Importer& im, int input, int rank) {
  if (static_cast<int>(im.shape(input).size()) != rank)
    im.unsupported(fmt::format("input {} has rank {}; only rank {} (2-D NCHW) is supported", input,
                               im.shape(input).size(), rank));
}

void unary(Importer& im, std::string_view op) {
  im.allow_attrs({});
  im.bind(0, im.add(op, {im.in(0)}));
}
void binary(Importer& im, std::string_view op) {
  im.allow_attrs({});
  im.bind(0, im.add(op, {im.in(0), im.in(1)}));
}

constexpr std::string_view kFusedRelu = "strata.fused_activation";
constexpr std::string_view kOperandTranspose = "strata.matmul_operand_transpose";

void import_matmul(Importer& im) {
  im.allow_attrs({});
  ValueId ab[2];
  std::int64_t trans[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    auto p = im.has_in(i) ? im.pending_transpose.find(im.node->input(i)) : im.pending_transpose.end();
    if (p != im.pending_transpose.end()) {
      ab[i] = p->second;
      trans[i] = 1;
    } else {
      ab[i] = im.in(i);
    }
  }
  if (im.g.type(ab[0]).rank() < 2 || im.g.type(ab[1]).rank() < 2)
    im.unsupported("1-D operands are not supported");
  const bool two_d = im.g.type(ab[0]).rank() == 2 && im.g.type(ab[1]).rank() == 2;
  im.bind(0, im.add(two_d ? "matmul" : "batch_matmul", {ab[0], ab[1]},
                    {{"trans_a", trans[0]},
                     {"trans_b", trans[1]},
                     {"activation", std::string(im.fuse_relu ? "relu" : "none")}}));
}

void import_gemm(Importer& im) {
  im.allow_attrs({"alpha", "beta", "transA", "transB"});
  const double alpha = im.attr_f("alpha", 1.0), beta = im.attr_f("beta", 1.0);
  const DType dt = im.g.type(im.in(0)).dtype;
  ValueId y = im.add("matmul", {im.in(0), im.in(1)},
                     {{"trans_a", im.attr_i("transA", 0)}, {"trans_b", im.attr_i("transB", 0)}});
  if (alpha != 1.0) y = im.add("scalar_mul", {y, im.scalar(alpha, dt)});
  if (im.has_in(2)) {
    ValueId c = im.in(2);
    if (beta != 1.0) c = im.add("scalar_mul", {c, im.scalar(beta, dt)});
    y = im.add("ewadd", {y, c});
  }
  im.bind(0, y);
}

void import_conv(Importer& im) {
  im.allow_attrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  require_rank(im, 0, 4);
  const auto& w = im.shape(1);
  const Ints kernel{w[2], w[3]};
  if (auto k = im.attr_ints("kernel_shape"); k && *k != kernel)
    im.malformed(
        fmt::format("kernel_shape {} differs from the weight's {}", shape_str(*k), shape_str(kernel)));
  const Ints strides = im.attr_ints("strides").value_or(Ints{1, 1}),
             dil = im.attr_ints("dilations").value_or(Ints{1, 1});
  Attrs a{{"strides", strides},
          {"dilations", dil},
          {"groups", im.attr_i("group", 1)},
          {"pads", pads_for(im, im.shape(0), kernel, strides, dil)},
          {"activation", std::string(im.fuse_relu ? "relu" : "none")}};
  std::vector<ValueId> in = {im.in(0), im.in(1)};
  if (im.has_in(2)) in.push_back(im.in(2));
  im.bind(0, im.add("conv2d", in, a));
}

void import_pool(Importer& im, bool max, bool global) {
  if (global) {
    im.allow_attrs({});
    require_rank(im, 0, 4);
    const auto& s = im.shape(0);
    im.bind(0, im.add(max ? "maxpool2d" : "avgpool2d", {im.in(0)}, {{"kernel", Ints{s[2], s[3]}}}));
    return;
  }
  if (max) {
    im.allow_attrs(
        {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    if (auto d = im.attr_ints("dilations");
        d && std::any_of(d->begin(), d->end(), [](auto v) { return v != 1; }))
      im.unsupported("dilated max pooling is not supported (dilations must be 1)");
    if (im.attr_i("storage_order", 0) != 0) im.unsupported("storage_order 1 is not supported");
    im.require_outputs(1);
  } else {
    im.allow_attrs({"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides"});
  }
  require_rank(im, 0, 4);
  const auto kernel = im.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != 2) im.unsupported("kernel_shape must have 2 entries (2-D pooling)");
  const Ints strides = im.attr_ints("strides").value_or(Ints{1, 1});
  Attrs a{{"kernel", *kernel},
          {"strides", strides},
          {"ceil_mode", im.attr_i("ceil_mode", 0)},
          {"pads", pads_for(im, im.shape(0), *kernel, strides, Ints{1, 1})}};
  if (!max) a.set("count_include_pad", im.attr_i("count_include_pad", 0));
  im.bind(0, im.add(max ? "maxpool2d" : "avgpool2d", {im.in(0)}, a));
}

void import_batchnorm(Importer& im) {
  im.allow_attrs({"epsilon", "momentum", "training_mode", "spatial"});
  if (im.attr_i("training_mode", 0) != 0)
    im.unsupported("training_mode=1 is not supported (inference form only)");
  if (im.attr_i("spatial", 1) != 1) im.unsupported("spatial=0 is not supported");
  im.require_outputs(1);
  im.bind(0, im.add("batchnorm", {im.in(0), im.in(1), im.in(2), im.in(3), im.in(4)},
                    {{"epsilon", im.attr_f("epsilon", 1e-5)}}));
}

void import_layernorm(Importer& im) {
  im.allow_attrs({"axis", "epsilon", "stash_type"});
  if (im.attr_i("stash_type", 1) != 1) im.unsupported("stash_type other than 1 (float) is not supported");
  im.require_outputs(3);
  std::vector<ValueId> in = {im.in(0), im.in(1)};
  if (im.has_in(2)) in.push_back(im.in(2));
  const std::int64_t axis = im.attr_i("axis", -1);
  const double eps = im.attr_f("epsilon", 1e-5);
  im.bind(0, im.add("layernorm", in, {{"axis", axis}, {"epsilon", eps}}));
  const bool mean_out = im.node->output_size() > 1 && !im.node->output(1).empty();
  const bool inv_out = im.node->output_size() > 2 && !im.node->output(2).empty();
  if (!mean_out && !inv_out) return;
  // The optional statistics outputs, written out: mean and 1/sqrt(var + eps) over dims [axis, rank).
  const auto rank = static_cast<std::int64_t>(im.shape(0).size());
  Ints axes;
  for (std::int64_t a = axis < 0 ? axis + rank : axis; a < rank; ++a) axes.push_back(a);
  const Attrs reduce{{"axes", axes}, {"keepdims", std::int64_t{1}}};
  const auto mean = im.add("reduce_mean", {im.in(0)}, reduce);
  im.bind(1, mean);
  if (!inv_out) return;
  const auto centred = im.add("ewsub", {im.in(0), mean});
  const auto var = im.add("reduce_mean", {im.add("ewmul", {centred, centred})}, reduce);
  im.bind(2, im.add("rsqrt", {im.add("ewadd", {var, im.scalar(eps, im.g.type(var).dtype)})}));
}

void import_softmax(Importer& im) {
  im.allow_attrs({"axis"});
  const auto s = im.shape(0);
  const int rank = static_cast<int>(s.size());
  if (im.opset >= 13) {
    im.bind(0, im.add("softmax", {im.in(0)}, {{"axis", im.attr_i("axis", -1)}}));
    return;
  }
  // Before opset 13 the input is coerced to 2-D [prod(dims < axis), prod(dims >= axis)].
  std::int64_t axis = im.attr_i("axis", 1);
  if (axis < 0) axis += rank;
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= s[static_cast<std::size_t>(i)];
  const auto flat = im.add("reshape", {im.in(0)}, {{"shape", Ints{outer, -1}}});
  const auto sm = im.add("softmax", {flat}, {{"axis", std::int64_t{1}}});
  im.bind(0, im.add("reshape", {sm}, {{"shape", s}}));
}

void import_concat(Importer& im) {
  im.allow_attrs({"axis"});
  std::vector<ValueId> in;
  for (int i = 0; i < im.num_inputs(); ++i) in.push_back(im.in(i));
  im.bind(0, im.add("concat", in, {{"axis", im.attr_i("axis", 0)}}));
}

void import_split(Importer& im) {
  im.allow_attrs({"axis", "split"});
  const auto& s = im.shape(0);
  const std::int64_t axis = im.attr_i("axis", 0);
  const auto ax = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(s.size()) : axis);
  Ints sizes;
  if (im.opset >= 13 && im.has_in(1))
    sizes = im.const_ints(1, "split");
  else if (auto a = im.attr_ints("split"))
    sizes = *a;
  if (sizes.empty()) {
    const auto n = im.node->output_size();
    if (s.at(ax) % n)
      im.unsupported(fmt::format("dimension {} cannot be split evenly into {} outputs", s[ax], n));
    sizes.assign(static_cast<std::size_t>(n), s[ax] / n);
  }
  const auto outs = im.add_multi("split", {im.in(0)}, {{"axis", axis}, {"sizes", sizes}});
  for (std::size_t i = 0; i < outs.size(); ++i) im.bind(static_cast<int>(i), outs[i]);
}

void import_transpose(Importer& im) {
  im.allow_attrs({"perm"});
  if (im.node->doc_string() == kOperandTranspose) {
    im.pending_transpose[im.node->output(0)] = im.in(0);
    return;
  }
  im.bind(0, im.add("transpose", {im.in(0)}, {{"perm", im.attr_ints("perm").value_or(Ints{})}}));
}

void import_reshape(Importer& im) {
  im.allow_attrs({"allowzero"});
  Ints shape = im.const_ints(1, "shape");
  const auto& in = im.shape(0);
  if (im.attr_i("allowzero", 0) == 0)
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (shape[i] == 0) {
        if (i >= in.size()) im.malformed("0 in shape beyond the input's rank");
        shape[i] = in[i];
      }
  im.bind(0, im.add("reshape", {im.in(0)}, {{"shape", shape}}));
}

void import_flatten(Importer& im) {
  im.allow_attrs({"axis"});
  const auto& s = im.shape(0);
  std::int64_t axis = im.attr_i("axis", 1);
  if (axis < 0) axis += static_cast<std::int64_t>(s.size());
  std::int64_t outer = 1;
  for (std::int64_t i = 0; i < axis; ++i) outer *= s[static_cast<std::size_t>(i)];
  im.bind(0, im.add("reshape", {im.in(0)},
                    {{"shape", Ints{outer, numel(s) / std::max<std::int64_t>(outer, 1)}}}));
}

void import_squeeze(Importer& im, bool unsqueeze) {
  im.allow_attrs({"axes"});
  Ints axes;
  if (im.opset >= 13 && im.has_in(1))
    axes = im.const_ints(1, "axes");
  else if (auto a = im.attr_ints("axes"))
    axes = *a;
  Shape s = im.shape(0);
  if (unsqueeze) {
    const auto rank = static_cast<std::int64_t>(s.size() + axes.size());
    for (auto& a : axes) a = a < 0 ? a + rank : a;
    std::sort(axes.begin(), axes.end());
    for (auto a : axes) s.insert(s.begin() + a, 1);
  } else {
    const auto rank = static_cast<std::int64_t>(s.size());
    std::set<std::int64_t> drop;
    for (auto a : axes) drop.insert(a < 0 ? a + rank : a);
    Shape out;
    for (std::int64_t i = 0; i < rank; ++i)
      if (!(drop.contains(i) || (axes.empty() && s[static_cast<std::size_t>(i)] == 1)))
        out.push_back(s[static_cast<std::size_t>(i)]);
    s = out;
  }
  im.bind(0, im.add("reshape", {im.in(0)}, {{"shape", s}}));
}

void import_reduce(Importer& im, std::string_view op, bool axes_as_input) {
  im.allow_attrs({"axes", "keepdims", "noop_with_empty_axes"});
  Ints axes;
  if (axes_as_input && im.has_in(1))
    axes = im.const_ints(1, "axes");
  else if (auto a = im.attr_ints("axes"))
    axes = *a;
  if (axes.empty() && im.attr_i("noop_with_empty_axes", 0)) {
    im.bind(0, im.add("reshape", {im.in(0)}, {{"shape", im.shape(0)}}));
    return;
  }
  im.bind(0, im.add(op, {im.in(0)}, {{"axes", axes}, {"keepdims", im.attr_i("keepdims", 1)}}));
}

// Gather on axis 0 is an embedding lookup; tables of rank != 2 are viewed as [rows, row size].
void import_gather(Importer& im) {
  im.allow_attrs({"axis"});
  const auto table = im.shape(0);
  const auto axis = im.attr_i("axis", 0);
  if (table.empty() || (axis != 0 && axis != -static_cast<std::int64_t>(table.size())))
    im.unsupported("only Gather along axis 0 (an embedding lookup) is supported");
  if (table.size() == 2) {
    im.bind(0, im.add("embedding", {im.in(0), im.in(1)}));
    return;
  }
  const std::int64_t row = numel(table) / std::max<std::int64_t>(table[0], 1);
  const auto flat = im.add("reshape", {im.in(0)}, {{"shape", Ints{table[0], row}}});
  const auto rows = im.add("embedding", {flat, im.in(1)});
  Shape out = im.shape(1);
  out.insert(out.end(), table.begin() + 1, table.end());
  im.bind(0, im.add("reshape", {rows}, {{"shape", out}}));
}

void import_identity(Importer& im) {
  im.allow_attrs({});
  im.bind(0, im.add("reshape", {im.in(0)}, {{"shape", im.shape(0)}}));
}

void import_expand(Importer& im) {
  im.allow_attrs({});
  im.bind(0, im.add("expand", {im.in(0)}, {{"shape", im.const_ints(1, "shape")}}));
}

void import_constant(Importer& im) {
  im.allow_attrs({"value", "value_float", "value_floats", "value_int", "value_ints"});
  OnnxTensor t;
  if (const auto* a = im.attr("value"))
    t = tensor_from_proto(a->t(), im.where());
  else if (const auto* f = im.attr("value_float"))
    t = {"", {{}, DType::kF32}, {f->f()}};
  else if (const auto* fs = im.attr("value_floats"))
    t = {"", {{fs->floats_size()}, DType::kF32}, {fs->floats().begin(), fs->floats().end()}};
  else if (const auto* i = im.attr("value_int"))
    t = {"", {{}, DType::kI64}, {static_cast<double>(i->i())}};
  else if (const auto* is = im.attr("value_ints")) {
    t = {"", {{is->ints_size()}, DType::kI64}, {}};
    for (auto v : is->ints()) t.data.push_back(static_cast<double>(v));
  } else
    im.malformed("Constant without a value");
  im.bind(0, im.g.add_constant(im.node->output(0), t.type, std::move(t.data)));
}

// Operators of strata's own domain: the operator table entry by name, attributes verbatim.
void import_strata(Importer& im) {
  Attrs a;
  for (const auto& at : im.node->attribute()) {
    switch (at.type()) {
      case ::onnx::AttributeProto_AttributeType_INT:
        a.set(at.name(), at.i());
        break;
      case ::onnx::AttributeProto_AttributeType_FLOAT:
        a.set(at.name(), static_cast<double>(at.f()));
        break;
      case ::onnx::AttributeProto_AttributeType_INTS:
        a.set(at.name(), Ints(at.ints().begin(), at.ints().end()));
        break;
      case ::onnx::AttributeProto_AttributeType_STRING:
        a.set(at.name(), at.s());
        break;
      default:
        im.unsupported(fmt::format("attribute '{}' has an unsupported type", at.name()));
    }
  }
  if (!OpRegistry::instance().find(im.node->op_type()))
    im.unsupported(
        fmt::format("unknown {} operator (known: {})", kStrataDomain, OpRegistry::instance().names()));
  std::vector<ValueId> in;
  for (int i = 0; i < im.num_inputs(); ++i) in.push_back(im.in(i));
  const auto outs = im.add_multi(im.node->op_type(), in, a);
  for (std::size_t i = 0; i < outs.size(); ++i) im.bind(static_cast<int>(i), outs[i]);
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> h = {
      {"Add", [](Importer& im) { binary(im, "ewadd"); }},
      {"Sub", [](Importer& im) { binary(im, "ewsub"); }},
      {"Mul",
       [](Importer& im) {
         binary(im, im.shape(1).empty() && im.g.type(im.in(0)).dtype == im.g.type(im.in(1)).dtype
                        ? "scalar_mul"
                        : "ewmul");
       }},
      {"Relu", [](Importer& im) { unary(im, "relu"); }},
      {"Sigmoid", [](Importer& im) { unary(im, "sigmoid"); }},
      {"Tanh", [](Importer& im) { unary(im, "tanh"); }},
      {"MatMul", import_matmul},
      {"Gemm", import_gemm},
      {"Conv", import_conv},
      {"MaxPool", [](Importer& im) { import_pool(im, true, false); }},
      {"AveragePool", [](Importer& im) { import_pool(im, false, false); }},
      {"GlobalMaxPool", [](Importer& im) { import_pool(im, true, true); }},
      {"GlobalAveragePool", [](Importer& im) { import_pool(im, false, true); }},
      {"BatchNormalization", import_batchnorm},
      {"LayerNormalization", import_layernorm},
      {"Softmax", import_softmax},
      {"Concat", import_concat},
      {"Split", import_split},
      {"Transpose", import_transpose},
      {"Reshape", import_reshape},
      {"Flatten", import_flatten},
      {"Squeeze", [](Importer& im) { import_squeeze(im, false); }},
      {"Unsqueeze", [](Importer& im) { import_squeeze(im, true); }},
      {"ReduceSum", [](Importer& im) { import_reduce(im, "reduce_sum", im.opset >= 13); }},
      {"ReduceMean", [](Importer& im) { import_reduce(im, "reduce_mean", im.opset >= 18); }},
      {"Gather", import_gather},
      {"Identity", import_identity},
      {"Expand", import_expand},
      {"Constant", import_constant},
  };
  return h;
}

std::set<std::string> split_list(const std::string& s) {
  std::set<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.insert(item);
  return out;
}

Graph import_model(const ::onnx::ModelProto& model, const std::string& source,
                   const OnnxImportOptions& options) {
  Importer im{source, options, Graph(model.graph().name().empty() ? source : model.graph().name()),
              1,      {},      nullptr,
              0,      false,   {}};
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") im.opset = static_cast<int>(o.version());
  std::set<std::string> params_without_data, constants, opt_state;
  for (const auto& m : model.metadata_props()) {
    if (m.key() == "strata.params") params_without_data = split_list(m.value());
    if (m.key() == "strata.constants") constants = split_list(m.value());
    if (m.key() == "strata.opt_state") opt_state = split_list(m.value());
  }
  const auto& graph = model.graph();
  std::set<std::string> initialized;
  for (const auto& t : graph.initializer()) {
    auto tensor = tensor_from_proto(t, source + ": initializer");
    initialized.insert(t.name());
    const bool constant = !is_float(tensor.type.dtype) || constants.contains(t.name());
    auto data = std::make_shared<const std::vector<double>>(std::move(tensor.data));
    im.values[t.name()] =
        im.g.add_source(t.name(), tensor.type, constant ? ValueKind::kConstant : ValueKind::kParam, data);
  }
  for (const auto& in : graph.input()) {
    if (initialized.contains(in.name())) continue;
    const std::string where = fmt::format("{}: graph input '{}'", source, in.name());
    if (!in.type().has_tensor_type()) throw OnnxUnsupported(where + ": only tensor inputs are supported");
    const auto& tt = in.type().tensor_type();
    const auto dt = from_onnx_type(tt.elem_type());
    if (!dt)
      throw OnnxUnsupported(
          fmt::format("{}: element type {} (supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32)",
                      where, onnx_type_name(tt.elem_type())));
    Shape shape;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        shape.push_back(d.dim_value());
      } else {
        auto it = options.dims.find(d.dim_param());
        if (it == options.dims.end())
          throw OnnxError(fmt::format("{}: dimension '{}' is symbolic; give its value (e.g. --dim {}=1)",
                                      where, d.dim_param(), d.dim_param()));
        shape.push_back(it->second);
      }
    }
    const auto kind = params_without_data.contains(in.name()) ? ValueKind::kParam
                      : opt_state.contains(in.name())         ? ValueKind::kOptState
                                                              : ValueKind::kInput;
    im.values[in.name()] = im.g.add_source(in.name(), {shape, *dt}, kind);
  }
  for (int ni = 0; ni < graph.node_size(); ++ni) {
    const auto& node = graph.node(ni);
    im.node = &node;
    im.emitted = 0;
    const ::onnx::NodeProto* next = ni + 1 < graph.node_size() ? &graph.node(ni + 1) : nullptr;
    im.fuse_relu = next && next->op_type() == "Relu" && next->doc_string() == kFusedRelu &&
                   node.output_size() > 0 && next->input_size() == 1 && next->input(0) == node.output(0) &&
                   (node.op_type() == "Conv" || node.op_type() == "MatMul");
    if (im.fuse_relu) {
      handlers().at(node.op_type())(im);
      im.values[next->output(0)] = im.values.at(node.output(0));
      im.g.set_value_name(im.values.at(node.output(0)), next->output(0));
      ++ni;
      continue;
    }
    if (node.domain() == kStrataDomain) {
      import_strata(im);
      continue;
    }
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      im.unsupported(
          fmt::format("operator domain '{}' is not supported (supported: the default ONNX domain and {})",
                      node.domain(), kStrataDomain));
    auto it = handlers().find(node.op_type());
    if (it == handlers().end())
      im.unsupported(
          fmt::format("operator {} is not supported (supported: {})", node.op_type(), onnx_supported_ops()));
    it->second(im);
  }
  for (const auto& out : graph.output()) {
    auto it = im.values.find(out.name());
    if (it == im.values.end())
      throw OnnxError(fmt::format("{}: graph output '{}' is never produced", source, out.name()));
    im.g.mark_output(it->second);
  }
  return std::move(im.g);
}

// ---------------- export ----------------
struct Exporter {
  explicit Exporter(const Graph& graph_in) : g(graph_in) {}
  const Graph& g;
  ::onnx::ModelProto model;
  ::onnx::GraphProto* graph = model.mutable_graph();
  std::vector<std::string> names;
  std::set<std::string> used;
  int fresh_counter = 0;

  std::string unique(const std::string& base) {
    std::string n = base.empty() ? "v" : base;
    for (int k = 1; used.contains(n); ++k) n = fmt::format("{}_{}", base, k);
    used.insert(n);
    return n;
  }
  std::string fresh(const std::string& base) { return unique(fmt::format("{}__{}", base, fresh_counter++)); }
  std::string int_initializer(const std::string& base, const Ints& v) {
    const auto n = fresh(base);
    std::vector<double> d(v.begin(), v.end());
    fill_proto(*graph->add_initializer(), n, {{static_cast<std::int64_t>(v.size())}, DType::kI64}, d);
    return n;
  }
  ::onnx::NodeProto* node(const std::string& op_type, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name,
                          std::string_view domain = "") {
    auto* n = graph->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    if (!domain.empty()) n->set_domain(std::string(domain));
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  static void set(::onnx::NodeProto* n, const std::string& k, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void set(::onnx::NodeProto* n, const std::string& k, double v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void set(::onnx::NodeProto* n, const std::string& k, const Ints& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void set(::onnx::NodeProto* n, const std::string& k, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void set_value_info(::onnx::ValueInfoProto* vi, const std::string& name, const TensorType& t) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(to_onnx_type(t.dtype));
    auto* shape = tt->mutable_shape();
    for (auto d : t.shape) shape->add_dim()->set_dim_value(d);
  }

  void export_node(const Node& n) {
    std::vector<std::string> in, out;
    for (auto v : n.inputs) in.push_back(names[static_cast<std::size_t>(v)]);
    for (auto v : n.outputs) out.push_back(names[static_cast<std::size_t>(v)]);
    const auto& a = n.attrs;
    const std::string op(n.op->name);
    auto relu_after = [&](const std::string& onnx_op, std::vector<std::string> ins) {
      const bool relu = a.has("activation") && a.s("activation") == "relu";
      const std::string mid = relu ? fresh(n.name + "/pre_relu") : out[0];
      auto* node_proto = this->node(onnx_op, std::move(ins), {mid}, n.name);
      if (relu)
        this->node("Relu", {mid}, {out[0]}, n.name + "/relu")->set_doc_string(std::string(kFusedRelu));
      return node_proto;
    };
    if (op == "ewadd" || op == "ewsub" || op == "ewmul" || op == "scalar_mul" || op == "relu" ||
        op == "sigmoid" || op == "tanh") {
      node(std::string(n.op->onnx_op), in, out, n.name);
    } else if (op == "matmul" || op == "batch_matmul") {
      auto swap_last = [&](const std::string& v, ValueId id, const char* tag) {
        const int r = g.type(id).rank();
        Ints perm;
        for (int i = 0; i < r; ++i) perm.push_back(i);
        std::swap(perm[static_cast<std::size_t>(r - 1)], perm[static_cast<std::size_t>(r - 2)]);
        const auto t = fresh(n.name + tag);
        auto* tp = node("Transpose", {v}, {t}, n.name + tag);
        tp->set_doc_string(std::string(kOperandTranspose));
        set(tp, "perm", perm);
        return t;
      };
      if (a.i("trans_a")) in[0] = swap_last(in[0], n.inputs[0], "/transpose_a");
      if (a.i("trans_b")) in[1] = swap_last(in[1], n.inputs[1], "/transpose_b");
      relu_after("MatMul", in);
    } else if (op == "conv2d") {
      auto* c = relu_after("Conv", in);
      const auto& w = g.type(n.inputs[1]).shape;
      set(c, "kernel_shape", Ints{w[2], w[3]});
      set(c, "strides", a.ints("strides"));
      set(c, "pads", a.ints("pads"));
      set(c, "dilations", a.ints("dilations"));
      set(c, "group", a.i("groups"));
    } else if (op == "maxpool2d" || op == "avgpool2d") {
      auto* p = node(op == "maxpool2d" ? "MaxPool" : "AveragePool", in, out, n.name);
      set(p, "kernel_shape", a.ints("kernel"));
      set(p, "strides", a.ints("strides"));
      set(p, "pads", a.ints("pads"));
      set(p, "ceil_mode", a.i("ceil_mode"));
      if (op == "avgpool2d") set(p, "count_include_pad", a.i("count_include_pad"));
    } else if (op == "batchnorm") {
      set(node("BatchNormalization", in, out, n.name), "epsilon", a.f("epsilon"));
    } else if (op == "layernorm") {
      auto* p = node("LayerNormalization", in, out, n.name);
      set(p, "axis", a.i("axis"));
      set(p, "epsilon", a.f("epsilon"));
    } else if (op == "softmax" && a.i("causal") == 0) {
      set(node("Softmax", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "concat") {
      set(node("Concat", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "split") {
      in.push_back(int_initializer(n.name + "/sizes", a.ints("sizes")));
      set(node("Split", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "transpose" && a.i("shuffle") == 1) {
      Ints perm = a.ints("perm");
      if (perm.empty())
        for (int i = g.type(n.inputs[0]).rank() - 1; i >= 0; --i) perm.push_back(i);
      set(node("Transpose", in, out, n.name), "perm", perm);
    } else if (op == "reshape" || op == "expand") {
      in.push_back(
          int_initializer(n.name + "/shape", op == "reshape" ? g.type(n.outputs[0]).shape : a.ints("shape")));
      node(op == "reshape" ? "Reshape" : "Expand", in, out, n.name);
    } else if (op == "reduce_sum") {
      if (!a.ints("axes").empty()) in.push_back(int_initializer(n.name + "/axes", a.ints("axes")));
      set(node("ReduceSum", in, out, n.name), "keepdims", a.i("keepdims"));
    } else if (op == "reduce_mean") {
      auto* p = node("ReduceMean", in, out, n.name);
      if (!a.ints("axes").empty()) set(p, "axes", a.ints("axes"));
      set(p, "keepdims", a.i("keepdims"));
    } else if (op == "embedding") {
      set(node("Gather", in, out, n.name), "axis", std::int64_t{0});
    } else {
      auto* p = node(op, in, out, n.name, kStrataDomain);
      for (const auto& [k, v] : a.items()) std::visit([&](const auto& x) { set(p, k, x); }, v);
    }
  }

  void run() {
    model.set_ir_version(8);
    model.set_producer_name("strata");
    model.set_producer_version("0.1.0");
    auto* std_opset = model.add_opset_import();
    std_opset->set_domain("");
    std_opset->set_version(kExportOpset);
    auto* strata_opset = model.add_opset_import();
    strata_opset->set_domain(std::string(kStrataDomain));
    strata_opset->set_version(1);
    graph->set_name(g.name());
    names.resize(g.values().size());
    for (std::size_t i = 0; i < g.values().size(); ++i) names[i] = unique(g.values()[i].name);
    std::string params, constants, opt_state;
    auto append = [](std::string& list, const std::string& n) { list += (list.empty() ? "" : ",") + n; };
    for (std::size_t i = 0; i < g.values().size(); ++i) {
      const auto& v = g.values()[i];
      if (v.producer >= 0) continue;
      if (v.data) {
        fill_proto(*graph->add_initializer(), names[i], v.type, *v.data);
        if (v.kind == ValueKind::kConstant && is_float(v.type.dtype)) append(constants, names[i]);
        if (v.kind == ValueKind::kParam || v.kind == ValueKind::kConstant) continue;
      }
      if (v.kind == ValueKind::kParam) append(params, names[i]);
      if (v.kind == ValueKind::kOptState) append(opt_state, names[i]);
      if (v.kind == ValueKind::kConstant && !v.data) append(constants, names[i]);
      if (!v.data) set_value_info(graph->add_input(), names[i], v.type);
    }
    for (const auto& n : g.nodes()) export_node(n);
    for (auto o : g.outputs())
      set_value_info(graph->add_output(), names[static_cast<std::size_t>(o)], g.type(o));
    auto meta = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      auto* m = model.add_metadata_props();
      m->set_key(key);
      m->set_value(value);
    };
    meta("strata.params", params);
    meta("strata.constants", constants);
    meta("strata.opt_state", opt_state);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw OnnxError(fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string onnx_supported_ops() {
  std::string s;
  for (const auto& [name, h] : handlers()) s += (s.empty() ? "" : ", ") + name;
  return s + fmt::format(" (and every strata operator in domain {})", kStrataDomain);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& source,
                        const OnnxImportOptions& options) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw OnnxError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", source));
  return import_model(model, source, options);
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return import_onnx_bytes(read_file(path), path, options);
}

std::string export_onnx_bytes(const Graph& g) {
  Exporter e(g);
  e.run();
  std::string out;
  if (!e.model.SerializeToString(&out))
    throw OnnxError(fmt::format("graph '{}': ONNX serialization failed (model over 2 GiB?)", g.name()));
  return out;
}

void export_onnx(const Graph& g, const std::string& path) {
  util::write_file_atomically(path, export_onnx_bytes(g));
}

OnnxTensor read_onnx_tensor(const std::string& path) {
  ::onnx::TensorProto t;
  if (!t.ParseFromString(read_file(path)))
    throw OnnxError(fmt::format("{}: not a serialized TensorProto", path));
  return tensor_from_proto(t, path);
}

}  // namespace strata::models
