// ONNX operator import: one handler per supported ONNX op type, mapping it onto the operator table.
#include <set>

#include "models/onnx/onnx_importer.h"

namespace strata::models::onnx_detail {
namespace {

// Callers have checked: x is 4-D, kernel/strides/dilations have 2 entries >= 1.
Ints pads_for(Importer& im, const Shape& x, const Ints& kernel, const Ints& strides, const Ints& dilations) {
  const auto auto_pad = im.attr_s("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    auto p = im.attr_ints("pads").value_or(Ints{0, 0, 0, 0});
    if (p.size() != 4) im.unsupported("only 2-D pads [top, left, bottom, right] are supported");
    if (std::any_of(p.begin(), p.end(), [](auto v) { return v < 0; }))
      im.malformed(fmt::format("attribute 'pads' is {}; expected integers >= 0", shape_str(p)));
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
  im.require_rank(1, 4, "weight [out channels, in channels / group, kh, kw]");
  const auto w = im.shape(1);
  const Ints kernel{w[2], w[3]};
  if (auto k = im.attr_ints("kernel_shape"); k && *k != kernel)
    im.malformed(
        fmt::format("kernel_shape {} differs from the weight's {}", shape_str(*k), shape_str(kernel)));
  const Ints strides = im.attr_ints_checked("strides", 2, 1, Ints{1, 1}),
             dil = im.attr_ints_checked("dilations", 2, 1, Ints{1, 1});
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
  if (!im.attr("kernel_shape")) im.malformed("attribute 'kernel_shape' is required");
  const Ints kernel = im.attr_ints_checked("kernel_shape", 2, 1, {});
  const Ints strides = im.attr_ints_checked("strides", 2, 1, Ints{1, 1});
  Attrs a{{"kernel", kernel},
          {"strides", strides},
          {"ceil_mode", im.attr_i("ceil_mode", 0)},
          {"pads", pads_for(im, im.shape(0), kernel, strides, Ints{1, 1})}};
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
  const std::int64_t axis = im.axis_in("attribute 'axis'", im.attr_i("axis", 1), rank);
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
  const auto s = im.shape(0);
  const std::int64_t axis = im.attr_i("axis", 0);
  const auto ax =
      static_cast<std::size_t>(im.axis_in("attribute 'axis'", axis, static_cast<std::int64_t>(s.size())));
  if (im.node->output_size() == 0) im.malformed("Split has no outputs; expected at least 1");
  Ints sizes;
  if (im.opset >= 13 && im.has_in(1))
    sizes = im.const_ints(1, "split");
  else if (auto a = im.attr_ints("split"))
    sizes = *a;
  if (sizes.empty()) {
    const auto n = im.node->output_size();
    if (s[ax] % n)
      im.unsupported(fmt::format("dimension {} cannot be split evenly into {} outputs", s[ax], n));
    sizes.assign(static_cast<std::size_t>(n), s[ax] / n);
  }
  const auto outs = im.add_multi("split", {im.in(0)}, {{"axis", axis}, {"sizes", sizes}});
  for (std::size_t i = 0; i < outs.size(); ++i) im.bind(static_cast<int>(i), outs[i]);
}

void import_transpose(Importer& im) {
  im.allow_attrs({"perm"});
  if (im.node->output_size() == 0) im.malformed("Transpose has no outputs; expected 1");
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
  const auto s = im.shape(0);
  const std::int64_t axis =
      im.axis_in("attribute 'axis'", im.attr_i("axis", 1), static_cast<std::int64_t>(s.size()), true);
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
    // Axes index the output, of rank input rank + number of axes; each may appear once.
    const auto rank = static_cast<std::int64_t>(s.size() + axes.size());
    for (auto& a : axes) a = im.axis_in("axes entry", a, rank);
    std::sort(axes.begin(), axes.end());
    if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
      im.malformed(fmt::format("axes {} repeats an axis", shape_str(axes)));
    for (auto a : axes) s.insert(s.begin() + a, 1);
  } else {
    const auto rank = static_cast<std::int64_t>(s.size());
    std::set<std::int64_t> drop;
    for (auto a : axes) {
      const auto k = im.axis_in("axes entry", a, rank);
      if (s[static_cast<std::size_t>(k)] != 1)
        im.malformed(fmt::format("axes entry {}: dimension {} of {} is not 1", a, k, shape_str(s)));
      drop.insert(k);
    }
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
  // Constant indices are checked here (ONNX: in [-rows, rows)); others when the graph runs.
  if (const auto& idx = im.g.value(im.in(1)); idx.data)
    for (double i : *idx.data)
      if (!(i >= -static_cast<double>(table[0]) && i < static_cast<double>(table[0])))
        im.malformed(fmt::format("index {} (input 1) is outside the table's {} rows (expected {} to {})", i,
                                 table[0], -table[0], table[0] - 1));
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
  if (im.node->output_size() == 0) im.malformed("Constant has no outputs; expected 1");
  im.bind(0, im.g.add_constant(im.node->output(0), t.type, std::move(t.data)));
}

}  // namespace

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

}  // namespace strata::models::onnx_detail
