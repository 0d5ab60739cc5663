#include "util/hash.h"

#include <gtest/gtest.h>

namespace strata::util {
namespace {

// splitmix64 seeded with 0 returns mix64(0), mix64(golden), ...: the first two outputs of Vigna's reference
// generator (https://prng.di.unimi.it/splitmix64.c) are 0xe220a8397b1dcdaf and 0x6e789e6aa1b965f4.
TEST(Hash, Mix64MatchesSplitmix64ReferenceOutputs) {
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(0x9E3779B97F4A7C15ull), 0x6e789e6aa1b965f4ull);
  static_assert(mix64(0) == 0xe220a8397b1dcdafull, "usable in constant expressions");
}

// seed ^ (value + 0x9e3779b97f4a7c15 + (seed << 6) + (seed >> 2)), evaluated by hand.
TEST(Hash, HashCombineIsTheBoostFormula) {
  EXPECT_EQ(hash_combine(0, 0), 0x9e3779b97f4a7c15ull);
  // 1 ^ (2 + C + 64 + 0) = 1 ^ 0x9e3779b97f4a7c57
  EXPECT_EQ(hash_combine(1, 2), 0x9e3779b97f4a7c56ull);
  EXPECT_NE(hash_combine(hash_combine(0, 1), 2), hash_combine(hash_combine(0, 2), 1));  // order matters
}

// Published FNV-1a 64-bit test vectors (http://www.isthe.com/chongo/tech/comp/fnv/): "" -> offset basis,
// "a" -> 0xaf63dc4c8601ec8c, "foobar" -> 0x85944171f73967e8, with the standard basis 14695981039346656037.
TEST(Hash, Fnv1aMatchesPublishedVectors) {
  constexpr std::uint64_t kStandardBasis = 14695981039346656037ull;
  EXPECT_EQ(fnv1a("", kStandardBasis), kStandardBasis);
  EXPECT_EQ(fnv1a("a", kStandardBasis), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a("foobar", kStandardBasis), 0x85944171f73967e8ull);
  // strata's own start value: one step of "a" by hand.
  EXPECT_EQ(fnv1a(""), kFnvOffset);
  EXPECT_EQ(fnv1a("a"), (kFnvOffset ^ 0x61u) * kFnvPrime);
}

}  // namespace
}  // namespace strata::util
