// Hashing primitives, declared once for every component: the splitmix64 finalizer, a boost-style
// combine and 64-bit FNV-1a over bytes. The constants are part of strata's outputs (search orders, memo
// keys and fingerprints depend on them), so they must not change.
#pragma once

#include <cstdint>
#include <string_view>

namespace strata::util {

// 2^64 / golden ratio, the increment of splitmix64 and the constant of hash_combine.
inline constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

// David Stafford's "Mix13" bit mixer ("Better Bit Mixing", 2011,
// http://zimbry.blogspot.com/2011/09/better-bit-mixing-improving-on.html): a bijection of 64-bit words with
// good avalanche, the output function of splitmix64.
constexpr std::uint64_t stafford_mix13(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// splitmix64's step (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014;
// Vigna's public-domain splitmix64.c, https://prng.di.unimi.it/splitmix64.c): add the golden gamma, then
// Mix13. Used to hash fingerprints and graphs and to draw seeded pseudo-random values.
constexpr std::uint64_t mix64(std::uint64_t z) {
  return stafford_mix13(z + kGoldenGamma);
}

// boost::hash_combine's classic formula (Boost.ContainerHash up to 1.80) with the 64-bit golden-ratio
// constant 2^64/phi instead of the 32-bit 0x9e3779b9: seed ^ (value + 0x9e3779b97f4a7c15 + (seed << 6) +
// (seed >> 2)). Not boost::hash_combine itself: Boost's version differs between releases, strata's hashes
// must not.
constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) {
  return seed ^ (value + kGoldenGamma + (seed << 6) + (seed >> 2));
}

// FNV's 64-bit prime (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/).
inline constexpr std::uint64_t kFnvPrime = 1099511628211ull;
// strata's FNV-1a start value. It is FNV's published 64-bit offset basis 14695981039346656037 with the last
// digit dropped, as every strata hash has used since the beginning; any non-zero start value disperses as
// well, and changing it would reorder searches, so it stays.
inline constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;

// 64-bit FNV-1a of the bytes of `text`, starting from `h`.
constexpr std::uint64_t fnv1a(std::string_view text, std::uint64_t h = kFnvOffset) {
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * kFnvPrime;
  return h;
}

}  // namespace strata::util
