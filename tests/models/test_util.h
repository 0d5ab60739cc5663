// Small helpers for the models tests: run one operator on literal inputs.
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "models/exec/executor.h"
#include "models/ir/graph.h"

namespace strata::models::testing {

struct Lit {
  Shape shape;
  std::vector<double> data;
  DType dtype = DType::kF32;
};

struct OpRun {
  Graph g;
  std::vector<ValueId> ins, outs;
};

inline OpRun build(std::string_view op, const std::vector<Lit>& inputs, Attrs attrs = {}) {
  OpRun r;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    r.ins.push_back(r.g.add_input("in" + std::to_string(i), TensorType{inputs[i].shape, inputs[i].dtype}));
  r.outs = r.g.add_node(op, r.ins, std::move(attrs), "n");
  for (auto o : r.outs) r.g.mark_output(o);
  return r;
}

template <class T>
std::vector<std::vector<T>> run_op(std::string_view op, const std::vector<Lit>& inputs, Attrs attrs = {},
                                   Shape* out_shape = nullptr) {
  auto r = build(op, inputs, std::move(attrs));
  Feeds<T> feeds;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::vector<T> d;
    for (double x : inputs[i].data) d.push_back(Num<T>::from_double(x));
    feeds[r.ins[i]] = d;
  }
  ExecOptions opt;
  opt.randomize_missing = false;
  auto all = execute<T>(r.g, feeds, opt);
  if (out_shape) *out_shape = r.g.type(r.outs[0]).shape;
  std::vector<std::vector<T>> outs;
  for (auto o : r.outs) outs.push_back(all[static_cast<std::size_t>(o)]);
  return outs;
}

inline std::vector<double> run1(std::string_view op, const std::vector<Lit>& inputs, Attrs attrs = {},
                                Shape* out_shape = nullptr) {
  return run_op<double>(op, inputs, std::move(attrs), out_shape)[0];
}

inline void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

inline std::vector<double> iota(std::int64_t n, double start = 1) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = start++;
  return v;
}

}  // namespace strata::models::testing
