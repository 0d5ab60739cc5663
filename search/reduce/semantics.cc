#include "search/reduce/semantics.h"

#include <algorithm>
#include <bit>
#include <stdexcept>

#include <fmt/format.h>

#include "util/hash.h"

namespace strata::search::reduce {

ChunkState::ChunkState(int k)
    : k_(k),
      words_(static_cast<std::size_t>((k + 63) / 64)),
      bits_(static_cast<std::size_t>(k) * static_cast<std::size_t>(k) * words_, 0) {}

ChunkState ChunkState::initial(int k) {
  if (k < 1) throw std::invalid_argument("a chunk state needs at least one device");
  ChunkState s(k);
  for (int d = 0; d < k; ++d)
    for (int r = 0; r < k; ++r) s.row(d, r)[static_cast<std::size_t>(d) / 64] |= std::uint64_t{1} << (d % 64);
  return s;
}

bool ChunkState::row_empty(int device, int r) const {
  const auto* w = row(device, r);
  for (std::size_t i = 0; i < words_; ++i)
    if (w[i] != 0) return false;
  return true;
}

bool ChunkState::holds_row(int device, int r) const {
  return !row_empty(device, r);
}

bool ChunkState::bit(int device, int r, int column) const {
  return ((row(device, r)[static_cast<std::size_t>(column) / 64] >> (column % 64)) & 1U) != 0;
}

int ChunkState::rows_held(int device) const {
  int n = 0;
  for (int r = 0; r < k_; ++r) n += row_empty(device, r) ? 0 : 1;
  return n;
}

bool ChunkState::is_final() const {
  for (std::size_t i = 0; i < bits_.size(); ++i) {
    const std::size_t word = i % words_;
    const int bits_in_word = word + 1 == words_ ? k_ - static_cast<int>(word) * 64 : 64;
    const std::uint64_t full =
        bits_in_word == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits_in_word) - 1;
    if (bits_[i] != full) return false;
  }
  return true;
}

