// The host-side half of the GPU backend, checked on any machine (no GPU, no CUDA needed):
//  - the cuBLAS GEMM mapping (validate/cuda_plan.h plan_gemm): a column-major GEMM written here from cuBLAS's
//    documented definition (C = alpha op(A) op(B) + beta C, element (i, j) of a column-major matrix at
//    i + j * ld, https://docs.nvidia.com/cuda/cublas/#cublas-t-gemm) run on the plan's operands must give the
//    row-major product computed by brute force, for every transpose and batch broadcast;
//  - fused attention's decomposition (plan_attention: two GEMMs around the row softmax) run the same way,
//    against the reference executor's attention, and the causal mask of the row-softmax kernel against the
//    IR's rule by brute force over every element;
//  - cuDNN windows, softmax dims and the strided views of the copy and reduce kernels against hand-derived
//    values;
//  - strata's CUDA kernels' per-element functions (validate/cuda_kernel_math.h, what every thread of
//    cuda_kernels.cu runs) over every index on the host, on the views the lowerings build, against the
//    reference executor (models/exec) on the same inputs;
//  - the NCCL worker's correctness values (validate/collective_check.h) against collectives simulated on
//    plain host buffers from their definitions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "models/exec/executor.h"
#include "models/ir/graph.h"
#include "validate/collective_check.h"
#include "validate/cuda_kernel_math.h"
#include "validate/cuda_plan.h"

namespace strata::validate::cuda {
namespace {

using models::Shape;

std::int64_t numel(const Shape& s) {
  return std::accumulate(s.begin(), s.end(), std::int64_t{1}, std::multiplies<>());
}

std::vector<float> iota_values(std::int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 11) - 5);
  return v;
}

// cuBLAS's strided batched GEMM, from its definition (alpha 1, beta 0), column-major.
std::vector<float> cublas_gemm(const GemmPlan& p, const std::vector<float>& first,
                               const std::vector<float>& second) {
  std::vector<float> c(static_cast<std::size_t>(p.batch * p.stride_out));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t i = 0; i < p.m; ++i)
      for (std::int64_t j = 0; j < p.n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < p.k; ++l) {
          const float* A = first.data() + b * p.stride_first;
          const float* B = second.data() + b * p.stride_second;
          const float a = p.op_first_t ? A[l + i * p.ld_first] : A[i + l * p.ld_first];      // op(A)(i, l)
          const float bb = p.op_second_t ? B[j + l * p.ld_second] : B[l + j * p.ld_second];  // op(B)(l, j)
          sum += static_cast<double>(a) * bb;
        }
        c[static_cast<std::size_t>(b * p.stride_out + i + j * p.ld_out)] = static_cast<float>(sum);
      }
  return c;
}

// The row-major batched product with numpy batch broadcasting, by brute force.
std::vector<float> reference_matmul(const Shape& sa, bool ta, const Shape& sb, bool tb, const Shape& out,
                                    const std::vector<float>& a, const std::vector<float>& b) {
  const std::size_t ro = out.size();
  const std::int64_t m = out[ro - 2], n = out[ro - 1], k = ta ? sa[sa.size() - 2] : sa[sa.size() - 1];
  const std::int64_t batch = numel(out) / (m * n);
  // The batch index of an operand with batch dims `own` (right-aligned, 1s broadcast) for out's batch index.
  auto operand_batch = [&](const Shape& s, std::int64_t ob) {
    std::int64_t index = 0, stride = 1;
    const std::size_t own = s.size() - 2, outb = ro - 2;
    for (std::size_t d = outb; d-- > 0;) {
      const std::int64_t extent = out[d], coord = ob % extent;
      ob /= extent;
      if (d + own < outb) continue;
      const std::int64_t e = s[d + own - outb];
      index += (e == 1 ? 0 : coord) * stride;
      stride *= e;
    }
    return index;
  };
  std::vector<float> c(static_cast<std::size_t>(numel(out)));
  for (std::int64_t ob = 0; ob < batch; ++ob) {
    const float* A = a.data() + operand_batch(sa, ob) * m * k;
    const float* B = b.data() + operand_batch(sb, ob) * k * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t l = 0; l < k; ++l)
          sum += static_cast<double>(ta ? A[l * m + i] : A[i * k + l]) * (tb ? B[j * k + l] : B[l * n + j]);
        c[static_cast<std::size_t>(ob * m * n + i * n + j)] = static_cast<float>(sum);
      }
  }
  return c;
}

