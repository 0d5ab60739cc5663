// The operators' parallel dimensions (OpDef::parallel_dims) checked by running them: for every declared
// dimension split two ways, the reference executor runs the operator on each part's input blocks; the part's
// result must equal its block of the whole operator's output (reduction dimensions: the parts' results must
// sum to the whole output).
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "models/exec/executor.h"
#include "search/parallel/op_plan.h"

namespace strata::search::parallel {
namespace {

using models::Attrs;
using models::DType;
using models::Graph;
using models::Ints;
using models::ParallelDimKind;
using models::Shape;
using models::TensorType;

// The elements of `block` of a row-major tensor of `shape`.
std::vector<double> slice(const std::vector<double>& data, const Shape& shape, const Block& block) {
  std::vector<double> out;
  const auto strides = models::strides_of(shape);
  std::vector<std::int64_t> idx(block.lo);
  if (shape.empty()) return data;
  for (;;) {
    std::int64_t off = 0;
    for (std::size_t a = 0; a < idx.size(); ++a) off += idx[a] * strides[a];
    out.push_back(data[static_cast<std::size_t>(off)]);
    std::size_t a = idx.size();
    while (a-- > 0) {
      if (++idx[a] < block.hi[a]) break;
      idx[a] = block.lo[a];
      if (a == 0) return out;
    }
  }
}

Shape extent(const Block& b) {
  Shape s(b.lo.size());
  for (std::size_t a = 0; a < s.size(); ++a) s[a] = b.hi[a] - b.lo[a];
  return s;
}

struct Source {
  Source(std::string n, TensorType t, models::ValueKind k = models::ValueKind::kInput,
         std::vector<double> d = {})
      : name(std::move(n)), type(std::move(t)), kind(k), data(std::move(d)) {}
  std::string name;
  TensorType type;
  models::ValueKind kind;
  std::vector<double> data;  // empty: pseudo-random
};

// One node of `op` on these sources; every dimension of its trait is split two ways and checked.
void check_op(const std::string& op, const std::vector<Source>& sources, const Attrs& attrs,
              std::vector<std::string> skip = {}) {
  SCOPED_TRACE(op);
  Graph g;
  std::vector<models::ValueId> ins;
  for (const auto& s : sources)
    ins.push_back(s.data.empty() ? g.add_source(s.name, s.type, s.kind)
                                 : g.add_source(s.name, s.type, s.kind,
                                                std::make_shared<const std::vector<double>>(s.data)));
  const auto out = g.add(op, ins, attrs, "node");
  g.mark_output(out);
  models::ExecOptions eo;
  eo.random_index_bound = 4;
  const auto full = models::execute<double>(g, {}, eo);
  const PlanSpace space(g, 2);
  ASSERT_EQ(space.size(), 1);
  ASSERT_TRUE(space.declared(0));
  const auto dims = space.dims(0);
  int checked = 0;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    if (std::find(skip.begin(), skip.end(), std::string(dims[k].name)) != skip.end()) continue;
    OpConfig c{std::vector<int>(dims.size(), 1), 0, 1};
    c.degrees[k] = 2;
    bool valid = false;
    for (const auto& v : space.configs(0)) valid = valid || v == c;
    if (!valid) continue;
    SCOPED_TRACE(std::string(dims[k].name));
    std::vector<double> sum;
    for (int p = 0; p < 2; ++p) {
      Graph part;
      std::vector<models::ValueId> pin;
      for (std::size_t j = 0; j < ins.size(); ++j) {
        const auto b = space.input_block(0, c, p, static_cast<int>(j));
        const auto& v = g.value(ins[j]);
        pin.push_back(part.add_source(v.name, {extent(b), v.type.dtype}, v.kind,
                                      std::make_shared<const std::vector<double>>(
                                          slice(full[static_cast<std::size_t>(ins[j])], v.type.shape, b))));
      }
      const auto pout = part.add(op, pin, attrs, "node");
      const auto got = models::execute<double>(part)[static_cast<std::size_t>(pout)];
      if (dims[k].kind == ParallelDimKind::kReduction) {
        if (sum.empty()) sum.assign(got.size(), 0);
        for (std::size_t e = 0; e < got.size(); ++e) sum[e] += got[e];
        continue;
      }
      const auto want =
          slice(full[static_cast<std::size_t>(out)], g.type(out).shape, space.output_block(0, c, p));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t e = 0; e < got.size(); ++e)
        ASSERT_NEAR(got[e], want[e], 1e-9) << "part " << p << " element " << e;
    }
    if (dims[k].kind == ParallelDimKind::kReduction) {
      const auto& want = full[static_cast<std::size_t>(out)];
      ASSERT_EQ(sum.size(), want.size());
      for (std::size_t e = 0; e < sum.size(); ++e) ASSERT_NEAR(sum[e], want[e], 1e-9) << "element " << e;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(OpDims, ContractionsSplitExactly) {
  check_op("matmul", {{"a", {{8, 6}}}, {"b", {{6, 4}}, models::ValueKind::kParam}}, {});
  check_op("matmul", {{"a", {{6, 8}}}, {"b", {{4, 6}}, models::ValueKind::kParam}},
           {{"trans_a", std::int64_t{1}}, {"trans_b", std::int64_t{1}}});
  check_op("matmul", {{"a", {{8, 6}}}, {"b", {{6, 4}}, models::ValueKind::kParam}},
           {{"activation", std::string("relu")}});
  check_op("batch_matmul", {{"a", {{4, 8, 6}}}, {"b", {{4, 6, 4}}}}, {});
  // 1x1 kernel, stride 1: rows split without halo, so every dimension is exact.
  check_op("conv2d",
           {{"x", {{4, 4, 6, 6}}},
            {"w", {{4, 4, 1, 1}}, models::ValueKind::kParam},
            {"b", {{4}}, models::ValueKind::kParam}},
           {});
}

TEST(OpDims, ElementwiseAndNormalizationsSplitExactly) {
  check_op("relu", {{"x", {{8, 6}}}}, {});
  check_op("ewadd", {{"x", {{8, 6}}}, {"y", {{6}}}}, {});  // y broadcast: needed whole
  check_op("ewmul", {{"x", {{4, 6}}}, {"y", {{4, 6}}}}, {});
  const std::vector<double> var{0.5, 1.0, 1.5, 2.0};
  check_op("batchnorm",
           {{"x", {{4, 4, 3, 3}}},
            {"scale", {{4}}, models::ValueKind::kParam},
            {"bias", {{4}}, models::ValueKind::kParam},
            {"mean", {{4}}, models::ValueKind::kConstant, {0.1, -0.2, 0.3, 0.0}},
            {"var", {{4}}, models::ValueKind::kConstant, var}},
           {});
  check_op(
      "layernorm",
      {{"x", {{4, 6, 8}}}, {"g", {{8}}, models::ValueKind::kParam}, {"b", {{8}}, models::ValueKind::kParam}},
      {});
  check_op("rmsnorm", {{"x", {{4, 6, 8}}}, {"g", {{8}}, models::ValueKind::kParam}}, {});
  check_op("softmax", {{"x", {{4, 6, 8}}}}, {});
  check_op("softmax", {{"x", {{4, 6, 8}}}}, {{"axis", std::int64_t{1}}});
}

TEST(OpDims, PoolingEmbeddingAndMovementSplitExactly) {
  // Window = stride: row blocks need no halo.
  const Attrs pool{{"kernel", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  check_op("maxpool2d", {{"x", {{4, 4, 8, 8}}}}, pool);
  check_op("avgpool2d", {{"x", {{4, 4, 8, 8}}}}, pool);
  // The vocabulary split is a masked lookup (rows outside a part's range give zeros, parts summed); the
  // plain kernel on a table block cannot express it, so it is not run here.
  check_op("embedding", {{"table", {{10, 6}}, models::ValueKind::kParam}, {"idx", {{8}, DType::kI64}}}, {},
           {"vocab"});
  check_op("transpose", {{"x", {{4, 6, 8}}}}, {{"perm", Ints{1, 0, 2}}});
  check_op("reshape", {{"x", {{4, 6, 8}}}}, {{"shape", Ints{-1, 8}}});
  check_op("reshape", {{"x", {{24, 8}}}}, {{"shape", Ints{-1, 6, 8}}});
}

}  // namespace
}  // namespace strata::search::parallel
