#include <gtest/gtest.h>

#include "hw/units.h"

namespace strata::units {

TEST(Units, BandwidthUnitsAreExplicit) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth("450 GB/s"), 450e9);
  EXPECT_DOUBLE_EQ(*parse_bandwidth("400 Gb/s"), 50e9);  // bits: 400 Gb/s = 50 GB/s
  EXPECT_DOUBLE_EQ(*parse_bandwidth("1 GiB/s"), 1073741824.0);
  EXPECT_FALSE(parse_bandwidth("450"));     // unit-less is rejected
  EXPECT_FALSE(parse_bandwidth("0 GB/s"));  // must be positive
  EXPECT_FALSE(parse_bandwidth("-5 GB/s"));
  EXPECT_FALSE(parse_bandwidth("5 parsecs"));
}

TEST(Units, BytesDurationsFlops) {
  EXPECT_DOUBLE_EQ(*parse_bytes("8B"), 8);
  EXPECT_DOUBLE_EQ(*parse_bytes("8GiB"), 8.0 * (1ULL << 30));
  EXPECT_DOUBLE_EQ(*parse_bytes("1 GB"), 1e9);
  // One size rule with the command line (util::parse_size): plain integers are bytes (issue 10, defect 2),
  // K/M/G/T and KiB.. are powers of 1024, KB/MB/.. powers of 1000 as before, fractions of a byte are refused.
  EXPECT_DOUBLE_EQ(*parse_bytes("1024"), 1024);
  EXPECT_DOUBLE_EQ(*parse_bytes("1k"), 1024);
  EXPECT_DOUBLE_EQ(*parse_bytes("80 GB"), 80e9);
  EXPECT_DOUBLE_EQ(*parse_bytes("80 GiB"), 80.0 * (1ULL << 30));
  EXPECT_FALSE(parse_bytes("0.4B"));
  EXPECT_FALSE(parse_bytes("8 bytes"));
  EXPECT_DOUBLE_EQ(*parse_duration("0.6 us"), 0.6e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("500 ns"), 500e-9);
  EXPECT_DOUBLE_EQ(*parse_flops("989.4 TFLOPS"), 989.4e12);
}

}  // namespace strata::units