void expect_gemm_matches(const Shape& sa, bool ta, const Shape& sb, bool tb, const Shape& out) {
  SCOPED_TRACE(testing::Message() << "trans_a " << ta << " trans_b " << tb << " a rank " << sa.size()
                                  << " b rank " << sb.size());
  const auto a = iota_values(numel(sa), 0.5f), b = iota_values(numel(sb), 0.25f);
  const GemmPlan p = plan_gemm(sa, ta, sb, tb, out);
  // cuBLAS's first operand is the graph's b, its second the graph's a; its output is the graph's output.
  EXPECT_EQ(cublas_gemm(p, b, a), reference_matmul(sa, ta, sb, tb, out, a, b));
}

TEST(CudaPlan, GemmMappingGivesTheRowMajorProductForEveryTranspose) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      const Shape a = ta ? Shape{6, 4} : Shape{4, 6}, b = tb ? Shape{3, 6} : Shape{6, 3};
      expect_gemm_matches(a, ta != 0, b, tb != 0, {4, 3});
      const Shape ba = ta ? Shape{2, 5, 6, 4} : Shape{2, 5, 4, 6},
                  bb = tb ? Shape{2, 5, 3, 6} : Shape{2, 5, 6, 3};
      expect_gemm_matches(ba, ta != 0, bb, tb != 0, {2, 5, 4, 3});
    }
  // One operand shared by every batch item (stride 0), on either side.
  expect_gemm_matches({3, 4, 6}, false, {6, 2}, false, {3, 4, 2});
  expect_gemm_matches({1, 4, 6}, false, {3, 2, 6}, true, {3, 4, 2});
}

TEST(CudaPlan, GemmPlanFieldsByHand) {
  // a [2,3] @ b [3,4]: cuBLAS computes out^T (4 x 2) = b^T a^T with no transposes, k = 3.
  const auto p = plan_gemm({2, 3}, false, {3, 4}, false, {2, 4});
  EXPECT_EQ(p.m, 4);
  EXPECT_EQ(p.n, 2);
  EXPECT_EQ(p.k, 3);
  EXPECT_FALSE(p.op_first_t);
  EXPECT_FALSE(p.op_second_t);
  EXPECT_EQ(p.ld_first, 4);
  EXPECT_EQ(p.ld_second, 3);
  EXPECT_EQ(p.ld_out, 4);
  EXPECT_EQ(p.batch, 1);
  // a stored [K, M] = [3, 2] (trans_a), b stored [N, K] = [4, 3] (trans_b); batch 5 on a only.
  const auto q = plan_gemm({5, 3, 2}, true, {4, 3}, true, {5, 2, 4});
  EXPECT_TRUE(q.op_first_t);
  EXPECT_TRUE(q.op_second_t);
  EXPECT_EQ(q.ld_first, 3);
  EXPECT_EQ(q.ld_second, 2);
  EXPECT_EQ(q.batch, 5);
  EXPECT_EQ(q.stride_second, 6);
  EXPECT_EQ(q.stride_first, 0);
  EXPECT_EQ(q.stride_out, 8);
}

TEST(CudaPlan, GemmRefusesAPartlyBroadcastBatch) {
  // a [2,1,...] against out's batch [2,3]: neither a whole-matrix stride nor a shared matrix.
  EXPECT_THROW(plan_gemm({2, 1, 8, 5}, true, {3, 8, 4}, false, {2, 3, 5, 4}), Unsupported);
  EXPECT_THROW(plan_gemm({2, 3}, false, {4, 5}, false, {2, 5}), Unsupported);  // k differs
}

TEST(CudaPlan, WindowsAsCudnnTakesThem) {
  const std::vector<std::int64_t> k3{3, 3}, s1{1, 1}, s2{2, 2}, d1{1, 1}, d2{2, 2};
  const std::vector<std::int64_t> p1{1, 1, 1, 1}, p0{0, 0, 0, 0}, p2{2, 2, 2, 2}, asym{1, 0, 2, 1};
  const auto w = plan_window(k3, s1, p1, d1, {1, 4, 8, 8}, {1, 6, 8, 8});
  EXPECT_EQ(w.pad_h, 1);
  EXPECT_EQ(w.pad_w, 1);
  EXPECT_EQ(w.kernel_h, 3);
  // (9 + 2·2 - 2·(3 - 1) - 1) / 2 + 1 = 5.
  const auto d = plan_window(k3, s2, p2, d2, {1, 4, 9, 9}, {1, 6, 5, 5});
  EXPECT_EQ(d.dilation_h, 2);
  EXPECT_EQ(d.stride_w, 2);
  EXPECT_THROW(plan_window(k3, s1, asym, d1, {1, 4, 8, 8}, {1, 6, 9, 7}), Unsupported);
  // Pooling in ceil mode: 3x3 stride 2 over 8 gives floor((8 - 3) / 2) + 1 = 3, ceil mode 4.
  EXPECT_EQ(plan_window(k3, s2, p0, {}, {1, 2, 8, 8}, {1, 2, 3, 3}).stride_h, 2);
  EXPECT_THROW(plan_window(k3, s2, p0, {}, {1, 2, 8, 8}, {1, 2, 4, 4}), Unsupported);
}