std::string ChunkState::apply(sim::CollectiveOp op, std::span<const int> group) {
  const int g = static_cast<int>(group.size());
  if (g < 2) return "a collective needs at least two devices";
  const int d0 = group[0];
  auto same_rows = [&](int a, int b) {
    for (int r = 0; r < k_; ++r)
      if (row_empty(a, r) != row_empty(b, r)) return false;
    return true;
  };
  // The sum of the group's rows, or the reason it cannot be formed without double counting.
  std::vector<std::uint64_t> sum;
  auto reduce_pre = [&]() -> std::string {
    for (int i = 1; i < g; ++i)
      if (!same_rows(group[static_cast<std::size_t>(i)], d0)) return "devices hold different chunks";
    if (empty(d0)) return "the devices hold no data";
    sum.assign(static_cast<std::size_t>(k_) * words_, 0);
    for (int d : group)
      for (int r = 0; r < k_; ++r) {
        const auto* w = row(d, r);
        auto* acc = &sum[static_cast<std::size_t>(r) * words_];
        for (std::size_t i = 0; i < words_; ++i) {
          if ((acc[i] & w[i]) != 0) return fmt::format("chunk {} would sum a contribution twice", r);
          acc[i] |= w[i];
        }
      }
    return {};
  };
  auto write = [&](int d, const std::vector<std::uint64_t>& m) { std::copy(m.begin(), m.end(), row(d, 0)); };
  auto clear = [&](int d) { std::fill_n(row(d, 0), static_cast<std::size_t>(k_) * words_, 0); };

  switch (op) {
    case sim::CollectiveOp::kAllReduce: {
      if (auto why = reduce_pre(); !why.empty()) return why;
      for (int d : group) write(d, sum);
      return {};
    }
    case sim::CollectiveOp::kReduce: {
      if (auto why = reduce_pre(); !why.empty()) return why;
      for (int d : group) clear(d);
      write(d0, sum);
      return {};
    }
    case sim::CollectiveOp::kReduceScatter: {
      if (auto why = reduce_pre(); !why.empty()) return why;
      std::vector<int> rows;
      for (int r = 0; r < k_; ++r)
        if (!row_empty(d0, r)) rows.push_back(r);
      if (rows.size() % static_cast<std::size_t>(g) != 0)
        return fmt::format("{} chunks cannot be scattered evenly over {} devices", rows.size(), g);
      const std::size_t block = rows.size() / static_cast<std::size_t>(g);
      for (int i = 0; i < g; ++i) {
        const int d = group[static_cast<std::size_t>(i)];
        clear(d);
        for (std::size_t b = 0; b < block; ++b) {
          const int r = rows[static_cast<std::size_t>(i) * block + b];
          std::copy_n(&sum[static_cast<std::size_t>(r) * words_], words_, row(d, r));
        }
      }
      return {};
    }
    case sim::CollectiveOp::kAllGather: {
      const int n = rows_held(d0);
      if (n == 0) return "the devices hold no data";
      std::vector<std::uint64_t> all(static_cast<std::size_t>(k_) * words_, 0);
      std::vector<bool> taken(static_cast<std::size_t>(k_), false);
      for (int d : group) {
        if (rows_held(d) != n) return "devices hold different numbers of chunks";
        for (int r = 0; r < k_; ++r) {
          if (row_empty(d, r)) continue;
          if (taken[static_cast<std::size_t>(r)]) return fmt::format("chunk {} is held by two devices", r);
          taken[static_cast<std::size_t>(r)] = true;
          std::copy_n(row(d, r), words_, &all[static_cast<std::size_t>(r) * words_]);
        }
      }
      for (int d : group) write(d, all);
      return {};
    }
    case sim::CollectiveOp::kBroadcast: {
      bool strictly_poorer = false;
      for (int i = 1; i < g; ++i) {
        const int d = group[static_cast<std::size_t>(i)];
        const auto* a = row(d, 0);
        const auto* root = row(d0, 0);
        for (std::size_t w = 0; w < static_cast<std::size_t>(k_) * words_; ++w) {
          if ((a[w] & ~root[w]) != 0) return "a device holds data the root lacks";
          if (a[w] != root[w]) strictly_poorer = true;
        }
      }
      if (!strictly_poorer) return "no device gains information";
      std::vector<std::uint64_t> root(row(d0, 0), row(d0, 0) + static_cast<std::size_t>(k_) * words_);
      for (int d : group) write(d, root);
      return {};
    }
    default:
      return fmt::format("{} is not part of the reduction DSL", sim::op_name(op));
  }
}

std::string ChunkState::apply(sim::CollectiveOp op, const Grouping& groups) {
  for (const auto& grp : groups)
    if (auto why = apply(op, grp); !why.empty())
      return fmt::format("group starting at device {}: {}", grp.front(), why);
  return {};
}

std::size_t ChunkState::hash() const {
  std::uint64_t h = util::kFnvOffset;
  for (auto w : bits_) h = util::hash_combine(h, w) * util::kFnvPrime;
  return static_cast<std::size_t>(h);
}

std::string ChunkState::to_string() const {
  std::string s;
  for (int d = 0; d < k_; ++d) {
    s += fmt::format("d{}:", d);
    for (int r = 0; r < k_; ++r) {
      if (row_empty(d, r)) continue;
      s += fmt::format(" r{}={{", r);
      bool first = true;
      for (int c = 0; c < k_; ++c)
        if (bit(d, r, c)) {
          s += fmt::format("{}{}", first ? "" : ",", c);
          first = false;
        }
      s += "}";
    }
    s += "\n";
  }
  return s;
}

std::vector<ChunkState> trace_program(const Program& p, const SynthesisHierarchy& h) {
  std::vector<ChunkState> states{ChunkState::initial(h.num_devices())};
  for (std::size_t i = 0; i < p.size(); ++i) {
    ChunkState next = states.back();
    const auto why = next.apply(p[i].op, groups_of(h, p[i].slice, p[i].form));
    if (!why.empty())
      throw std::invalid_argument(fmt::format("step {} {} is invalid: {}", i + 1, to_string(p[i], h), why));
    states.push_back(std::move(next));
  }
  return states;
}

}  // namespace strata::search::reduce
