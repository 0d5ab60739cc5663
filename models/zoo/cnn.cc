// Convolutional networks. AlexNet, ResNet-50/101 / ResNeXt-50 follow torchvision (v1.5: stride on the 3x3
// conv); Inception-v3 follows torchvision without the auxiliary head; SqueezeNet is v1.0 (Iandola et al.
// 2016); NasNet-A is the cell stack TASO evaluates (examples/nasnet_a.py: 3 stages of 5 normal cells + 1
// reduction cell on a 128x56x56 input, separable convs as grouped + pointwise conv).
#include "models/zoo/builder.h"
#include "models/zoo/zoo.h"

namespace strata::models::zoo {
namespace {

std::int64_t batch_of(const ZooOptions& o) {
  return o.batch > 0 ? o.batch : 1;
}

ValueId bottleneck(NetBuilder& b, ValueId x, std::int64_t planes, std::int64_t stride, std::int64_t groups,
                   std::int64_t width_per_group, bool downsample) {
  const std::int64_t width = planes * width_per_group / 64 * groups;
  auto y = b.conv_bn(x, {.out = width, .relu = true}, "conv1");
  y = b.conv_bn(y, {.out = width, .kh = 3, .kw = 3, .stride = stride, .groups = groups, .relu = true},
                "conv2");
  y = b.conv_bn(y, {.out = planes * 4}, "conv3");
  const ValueId identity = downsample ? b.conv_bn(x, {.out = planes * 4, .stride = stride}, "downsample") : x;
  return b.relu(b.add(y, identity, "add"), "relu");
}

}  // namespace

Graph build_resnet(const ZooOptions& o, std::int64_t groups, std::int64_t width_per_group,
                   const std::string& name, std::array<std::int64_t, 4> blocks) {
  Graph g(name);
  NetBuilder b(g, o.dtype);
  auto x = b.input("image", {batch_of(o), 3, 224, 224}, o.dtype);
  x = b.conv_bn(x, {.out = 64, .kh = 7, .kw = 7, .stride = 2, .relu = true}, "conv1");
  x = b.maxpool(x, 3, 2, 1);
  for (int l = 0; l < 4; ++l) {
    auto s = b.scope("layer" + std::to_string(l + 1));
    const std::int64_t planes = 64 << l;
    for (std::int64_t i = 0; i < blocks[l]; ++i) {
      auto bs = b.scope(std::to_string(i));
      x = bottleneck(b, x, planes, (i == 0 && l > 0) ? 2 : 1, groups, width_per_group, i == 0);
    }
  }
  x = b.global_avgpool(x);
  g.mark_output(b.linear(x, 1000, true, "fc"));
  return g;
}

// AlexNet as torchvision builds it (Krizhevsky 2014, "One weird trick", arXiv 1404.5997: 64-192-384-256-256
// channels, single tower; the 2012 paper's two-GPU towers have 96-256-384-384-256), 224x224 input. Dropout is
// left out (no FLOPs, no parameters); the adaptive 6x6 average pool is the identity at this input size.
Graph build_alexnet(const ZooOptions& o) {
  Graph g("alexnet");
  NetBuilder b(g, o.dtype);
  auto x = b.input("image", {batch_of(o), 3, 224, 224}, o.dtype);
  x = b.conv(x,
             {.out = 64, .kh = 11, .kw = 11, .stride = 4, .pad_h = 2, .pad_w = 2, .bias = true, .relu = true},
             "features.0");
  x = b.maxpool(x, 3, 2, 0, "features.2");
  x = b.conv(x, {.out = 192, .kh = 5, .kw = 5, .bias = true, .relu = true}, "features.3");
  x = b.maxpool(x, 3, 2, 0, "features.5");
  x = b.conv(x, {.out = 384, .kh = 3, .kw = 3, .bias = true, .relu = true}, "features.6");
  x = b.conv(x, {.out = 256, .kh = 3, .kw = 3, .bias = true, .relu = true}, "features.8");
  x = b.conv(x, {.out = 256, .kh = 3, .kw = 3, .bias = true, .relu = true}, "features.10");
  x = b.maxpool(x, 3, 2, 0, "features.12");
  const auto s = b.shape(x);
  x = b.reshape(x, {s[0], s[1] * s[2] * s[3]}, "flatten");
  x = b.relu(b.linear(x, 4096, true, "classifier.1"), "classifier.2");
  x = b.relu(b.linear(x, 4096, true, "classifier.4"), "classifier.5");
  g.mark_output(b.linear(x, 1000, true, "classifier.6"));
  return g;
}

namespace {

// torchvision's BasicConv2d: conv (no bias) + batchnorm (eps 1e-3) + relu.
ValueId basic(NetBuilder& b, ValueId x, std::int64_t out, std::int64_t kh, std::int64_t kw,
              const std::string& leaf, std::int64_t stride = 1, std::int64_t ph = 0, std::int64_t pw = 0) {
  return b.conv_bn(x,
                   {.out = out, .kh = kh, .kw = kw, .stride = stride, .pad_h = ph, .pad_w = pw, .relu = true},
                   leaf, 1e-3);
}

ValueId inception_a(NetBuilder& b, ValueId x, std::int64_t pool_features) {
  const auto b1 = basic(b, x, 64, 1, 1, "branch1x1");
  auto b5 = basic(b, x, 48, 1, 1, "branch5x5_1");
  b5 = basic(b, b5, 64, 5, 5, "branch5x5_2", 1, 2, 2);
  auto b3 = basic(b, x, 64, 1, 1, "branch3x3dbl_1");
  b3 = basic(b, b3, 96, 3, 3, "branch3x3dbl_2", 1, 1, 1);
  b3 = basic(b, b3, 96, 3, 3, "branch3x3dbl_3", 1, 1, 1);
  const auto bp = basic(b, b.avgpool(x, 3, 1, 1, "branch_pool.avgpool"), pool_features, 1, 1, "branch_pool");
  return b.concat({b1, b5, b3, bp}, 1);
}
ValueId inception_b(NetBuilder& b, ValueId x) {
  const auto b3 = basic(b, x, 384, 3, 3, "branch3x3", 2);
  auto bd = basic(b, x, 64, 1, 1, "branch3x3dbl_1");
  bd = basic(b, bd, 96, 3, 3, "branch3x3dbl_2", 1, 1, 1);
  bd = basic(b, bd, 96, 3, 3, "branch3x3dbl_3", 2);
  return b.concat({b3, bd, b.maxpool(x, 3, 2, 0, "branch_pool")}, 1);
}
ValueId inception_c(NetBuilder& b, ValueId x, std::int64_t c7) {
  const auto b1 = basic(b, x, 192, 1, 1, "branch1x1");
  auto b7 = basic(b, x, c7, 1, 1, "branch7x7_1");
  b7 = basic(b, b7, c7, 1, 7, "branch7x7_2", 1, 0, 3);
  b7 = basic(b, b7, 192, 7, 1, "branch7x7_3", 1, 3, 0);
  auto bd = basic(b, x, c7, 1, 1, "branch7x7dbl_1");
  bd = basic(b, bd, c7, 7, 1, "branch7x7dbl_2", 1, 3, 0);
  bd = basic(b, bd, c7, 1, 7, "branch7x7dbl_3", 1, 0, 3);
  bd = basic(b, bd, c7, 7, 1, "branch7x7dbl_4", 1, 3, 0);
  bd = basic(b, bd, 192, 1, 7, "branch7x7dbl_5", 1, 0, 3);
  const auto bp = basic(b, b.avgpool(x, 3, 1, 1, "branch_pool.avgpool"), 192, 1, 1, "branch_pool");
  return b.concat({b1, b7, bd, bp}, 1);
}
ValueId inception_d(NetBuilder& b, ValueId x) {
  auto b3 = basic(b, x, 192, 1, 1, "branch3x3_1");
  b3 = basic(b, b3, 320, 3, 3, "branch3x3_2", 2);
  auto b7 = basic(b, x, 192, 1, 1, "branch7x7x3_1");
  b7 = basic(b, b7, 192, 1, 7, "branch7x7x3_2", 1, 0, 3);
  b7 = basic(b, b7, 192, 7, 1, "branch7x7x3_3", 1, 3, 0);
  b7 = basic(b, b7, 192, 3, 3, "branch7x7x3_4", 2);
  return b.concat({b3, b7, b.maxpool(x, 3, 2, 0, "branch_pool")}, 1);
}
ValueId inception_e(NetBuilder& b, ValueId x) {
  const auto b1 = basic(b, x, 320, 1, 1, "branch1x1");
  const auto b3 = basic(b, x, 384, 1, 1, "branch3x3_1");
  const auto b3a = basic(b, b3, 384, 1, 3, "branch3x3_2a", 1, 0, 1);
  const auto b3b = basic(b, b3, 384, 3, 1, "branch3x3_2b", 1, 1, 0);
  auto bd = basic(b, x, 448, 1, 1, "branch3x3dbl_1");
  bd = basic(b, bd, 384, 3, 3, "branch3x3dbl_2", 1, 1, 1);
  const auto bda = basic(b, bd, 384, 1, 3, "branch3x3dbl_3a", 1, 0, 1);
  const auto bdb = basic(b, bd, 384, 3, 1, "branch3x3dbl_3b", 1, 1, 0);
  const auto bp = basic(b, b.avgpool(x, 3, 1, 1, "branch_pool.avgpool"), 192, 1, 1, "branch_pool");
  return b.concat({b1, b3a, b3b, bda, bdb, bp}, 1);
}

}  // namespace

Graph build_inception_v3(const ZooOptions& o) {
  Graph g("inception-v3");
  NetBuilder b(g, o.dtype);
  auto x = b.input("image", {batch_of(o), 3, 299, 299}, o.dtype);
  x = basic(b, x, 32, 3, 3, "Conv2d_1a_3x3", 2);
  x = basic(b, x, 32, 3, 3, "Conv2d_2a_3x3");
  x = basic(b, x, 64, 3, 3, "Conv2d_2b_3x3", 1, 1, 1);
  x = b.maxpool(x, 3, 2, 0, "maxpool1");
  x = basic(b, x, 80, 1, 1, "Conv2d_3b_1x1");
  x = basic(b, x, 192, 3, 3, "Conv2d_4a_3x3");
  x = b.maxpool(x, 3, 2, 0, "maxpool2");
  const std::pair<const char*, std::int64_t> a_blocks[] = {
      {"Mixed_5b", 32}, {"Mixed_5c", 64}, {"Mixed_5d", 64}};
  for (const auto& [n, pf] : a_blocks) {
    auto s = b.scope(n);
    x = inception_a(b, x, pf);
  }
  {
    auto s = b.scope("Mixed_6a");
    x = inception_b(b, x);
  }
  const std::pair<const char*, std::int64_t> c_blocks[] = {
      {"Mixed_6b", 128}, {"Mixed_6c", 160}, {"Mixed_6d", 160}, {"Mixed_6e", 192}};
  for (const auto& [n, c7] : c_blocks) {
    auto s = b.scope(n);
    x = inception_c(b, x, c7);
  }
  {
    auto s = b.scope("Mixed_7a");
    x = inception_d(b, x);
  }
  for (const char* n : {"Mixed_7b", "Mixed_7c"}) {
    auto s = b.scope(n);
    x = inception_e(b, x);
  }
  x = b.global_avgpool(x);
  g.mark_output(b.linear(x, 1000, true, "fc"));
  return g;
}

Graph build_squeezenet(const ZooOptions& o) {
  Graph g("squeezenet");
  NetBuilder b(g, o.dtype);
  auto x = b.input("image", {batch_of(o), 3, 224, 224}, o.dtype);
  x = b.conv(x,
             {.out = 96, .kh = 7, .kw = 7, .stride = 2, .pad_h = 0, .pad_w = 0, .bias = true, .relu = true},
             "features.0");
  x = b.maxpool(x, 3, 2, 0, "features.2", true);
  auto fire = [&](ValueId in, std::int64_t squeeze, std::int64_t expand, const std::string& n) {
    auto s = b.scope(n);
    const auto sq = b.conv(in, {.out = squeeze, .bias = true, .relu = true}, "squeeze");
    const auto e1 = b.conv(sq, {.out = expand, .bias = true, .relu = true}, "expand1x1");
    const auto e3 = b.conv(sq, {.out = expand, .kh = 3, .kw = 3, .bias = true, .relu = true}, "expand3x3");
    return b.concat({e1, e3}, 1);
  };
  x = fire(x, 16, 64, "features.3");
  x = fire(x, 16, 64, "features.4");
  x = fire(x, 32, 128, "features.5");
  x = b.maxpool(x, 3, 2, 0, "features.6", true);
  x = fire(x, 32, 128, "features.7");
  x = fire(x, 48, 192, "features.8");
  x = fire(x, 48, 192, "features.9");
  x = fire(x, 64, 256, "features.10");
  x = b.maxpool(x, 3, 2, 0, "features.11", true);
  x = fire(x, 64, 256, "features.12");
  x = b.conv(x, {.out = 1000, .bias = true, .relu = true}, "classifier.1");
  g.mark_output(b.global_avgpool(x, "classifier.3"));
  return g;
}

namespace {

ValueId squeeze(NetBuilder& b, ValueId x, std::int64_t out) {
  return b.conv(x, {.out = out, .relu = true}, "squeeze");
}
ValueId fit(NetBuilder& b, ValueId cur, ValueId x) {
  if (b.shape(x)[2] == b.shape(cur)[2]) return b.conv(x, {.out = b.shape(cur)[1], .relu = true}, "fit");
  return b.conv(x, {.out = b.shape(cur)[1], .kh = 3, .kw = 3, .stride = 2, .relu = true}, "fit");
}
// Separable conv as in TASO's model: a grouped k x k conv (groups = out channels) then a pointwise conv.
ValueId sep(NetBuilder& b, ValueId x, std::int64_t out, std::int64_t k, std::int64_t stride,
            const std::string& n) {
  auto s = b.scope(n);
  const auto t = b.conv(x, {.out = out, .kh = k, .kw = k, .stride = stride, .groups = out}, "depthwise");
  return b.conv(t, {.out = out}, "pointwise");
}
ValueId normal_cell(NetBuilder& b, ValueId prev, ValueId cur, std::int64_t out) {
  cur = squeeze(b, cur, out);
  prev = fit(b, cur, prev);
  const ValueId ts[10] = {sep(b, cur, out, 3, 1, "sep0"),   cur,
                          sep(b, prev, out, 3, 1, "sep1"),  sep(b, cur, out, 3, 1, "sep2"),
                          b.avgpool(cur, 3, 1, 1, "avg0"),  prev,
                          b.avgpool(prev, 3, 1, 1, "avg1"), b.avgpool(prev, 3, 1, 1, "avg2"),
                          sep(b, prev, out, 3, 1, "sep3"),  sep(b, prev, out, 3, 1, "sep4")};
  std::vector<ValueId> outs;
  for (int i = 0; i < 5; ++i) outs.push_back(b.add(ts[2 * i], ts[2 * i + 1], "add" + std::to_string(i)));
  return b.concat(outs, 1);
}
ValueId reduction_cell(NetBuilder& b, ValueId prev, ValueId cur, std::int64_t out) {
  cur = squeeze(b, cur, out);
  prev = fit(b, cur, prev);
  std::vector<ValueId> outs;
  outs.push_back(b.add(sep(b, prev, out, 7, 2, "sep0"), sep(b, cur, out, 5, 2, "sep1"), "add0"));
  outs.push_back(b.add(b.maxpool(cur, 3, 2, 1, "max0"), sep(b, prev, out, 7, 2, "sep2"), "add1"));
  outs.push_back(b.add(b.avgpool(cur, 3, 2, 1, "avg0"), sep(b, prev, out, 5, 2, "sep3"), "add2"));
  outs.push_back(b.add(b.maxpool(cur, 3, 2, 1, "max1"), sep(b, outs[0], out, 3, 1, "sep4"), "add3"));
  outs.push_back(b.add(b.avgpool(outs[0], 3, 1, 1, "avg1"), outs[1], "add4"));
  return b.concat(outs, 1);
}

}  // namespace

Graph build_nasnet_a(const ZooOptions& o) {
  Graph g("nasnet-a");
  NetBuilder b(g, o.dtype);
  ValueId input = b.input("input", {batch_of(o), 128, 56, 56}, o.dtype);
  std::int64_t out = 128;
  for (int stage = 0; stage < 3; ++stage) {
    ValueId prev = input, cur = input;
    for (int j = 0; j < 5; ++j) {
      auto s = b.scope("stage" + std::to_string(stage) + ".normal" + std::to_string(j));
      const auto t = normal_cell(b, prev, cur, out);
      prev = cur;
      cur = t;
    }
    out *= 2;
    auto s = b.scope("stage" + std::to_string(stage) + ".reduction");
    input = reduction_cell(b, prev, cur, out);
  }
  g.mark_output(input);
  return g;
}

}  // namespace strata::models::zoo