TEST(CudaPlan, SoftmaxDims) {
  const auto a = plan_softmax({2, 3, 4, 5}, 1);
  EXPECT_EQ(a.n, 2);
  EXPECT_EQ(a.c, 3);
  EXPECT_EQ(a.h, 20);
  const auto b = plan_softmax({2, 3, 4, 5}, -1);
  EXPECT_EQ(b.n, 24);
  EXPECT_EQ(b.c, 5);
  EXPECT_EQ(b.h, 1);
  EXPECT_THROW(plan_softmax({2, 3}, 2), Unsupported);
}

TEST(CudaPlan, StridedViewsByHand) {
  const auto b = broadcast_view({3, 1}, {2, 3, 4});
  EXPECT_EQ(b.rank, 3);
  EXPECT_EQ(std::vector<std::int64_t>(b.strides, b.strides + 3), (std::vector<std::int64_t>{0, 1, 0}));
  const auto s = broadcast_view({}, {2, 2});
  EXPECT_EQ(std::vector<std::int64_t>(s.strides, s.strides + 2), (std::vector<std::int64_t>{0, 0}));
  EXPECT_THROW(broadcast_view({3}, {2, 4}), Unsupported);

  // [2,3,4] permuted (2,0,1): out [4,2,3]; out (i,j,k) = in (j,k,i) at 12j + 4k + i.
  const std::vector<std::int64_t> perm{2, 0, 1};
  const auto t = transpose_view({2, 3, 4}, perm);
  EXPECT_EQ(std::vector<std::int64_t>(t.dims, t.dims + 3), (std::vector<std::int64_t>{4, 2, 3}));
  EXPECT_EQ(std::vector<std::int64_t>(t.strides, t.strides + 3), (std::vector<std::int64_t>{1, 12, 4}));
  EXPECT_EQ(offset_of(t, 1 * 6 + 1 * 3 + 2), 12 + 8 + 1);  // out (1,1,2) = in (1,2,1)
  const auto r = transpose_view({2, 3}, {});               // no perm: reversed
  EXPECT_EQ(std::vector<std::int64_t>(r.strides, r.strides + 2), (std::vector<std::int64_t>{1, 3}));

  // Concat of [2,3] and [2,5] along 1: the second lands at column 3 of rows of 8.
  const std::vector<Shape> parts{{2, 3}, {2, 5}};
  const auto c = concat_part(parts, 1, 1);
  EXPECT_EQ(c.offset, 3);
  EXPECT_EQ(std::vector<std::int64_t>(c.dst.strides, c.dst.strides + 2), (std::vector<std::int64_t>{8, 1}));
  EXPECT_EQ(c.offset + offset_of(c.dst, 5 + 4), 8 + 3 + 4);  // its (1,4) is the output's (1,7)
  EXPECT_EQ(concat_part(parts, 0, -1).offset, 0);

  // Reduce [2,3,4] over axis 1: kept (2,4) with strides (12,1), reduced (3) with stride 4.
  const std::vector<std::int64_t> axis1{1};
  const auto p = plan_reduce({2, 3, 4}, axis1);
  EXPECT_EQ(p.kept.rank, 2);
  EXPECT_EQ(std::vector<std::int64_t>(p.kept.strides, p.kept.strides + 2),
            (std::vector<std::int64_t>{12, 1}));
  EXPECT_EQ(p.reduced.rank, 1);
  EXPECT_EQ(p.reduced.strides[0], 4);
  EXPECT_EQ(plan_reduce({2, 3, 4}, {}).reduced.rank, 3);
  EXPECT_EQ(plan_reduce({2, 3, 4}, {}).kept.rank, 0);
}

// One node on the reference executor's pseudo-random inputs: the inputs (as f32) and its output (double).
struct NodeCase {
  std::vector<std::vector<float>> in;
  std::vector<double> out;
};
NodeCase run_reference(std::string_view op, const std::vector<Shape>& inputs, models::Attrs attrs = {}) {
  models::Graph g("case");
  std::vector<models::ValueId> ins;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(g.add_input("x" + std::to_string(i), models::TensorType{inputs[i], models::DType::kF32}));
  const auto y = g.add(op, ins, std::move(attrs));
  g.mark_output(y);
  // Inputs exactly representable in f32, so that both sides compute on the same numbers.
  models::Feeds<double> feeds;
  for (auto v : ins) {
    auto d = models::random_values<double>(g.type(v).numel(), 7, g.value(v).name);
    for (auto& x : d) x = static_cast<float>(x);
    feeds[v] = d;
  }
  const auto values = models::execute<double>(g, feeds);
  NodeCase c;
  for (auto v : ins) c.in.emplace_back(feeds[v].begin(), feeds[v].end());
  c.out = values[static_cast<std::size_t>(y)];
  return c;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {  // the reference's 0 / 0 (a causal softmax row that sees no key)
      ASSERT_TRUE(std::isnan(got[i])) << "element " << i << ": " << got[i] << ", reference NaN";
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
  }
}

