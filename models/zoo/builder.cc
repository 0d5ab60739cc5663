#include "models/zoo/builder.h"

namespace strata::models::zoo {

ValueId NetBuilder::conv(ValueId x, const Conv& c, const std::string& leaf) {
  const auto s = shape(x);
  const std::int64_t ph = c.pad_h >= 0 ? c.pad_h : (c.kh - 1) / 2,
                     pw = c.pad_w >= 0 ? c.pad_w : (c.kw - 1) / 2;
  std::vector<ValueId> in = {x, param(leaf + ".weight", {c.out, s[1] / c.groups, c.kh, c.kw})};
  if (c.bias) in.push_back(param(leaf + ".bias", {c.out}));
  return op("conv2d", std::move(in),
            {{"strides", Ints{c.stride, c.stride}},
             {"pads", Ints{ph, pw, ph, pw}},
             {"groups", c.groups},
             {"activation", std::string(c.relu ? "relu" : "none")}},
            leaf);
}

ValueId NetBuilder::batchnorm(ValueId x, const std::string& leaf, double eps) {
  const std::int64_t ch = shape(x)[1];
  const auto scale = param(leaf + ".weight", {ch});
  const auto bias = param(leaf + ".bias", {ch});
  // Running statistics are buffers, not trained: constants with the identity normalization.
  const auto mean = g_.add_constant(name(leaf + ".running_mean"), {{ch}, dtype_},
                                    std::vector<double>(static_cast<std::size_t>(ch), 0.0));
  const auto var = g_.add_constant(name(leaf + ".running_var"), {{ch}, dtype_},
                                   std::vector<double>(static_cast<std::size_t>(ch), 1.0));
  return op("batchnorm", {x, scale, bias, mean, var}, {{"epsilon", eps}}, leaf);
}

ValueId NetBuilder::conv_bn(ValueId x, const Conv& c, const std::string& leaf, double bn_eps) {
  Conv plain = c;
  plain.relu = false;
  plain.bias = false;
  auto y = batchnorm(conv(x, plain, leaf), leaf + ".bn", bn_eps);
  return c.relu ? relu(y, leaf + ".relu") : y;
}

ValueId NetBuilder::maxpool(ValueId x, std::int64_t k, std::int64_t s, std::int64_t pad,
                            const std::string& leaf, bool ceil) {
  return op("maxpool2d", {x},
            {{"kernel", Ints{k, k}},
             {"strides", Ints{s, s}},
             {"pads", Ints{pad, pad, pad, pad}},
             {"ceil_mode", std::int64_t{ceil}}},
            leaf);
}

ValueId NetBuilder::avgpool(ValueId x, std::int64_t k, std::int64_t s, std::int64_t pad,
                            const std::string& leaf, bool count_include_pad) {
  return op("avgpool2d", {x},
            {{"kernel", Ints{k, k}},
             {"strides", Ints{s, s}},
             {"pads", Ints{pad, pad, pad, pad}},
             {"count_include_pad", std::int64_t{count_include_pad}}},
            leaf);
}

ValueId NetBuilder::global_avgpool(ValueId x, const std::string& leaf) {
  const auto s = shape(x);
  const auto p = op("avgpool2d", {x}, {{"kernel", Ints{s[2], s[3]}}}, leaf);
  return reshape(p, {s[0], s[1]}, leaf + ".flatten");
}

ValueId NetBuilder::linear(ValueId x, std::int64_t out, bool bias, const std::string& leaf) {
  const auto s = shape(x);
  auto y = op("matmul", {x, param(leaf + ".weight", {s.back(), out})}, {}, leaf);
  if (bias) y = op("ewadd", {y, param(leaf + ".bias", {out})}, {}, leaf + ".bias_add");
  return y;
}

}  // namespace strata::models::zoo
