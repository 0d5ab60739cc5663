// The generator's packed graph encoding and TASO's enumeration order (generator_internal.h).
#include <algorithm>

#include "search/subst/generator_internal.h"

namespace strata::search::subst::generator_detail {

Enc unpack(std::uint64_t r, const std::vector<OpInstance>& ops) {
  Enc g;
  for (int k = 0; k < kMaxOps; ++k) {
    const auto word = (r >> (16 * k)) & 0xFFFF;
    if (word == 0) break;
    auto& e = g.ops[static_cast<std::size_t>(k)];
    e.tmpl = static_cast<std::uint8_t>((word >> 10) - 1);
    e.in = {static_cast<std::uint8_t>((word >> 5) & 31), static_cast<std::uint8_t>(word & 31)};
    e.nin = static_cast<std::uint8_t>(op_info(ops[e.tmpl].op).tensor_args);
    g.n = static_cast<std::uint8_t>(k + 1);
  }
  return g;
}

Producers producers(const Enc& g, const std::vector<OpInstance>& ops) {
  Producers p;
  p.op.fill(-1);
  for (int k = 0; k < g.n; ++k)
    for (int o = 0; o < op_outputs(ops, g.ops[static_cast<std::size_t>(k)]); ++o) {
      p.op[static_cast<std::size_t>(p.tensors)] = static_cast<std::int8_t>(k);
      p.out[static_cast<std::size_t>(p.tensors)] = static_cast<std::int8_t>(o);
      ++p.tensors;
    }
  return p;
}

// Unconsumed operator outputs of an encoded graph, by tensor index.
std::vector<int> graph_outputs(const Enc& g, const std::vector<OpInstance>& ops) {
  std::array<int, kMaxTensors> used{};
  for (int k = 0; k < g.n; ++k)
    for (int a = 0; a < g.ops[static_cast<std::size_t>(k)].nin; ++a)
      ++used[g.ops[static_cast<std::size_t>(k)].in[static_cast<std::size_t>(a)]];
  std::vector<int> outs;
  const int n = producers(g, ops).tensors;
  for (int t = kInputs; t < n; ++t)
    if (!used[static_cast<std::size_t>(t)]) outs.push_back(t);
  return outs;
}

int taso_rank(const OpInstance& inst, const ValueStore& store, std::span<const ValueId> args) {
  switch (inst.op) {
    case Op::kMatmul:
      return 0;
    case Op::kEwadd:
      return 1;
    case Op::kEwmul:
      return 2;
    case Op::kConv2d: {
      const auto& w = store.shape(args[1]);
      const int relu = inst.params[3] == kActiRelu ? 1 : 0;
      if (w[2] == 3 && w[3] == 3) return 3 + relu;
      if (w[2] == 1 && w[3] == 3) return 5 + relu;
      if (w[2] == 3 && w[3] == 1) return 7 + relu;
      return 26 + relu;
    }
    case Op::kPoolavg:
      return 9;
    case Op::kPoolmax:
      return 10;
    case Op::kCpool:
      return 11;
    case Op::kIconv:
      return 12;
    case Op::kImatmul:
      return 13;
    case Op::kIewmul:
      return 14;
    case Op::kEnlarge:
      return 15;
    case Op::kSmul:
      return 16;
    case Op::kRelu:
      return 17;
    case Op::kConcat:
      return 18 + (store.rank(args[0]) == 4 ? 2 : 0) + (inst.params[0] == 0 ? 1 : 0);
    case Op::kSplit0:
    case Op::kSplit1:
      return inst.params[0] == 1 ? 22 : 23;
    case Op::kTranspose:
      return is_layout_only_transpose(inst) ? 24 : 25;
  }
  return 30;
}

std::vector<int> taso_key(const Enc& g, const std::vector<OpInstance>& ops, ValueStore& store) {
  std::array<int, kMaxOps> perm{};
  for (int i = 0; i < g.n; ++i) perm[static_cast<std::size_t>(i)] = i;
  const auto prod = producers(g, ops);
  std::array<int, kMaxOps> first_tensor{};
  {
    int t = kInputs;
    for (int k = 0; k < g.n; ++k) {
      first_tensor[static_cast<std::size_t>(k)] = t;
      t += op_outputs(ops, g.ops[static_cast<std::size_t>(k)]);
    }
  }
  // Values of all tensors (for ranks that depend on argument shapes).
  std::vector<ValueId> values(kMaxTensors);
  for (int i = 0; i < kInputs; ++i) values[static_cast<std::size_t>(i)] = static_cast<ValueId>(i);
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a)
      args[static_cast<std::size_t>(a)] = values[e.in[static_cast<std::size_t>(a)]];
    const auto r = store.apply(e.tmpl, std::span(args.data(), e.nin));
    for (int o = 0; o < r.count; ++o)
      values[static_cast<std::size_t>(first_tensor[static_cast<std::size_t>(k)] + o)] =
          r.ids[static_cast<std::size_t>(o)];
  }
  std::array<int, kMaxOps> ranks{};
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    std::array<ValueId, 2> args{};
    for (int a = 0; a < e.nin; ++a)
      args[static_cast<std::size_t>(a)] = values[e.in[static_cast<std::size_t>(a)]];
    ranks[static_cast<std::size_t>(k)] = taso_rank(ops[e.tmpl], store, std::span(args.data(), e.nin));
  }
  std::vector<int> best;
  do {
    // perm[i] = original op placed at position i; new tensor index of each original tensor.
    std::array<int, kMaxOps> pos{};
    for (int i = 0; i < g.n; ++i) pos[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = i;
    std::array<int, kMaxTensors> index{};
    for (int t = 0; t < kInputs; ++t) index[static_cast<std::size_t>(t)] = t;
    int next = kInputs;
    bool valid = true;
    std::vector<int> key;
    for (int i = 0; i < g.n && valid; ++i) {
      const int k = perm[static_cast<std::size_t>(i)];
      const auto& e = g.ops[static_cast<std::size_t>(k)];
      std::array<int, 2> idx{-1, -1};
      for (int a = 0; a < e.nin; ++a) {
        const int t = e.in[static_cast<std::size_t>(a)];
        const int p = prod.op[static_cast<std::size_t>(t)];
        if (p >= 0 && pos[static_cast<std::size_t>(p)] >= i) valid = false;
        idx[static_cast<std::size_t>(a)] = index[static_cast<std::size_t>(t)];
      }
      if (!valid) break;
      if (ordered_pair_op(ops[e.tmpl].op) && idx[0] >= idx[1]) valid = false;
      key.insert(key.end(), {ranks[static_cast<std::size_t>(k)], idx[0], idx[1]});
      for (int o = 0; o < op_outputs(ops, e); ++o)
        index[static_cast<std::size_t>(first_tensor[static_cast<std::size_t>(k)] + o)] = next++;
    }
    if (valid && (best.empty() || key < best)) best = std::move(key);
  } while (std::next_permutation(perm.begin(), perm.begin() + g.n));
  if (best.empty()) best.assign(1, 1 << 20);  // not in TASO's space: after every graph that is
  return best;
}
}  // namespace strata::search::subst::generator_detail