TEST(CudaKernelMath, BroadcastingBinariesOnTheLoweringsViews) {
  for (auto [op, name] :
       {std::pair{BinaryOp::kAdd, "ewadd"}, {BinaryOp::kSub, "ewsub"}, {BinaryOp::kMul, "ewmul"}})
    for (const auto& shapes : std::vector<std::vector<Shape>>{{{2, 3, 4}, {3, 1}, {2, 3, 4}},
                                                              {{1, 4}, {3, 4}, {3, 4}},
                                                              {{5}, {}, {5}}}) {  // inputs, then the output
      SCOPED_TRACE(name);
      const Shape& out = shapes[2];
      const auto c = run_reference(name, {shapes[0], shapes[1]});
      std::vector<float> y(static_cast<std::size_t>(numel(out)));
      const auto a = broadcast_view(shapes[0], out), b = broadcast_view(shapes[1], out), o = dense_view(out);
      for (std::int64_t i = 0; i < numel(out); ++i)
        binary_at(op, a, c.in[0].data(), b, c.in[1].data(), o, y.data(), i);
      expect_close(y, c.out, 1e-6);
    }
}

TEST(CudaKernelMath, UnaryActivationsMatchTheReference) {
  for (auto [op, name] : {std::pair{UnaryOp::kRelu, "relu"},
                          {UnaryOp::kSigmoid, "sigmoid"},
                          {UnaryOp::kTanh, "tanh"},
                          {UnaryOp::kGelu, "gelu"},
                          {UnaryOp::kSilu, "silu"}}) {
    SCOPED_TRACE(name);
    const auto c = run_reference(name, {{257}});
    std::vector<float> y(c.in[0].size());
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = apply_unary(op, c.in[0][i]);
    expect_close(y, c.out, 1e-6);
  }
  EXPECT_FLOAT_EQ(apply_unary(UnaryOp::kRsqrt, 4.0f), 0.5f);
}

TEST(CudaKernelMath, CopiesAndReductionsOnTheLoweringsViews) {
  {  // transpose [2,3,4] by (2,0,1)
    const std::vector<std::int64_t> perm{2, 0, 1};
    const auto c = run_reference("transpose", {{2, 3, 4}}, {{"perm", models::Ints{2, 0, 1}}});
    std::vector<float> y(24);
    const auto src = transpose_view({2, 3, 4}, perm), dst = dense_view({4, 2, 3});
    for (std::int64_t i = 0; i < 24; ++i) copy_at(src, c.in[0].data(), dst, y.data(), i);
    expect_close(y, c.out, 0);
  }
  {  // concat [2,3,4] and [2,5,4] along 1
    const std::vector<Shape> shapes{{2, 3, 4}, {2, 5, 4}};
    const auto c = run_reference("concat", shapes, {{"axis", std::int64_t{1}}});
    std::vector<float> y(64);
    for (std::size_t k = 0; k < 2; ++k) {
      const auto part = concat_part(shapes, k, 1);
      const auto src = dense_view(shapes[k]);
      for (std::int64_t i = 0; i < numel(shapes[k]); ++i)
        copy_at(src, c.in[k].data(), part.dst, y.data() + part.offset, i);
    }
    expect_close(y, c.out, 0);
  }
  for (auto [mean, name] : {std::pair{false, "reduce_sum"}, {true, "reduce_mean"}})
    for (const auto& axes : std::vector<std::vector<std::int64_t>>{{1}, {0, 2}, {-1}, {}}) {
      SCOPED_TRACE(name);
      const auto c = run_reference(name, {{2, 3, 4}}, {{"axes", models::Ints(axes.begin(), axes.end())}});
      const auto p = plan_reduce({2, 3, 4}, axes);
      std::int64_t outputs = 1, count = 1;
      for (int d = 0; d < p.kept.rank; ++d) outputs *= p.kept.dims[d];
      for (int d = 0; d < p.reduced.rank; ++d) count *= p.reduced.dims[d];
      std::vector<float> y(static_cast<std::size_t>(outputs));
      for (std::int64_t j = 0; j < outputs; ++j)
        reduce_at(p.kept, p.reduced, mean, c.in[0].data(), y.data(), j, count);
      expect_close(y, c.out, 1e-6);
    }
}

TEST(CudaKernelMath, LayerNormElementsFromTheRowStatistics) {
  const auto c = run_reference("layernorm", {{3, 16}, {16}, {16}}, {{"axis", std::int64_t{-1}}});
  std::vector<float> y(48);
  for (int row = 0; row < 3; ++row) {
    const float* x = c.in[0].data() + row * 16;
    double mean = 0, var = 0;
    for (int i = 0; i < 16; ++i) mean += x[i] / 16.0;
    for (int i = 0; i < 16; ++i) var += (x[i] - mean) * (x[i] - mean) / 16.0;
    const auto rstd = static_cast<float>(1 / std::sqrt(var + 1e-5));
    for (int i = 0; i < 16; ++i)
      y[static_cast<std::size_t>(row * 16 + i)] =
          normalise(x[i], static_cast<float>(mean), rstd, c.in[1].data(), c.in[2].data(), i);
  }
  expect_close(y, c.out, 1e-5);
}

// The collectives from their definitions on host buffers: what member `me` receives.
std::vector<float> simulate(sim::CollectiveOp op, int n, std::int64_t count, int me) {
  using sim::CollectiveOp;
  const std::int64_t share = count / n;
  auto send = [&](int p) {
    std::vector<float> v(static_cast<std::size_t>(check_send_count(op, n, count, p)));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = check_send_value(p, static_cast<std::int64_t>(i));
    return v;
  };
  std::vector<float> out;
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kReduce:
    case CollectiveOp::kReduceScatter: {
      std::vector<float> sum(static_cast<std::size_t>(count), 0.0f);
      for (int p = 0; p < n; ++p)
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += send(p)[i];
      if (op == CollectiveOp::kReduceScatter)
        return {sum.begin() + me * share, sum.begin() + (me + 1) * share};
      if (op == CollectiveOp::kReduce && me != 0) return {};
      return sum;
    }
    case CollectiveOp::kAllGather:
      for (int p = 0; p < n; ++p) {
        const auto s = send(p);
        out.insert(out.end(), s.begin(), s.end());
      }
      return out;
    case CollectiveOp::kBroadcast:
      return send(0);
    case CollectiveOp::kAllToAll:
      for (int p = 0; p < n; ++p) {
        const auto s = send(p);
        out.insert(out.end(), s.begin() + me * share, s.begin() + (me + 1) * share);
      }
      return out;
    case CollectiveOp::kSendRecv:
      return send((me + n - 1) % n);
  }
  return out;
}

TEST(NcclCheck, ExpectedValuesAreTheCollectivesOfTheSentValues) {
  using sim::CollectiveOp;
  for (auto op :
       {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
        CollectiveOp::kReduce, CollectiveOp::kBroadcast, CollectiveOp::kAllToAll, CollectiveOp::kSendRecv})
    for (int n : {1, 2, 3, 5})
      for (int me = 0; me < n; ++me) {
        SCOPED_TRACE(testing::Message() << sim::op_name(op) << " n " << n << " member " << me);
        const std::int64_t count = 12L * n;
        const auto want = simulate(op, n, count, me);
        ASSERT_EQ(check_recv_count(op, n, count, me), static_cast<std::int64_t>(want.size()));
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(expected_recv_value(op, n, count, me, static_cast<std::int64_t>(i)), want[i])
              << "element " << i;
      }
  // By hand, 4 members: all-reduce element 3 is (1+2+3+4) + 4·3 = 22; all-gather element 5 of shares of 2 is
  // member 2's element 1: 3 + 1 = 4.
  EXPECT_EQ(expected_recv_value(CollectiveOp::kAllReduce, 4, 8, 0, 3), 22.0f);
  EXPECT_EQ(expected_recv_value(CollectiveOp::kAllGather, 4, 8, 1, 5), 4.0f);
}

TEST(CudaKernelMath, PoolingWindowsMatchTheReferenceInCeilModeAndWithAsymmetricPads) {
  struct Case {
    const char* op;
    Shape x;
    models::Attrs attrs;
  };
  const Case cases[] = {
      // 3x3 stride 2 over 8 in ceil mode: 4 outputs, the last window clipped (cuDNN's floor gives 3).
      {"maxpool2d",
       {2, 3, 8, 8},
       {{"kernel", models::Ints{3, 3}}, {"strides", models::Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}},
      {"avgpool2d",
       {2, 3, 8, 8},
       {{"kernel", models::Ints{3, 3}}, {"strides", models::Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}}},
      // Asymmetric pads [top 0, left 1, bottom 1, right 0], padding counted in the divisor.
      {"avgpool2d",
       {1, 2, 7, 6},
       {{"kernel", models::Ints{2, 3}},
        {"strides", models::Ints{1, 2}},
        {"pads", models::Ints{0, 1, 1, 0}},
        {"count_include_pad", std::int64_t{1}}}},
      {"avgpool2d",
       {1, 2, 7, 6},
       {{"kernel", models::Ints{2, 3}},
        {"strides", models::Ints{1, 2}},
        {"pads", models::Ints{0, 1, 1, 0}},
        {"ceil_mode", std::int64_t{1}}}},
      {"maxpool2d",
       {1, 2, 7, 6},
       {{"kernel", models::Ints{2, 2}},
        {"strides", models::Ints{2, 2}},
        {"pads", models::Ints{1, 0, 0, 1}},
        {"ceil_mode", std::int64_t{1}}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op);
    const auto r = run_reference(c.op, {c.x}, c.attrs);
    // The output shape from the graph, as the lowering takes it (ceil mode applied by the shape rule).
    models::Graph g("shape");
    const auto in = g.add_input("x", models::TensorType{c.x, models::DType::kF32});
    const auto out = g.type(g.add(c.op, {in}, c.attrs)).shape;
    const PoolWindow p = plan_pool(c.x, out, c.attrs, std::string_view(c.op) == "avgpool2d");
    std::vector<float> y(r.out.size());
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(y.size()); ++i)
      y[static_cast<std::size_t>(i)] = pool_at(p, r.in[0].data(), i);
    expect_close(y, r.out, 1e-6);
  }
}

TEST(CudaKernelMath, GatherRowsIsTheEmbeddingLookup) {
  models::Graph g("emb");
  const auto table = g.add_input("table", models::TensorType{{5, 3}, models::DType::kF32});
  const auto idx = g.add_input("idx", models::TensorType{{2, 2}, models::DType::kI64});
  const auto y = g.add("embedding", {table, idx});
  g.mark_output(y);
  models::Feeds<double> feeds;
  feeds[table] = {0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32, 40, 41, 42};
  feeds[idx] = {4, 0, -1, 2};  // -1: the last row, as ONNX Gather
  const auto want = models::execute<double>(g, feeds)[static_cast<std::size_t>(y)];
  const std::vector<float> t(feeds[table].begin(), feeds[table].end()),
      ix(feeds[idx].begin(), feeds[idx].end());
  std::vector<float> got(12);
  for (std::int64_t i = 0; i < 12; ++i)
    got[static_cast<std::size_t>(i)] = gather_at(ix.data(), t.data(), 5, 3, i);
  expect_close(got, want, 0);
  const std::vector<float> bad{5, 0};  // out of range: a row of NaN, never a read past the table
  for (std::int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(gather_at(bad.data(), t.data(), 5, 3, i)));
  EXPECT_EQ(gather_at(bad.data(), t.data(), 5, 3, 3), 0.0f);
}

TEST(CudaKernelMath, SplitCopiesEachSliceOfTheInput) {
  // [2, 9, 4] split along axis 1 into 2, 3, 4: output i element (a, b, c) is input (a, off_i + b, c).
  const std::vector<Shape> outs{{2, 2, 4}, {2, 3, 4}, {2, 4, 4}};
  std::vector<float> x(72);
  std::iota(x.begin(), x.end(), 0.0f);
  std::int64_t first = 0;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const auto slice = concat_part(outs, i, 1);  // the lowering's source view of output i
    std::vector<float> y(static_cast<std::size_t>(numel(outs[i])));
    for (std::int64_t e = 0; e < numel(outs[i]); ++e)
      copy_at(slice.dst, x.data() + slice.offset, dense_view(outs[i]), y.data(), e);
    for (std::int64_t a = 0; a < 2; ++a)
      for (std::int64_t b = 0; b < outs[i][1]; ++b)
        for (std::int64_t c = 0; c < 4; ++c)
          EXPECT_EQ(y[static_cast<std::size_t>((a * outs[i][1] + b) * 4 + c)],
                    x[static_cast<std::size_t>((a * 9 + first + b) * 4 + c)]);
    first += outs[i][1];
  }
}

// ---- causal softmax and attention (validate/cuda_attention.cc) ----

TEST(CudaPlan, RowSoftmaxPlanByHand) {
  // [2, 3, 5] causal: 6 rows of 5 keys, query = row mod 3, keys aligned to the end (shift 5 - 3 = 2).
  const auto p = plan_row_softmax({2, 3, 5}, -1, true);
  EXPECT_EQ(p.rows, 6);
  EXPECT_EQ(p.n, 5);
  EXPECT_EQ(p.q_len, 3);
  EXPECT_EQ(p.shift, 2);
  EXPECT_TRUE(p.causal);
  // Row 4 is query 1: keys 0..3 (1 + 2); row 2 is query 2: all 5.
  EXPECT_EQ(softmax_last_key(p, 4), 3);
  EXPECT_EQ(softmax_last_key(p, 2), 4);
  // Fewer keys than queries: [4, 2] row 0 sees key 0 - 2 < 0, i.e. none.
  const auto q = plan_row_softmax({4, 2}, 1, true);
  EXPECT_EQ(q.shift, -2);
  EXPECT_LT(softmax_last_key(q, 1), 0);
  EXPECT_EQ(softmax_last_key(q, 3), 1);
  const auto r = plan_row_softmax({7}, 0, false);  // not causal: one row, every key
  EXPECT_EQ(r.rows, 1);
  EXPECT_EQ(softmax_last_key(r, 0), 6);
  EXPECT_THROW(plan_row_softmax({3, 4}, 0, true), Unsupported);  // causal over a non-last axis
  EXPECT_THROW(plan_row_softmax({4}, 0, true), Unsupported);     // causal needs a row axis
}

// The IR's mask (models/ops/normalization.cc, attention.cc: query i sees keys j <= i + Skv - S) by brute
// force over every element's multi-index, against the row kernel's key limit at the element's row.
TEST(CudaPlan, CausalMaskOfTheRowKernelIsTheIrsForEveryElement) {
  for (const Shape& shape :
       std::vector<Shape>{{4, 4}, {2, 3, 5, 5}, {2, 3, 7}, {3, 6, 4}, {1, 1}, {2, 1, 9}}) {
    SCOPED_TRACE(testing::PrintToString(shape));
    const auto p = plan_row_softmax(shape, -1, true);
    const std::int64_t s = shape[shape.size() - 2], skv = shape.back(), outer = numel(shape) / (s * skv);
    EXPECT_EQ(p.rows * p.n, numel(shape));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < s; ++i)
        for (std::int64_t j = 0; j < skv; ++j)
          ASSERT_EQ(j <= softmax_last_key(p, o * s + i), j <= i + skv - s) << o << "," << i << "," << j;
  }
  // Attention's scores [B·Hkv, G·S, Skv]: query head h = hk·G + g, row r = g·S + i of item b·Hkv + hk.
  const std::int64_t b = 2, h = 6, hkv = 2, s = 5, skv = 8, g = h / hkv;
  const auto a = plan_attention({b, h, s, 4}, {b, hkv, skv, 4}, {b, hkv, skv, 4}, true, 0);
  for (std::int64_t bi = 0; bi < b; ++bi)
    for (std::int64_t hi = 0; hi < h; ++hi)
      for (std::int64_t i = 0; i < s; ++i) {
        const std::int64_t row = (bi * hkv + hi / g) * g * s + (hi % g) * s + i;
        for (std::int64_t j = 0; j < skv; ++j)
          ASSERT_EQ(j <= softmax_last_key(a.softmax, row), j <= i + skv - s) << bi << "," << hi << "," << i;
      }
}

// launch_row_softmax's computation on the host: the kernel's block reductions (max and sum over the visible
// keys) as plain loops, then softmax_element for every element, as each thread does.
std::vector<float> host_row_softmax(const RowSoftmax& p, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (std::int64_t row = 0; row < p.rows; ++row) {
    const float* xr = x.data() + row * p.n;
    const std::int64_t last = softmax_last_key(p, row);
    float mx = -INFINITY, sum = 0.0f;
    for (std::int64_t k = 0; k <= last; ++k) mx = std::max(mx, xr[k]);
    for (std::int64_t k = 0; k <= last; ++k) sum += std::exp(xr[k] - mx);
    for (std::int64_t k = 0; k < p.n; ++k)
      y[static_cast<std::size_t>(row * p.n + k)] = softmax_element(xr[k], mx, 1.0f / sum, k <= last);
  }
  return y;
}

TEST(CudaKernelMath, RowSoftmaxMatchesTheReferenceCausalAndNot) {
  // Keys = queries, more keys than queries, fewer (the first rows see none: NaN in both), rows over 256 keys.
  for (const Shape& shape : std::vector<Shape>{{2, 3, 5, 5}, {2, 3, 7}, {3, 6, 4}, {2, 4, 300}})
    for (int causal = 0; causal < 2; ++causal) {
      SCOPED_TRACE(testing::Message() << testing::PrintToString(shape) << " causal " << causal);
      const auto c =
          run_reference("softmax", {shape}, {{"axis", std::int64_t{-1}}, {"causal", std::int64_t{causal}}});
      expect_close(host_row_softmax(plan_row_softmax(shape, -1, causal != 0), c.in[0]), c.out, 1e-6);
    }
}

TEST(CudaPlan, AttentionPlanByHand) {
  // q [2, 4, 3, 8], k = v [2, 2, 5, 8]: 4 items (B·Hkv) of 6 query rows (G·S = 2·3), 5 keys.
  const auto p = plan_attention({2, 4, 3, 8}, {2, 2, 5, 8}, {2, 2, 5, 8}, true, 0);
  // scores (6 x 5 row-major) = q (6 x 8) kᵀ: cuBLAS's m = 5, n = 6, k = 8, its first operand k transposed.
  EXPECT_EQ(p.scores.batch, 4);
  EXPECT_EQ(p.scores.m, 5);
  EXPECT_EQ(p.scores.n, 6);
  EXPECT_EQ(p.scores.k, 8);
  EXPECT_TRUE(p.scores.op_first_t);
  EXPECT_FALSE(p.scores.op_second_t);
  EXPECT_EQ(p.scores.stride_first, 5 * 8);   // one key/value head
  EXPECT_EQ(p.scores.stride_second, 6 * 8);  // two query heads
  EXPECT_EQ(p.scores.stride_out, 6 * 5);
  // o (6 x 8) = scores (6 x 5) v (5 x 8): m = 8, n = 6, k = 5.
  EXPECT_EQ(p.output.m, 8);
  EXPECT_EQ(p.output.n, 6);
  EXPECT_EQ(p.output.k, 5);
  EXPECT_FALSE(p.output.op_first_t);
  EXPECT_EQ(p.output.stride_second, 30);
  EXPECT_EQ(p.output.stride_out, 48);
  EXPECT_EQ(p.softmax.rows, 24);
  EXPECT_EQ(p.softmax.n, 5);
  EXPECT_EQ(p.softmax.q_len, 3);
  EXPECT_EQ(p.softmax.shift, 2);
  EXPECT_EQ(p.score_elements, 120);
  EXPECT_FLOAT_EQ(p.scale, 1 / std::sqrt(8.0f));
  EXPECT_FLOAT_EQ(plan_attention({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}, false, 0.25).scale, 0.25f);
  EXPECT_FALSE(plan_attention({1, 1, 2, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}, false, 0).softmax.causal);
  EXPECT_THROW(plan_attention({1, 4, 2, 4}, {1, 3, 2, 4}, {1, 3, 2, 4}, false, 0), Unsupported);  // 3 ∤ 4
  EXPECT_THROW(plan_attention({1, 1, 4, 4}, {1, 1, 2, 4}, {1, 1, 2, 4}, true, 0), Unsupported);   // Skv < S
}

// The whole decomposition on the host: cuBLAS's GEMM from its definition on the plan's operands (scaled as
// the call's alpha), the row softmax, the second GEMM, against the reference executor's attention.
TEST(CudaPlan, AttentionDecompositionGivesTheReferenceOutput) {
  struct Case {
    std::int64_t b, h, hkv, s, skv, d;
    bool causal;
    double scale;
  };
  for (const auto& t : std::vector<Case>{{1, 1, 1, 5, 5, 4, true, 0},
                                         {2, 4, 2, 7, 7, 8, true, 0},        // grouped-query
                                         {1, 3, 3, 5, 9, 6, true, 0},        // more keys than queries
                                         {2, 2, 1, 33, 33, 16, false, 0.3},  // one key/value head
                                         {1, 2, 2, 6, 3, 4, false, 0}}) {    // fewer keys, not causal
    SCOPED_TRACE(testing::Message() << "b " << t.b << " h " << t.h << " hkv " << t.hkv << " s " << t.s
                                    << " skv " << t.skv << " d " << t.d << " causal " << t.causal);
    const Shape q{t.b, t.h, t.s, t.d}, kv{t.b, t.hkv, t.skv, t.d};
    const auto c =
        run_reference("attention", {q, kv, kv}, {{"causal", std::int64_t{t.causal}}, {"scale", t.scale}});
    const auto p = plan_attention(q, kv, kv, t.causal, t.scale);
    auto scores = cublas_gemm(p.scores, c.in[1], c.in[0]);
    ASSERT_EQ(static_cast<std::int64_t>(scores.size()), p.score_elements);
    for (auto& x : scores) x *= p.scale;
    const auto out = cublas_gemm(p.output, c.in[2], host_row_softmax(p.softmax, scores));
    expect_close(out, c.out, 1e-5);
  }
}

}  // namespace
}  // namespace strata::validate::cuda
