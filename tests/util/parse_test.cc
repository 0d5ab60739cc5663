#include "util/parse.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace strata::util {
namespace {

// The error message of `f`, or "" when it does not throw InputError.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// Lines as editors number them: "\r\n" ends a line like "\n"; a final line without "\n" counts, and a text
// ending in "\n" has an empty last line.
TEST(SplitLines, NumbersEveryLineFromOneWithoutItsTerminator) {
  const auto lines = split_lines("a\r\nb b\n\nc");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "a");
  EXPECT_EQ(lines[1].text, "b b");
  EXPECT_EQ(lines[2].text, "");
  EXPECT_EQ(lines[3].text, "c");
  EXPECT_EQ(lines[3].number, 4);
  const auto ended = split_lines("x\n");
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[1].text, "");
  EXPECT_EQ(ended[1].number, 2);
  EXPECT_EQ(split_lines("").size(), 1u);
}

TEST(ParseInt, AcceptsWholeDecimalIntegersInRange) {
  EXPECT_EQ(parse_int("8", {1, 64}, "--nodes"), 8);
  EXPECT_EQ(parse_int("-3", {-5, 5}, "x"), -3);
  EXPECT_EQ(parse_int("08", {0, 10}, "x"), 8);
  EXPECT_EQ(parse_int("9223372036854775807", {0, INT64_MAX}, "x"), INT64_MAX);
}

// Defect (issue 10): `--nodes 0` printed a 300-digit range; the message now names the range.
TEST(ParseInt, RejectsWithTheAllowedRange) {
  const auto msg = error_of([] { parse_int("0", {1, 1024}, "--nodes"); });
  EXPECT_EQ(msg, "--nodes: expected an integer in 1..1024, got '0'");
  for (std::string_view bad :
       {"", " 8", "8 ", "+8", "0x8", "1e2", "8.0", "8abc", "-", "1025", "-1", "99999999999999999999"})
    EXPECT_FALSE(error_of([&] { parse_int(bad, {0, 1024}, "--n"); }).empty()) << "'" << bad << "'";
}

TEST(ParseReal, FiniteWholeText) {
  EXPECT_DOUBLE_EQ(parse_real("1.5", 1, 10, "f"), 1.5);
  EXPECT_DOUBLE_EQ(parse_real("1e3", 0, 1e4, "f"), 1000.0);
  for (std::string_view bad : {"inf", "nan", "2x", "", "0.5", "+2"})
    EXPECT_FALSE(error_of([&] { parse_real(bad, 1, 10, "f"); }).empty()) << bad;
}

TEST(ParseList, SplitsAndRejectsEmptyItems) {
  EXPECT_EQ(split_list("a, b,c", ',', "x"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(error_of([] { split_list("a,,b", ',', "x"); }).empty());
  EXPECT_FALSE(error_of([] { split_list("a,", ',', "x"); }).empty());
  EXPECT_FALSE(error_of([] { split_list("", ',', "x"); }).empty());
}

TEST(ParseList, IntegerLists) {
  EXPECT_EQ(parse_int_list("0+2", {0, 3}, "--joint", '+'), (std::vector<std::int64_t>{0, 2}));
  const auto msg = error_of([] { parse_int_list("0,1x,2", {0, 7}, "--axes"); });
  EXPECT_TRUE(contains(msg, "--axes") && contains(msg, "'1x'") && contains(msg, "0..7")) << msg;
}

// Defect (issue 10): `--dim b=8abc` was accepted (the key=value split is here; the value goes to parse_int).
TEST(ParseKeyValues, SplitsPairsAndRejectsMalformedOnes) {
  EXPECT_EQ(parse_key_values("b=8,s=128", "--dim"), (std::vector<KeyValue>{{"b", "8"}, {"s", "128"}}));
  EXPECT_FALSE(error_of([] { parse_key_values("b", "--dim"); }).empty());
  EXPECT_FALSE(error_of([] { parse_key_values("=8", "--dim"); }).empty());
  EXPECT_TRUE(contains(error_of([] { parse_key_values("b=1,b=2", "--dim"); }), "twice"));
  const auto kv = parse_key_values("b=8abc", "--dim");
  EXPECT_FALSE(error_of([&] { parse_int(kv[0].value, {1, INT32_MAX}, "--dim b"); }).empty());
}

TEST(ParseRankSet, RangesAndSinglesInOrder) {
  EXPECT_EQ(parse_rank_set("0-3,12,16-17", 32, "--group"), (std::vector<int>{0, 1, 2, 3, 12, 16, 17}));
  EXPECT_EQ(parse_rank_set("7,0", 8, "--group"), (std::vector<int>{7, 0}));
  EXPECT_EQ(parse_rank_set("5-5", 8, "--group"), (std::vector<int>{5}));
}

// Defect (issue 10): `--group 0,1x,2y` was read as {0,1,2}.
TEST(ParseRankSet, RejectsMalformedBackwardsOutOfRangeAndDuplicateRanks) {
  EXPECT_TRUE(contains(error_of([] { parse_rank_set("0,1x,2y", 8, "--group"); }), "'1x'"));
  EXPECT_TRUE(contains(error_of([] { parse_rank_set("5-3", 8, "--group"); }), "backwards"));
  EXPECT_TRUE(contains(error_of([] { parse_rank_set("8", 8, "--group"); }), "rank 8 is outside 0..7"));
  EXPECT_TRUE(contains(error_of([] { parse_rank_set("0-3,2", 8, "--group"); }), "rank 2 is listed twice"));
  for (std::string_view bad : {"0x1", "1e2", "", "-1", "0--3", "1-", "-", "0,,1", "a"})
    EXPECT_FALSE(error_of([&] { parse_rank_set(bad, 8, "--group"); }).empty()) << "'" << bad << "'";
  const auto msg = error_of([] { parse_rank_set("0x1", 8, "--group"); });
  EXPECT_TRUE(contains(msg, "--group") && contains(msg, "0-7,12,16-19")) << msg;
}

TEST(ParseSize, PlainBytesAndUnits) {
  EXPECT_EQ(parse_size("1048576", "--sizes"), 1048576u);  // nccl-tests users type plain bytes
  EXPECT_EQ(parse_size("8B", "s"), 8u);
  EXPECT_EQ(parse_size("1k", "s"), 1024u);
  EXPECT_EQ(parse_size("1K", "s"), 1024u);
  EXPECT_EQ(parse_size("1M", "s"), 1048576u);
  EXPECT_EQ(parse_size("1g", "s"), 1073741824u);
  EXPECT_EQ(parse_size("2T", "s"), 2ull << 40);
  EXPECT_EQ(parse_size("64 KiB", "s"), 65536u);
  EXPECT_EQ(parse_size("1GiB", "s"), 1073741824u);
  EXPECT_EQ(parse_size("1TiB", "s"), 1ull << 40);
  EXPECT_EQ(parse_size("1KB", "s"), 1000u);
  EXPECT_EQ(parse_size("1kB", "s"), 1000u);
  EXPECT_EQ(parse_size("80 GB", "s"), 80'000'000'000u);
  EXPECT_EQ(parse_size("1.5KiB", "s"), 1536u);
  EXPECT_EQ(parse_size("1.1KB", "s"),
            1100u);  // exact decimal arithmetic (1.1 * 1000.0 is not 1100 in double)
  EXPECT_EQ(parse_size("0", "s", 0), 0u);
  EXPECT_EQ(parse_size("1024TiB", "s"), kMaxBytes);  // 2^50, the limit itself
}

TEST(ParseSize, RejectsFractionsJunkAndHugeValuesWithTheRule) {
  const auto msg = error_of([] { parse_size("0.4B", "--sizes"); });
  EXPECT_TRUE(contains(msg, "--sizes") && contains(msg, "whole number of bytes") &&
              contains(msg, "powers of 1024"))
      << msg;
  for (std::string_view bad : {"0.4B", "1.0001KiB", "8abc", "8b", "8kb", "8Kib", "1e3", "inf", "nan", "-8",
                               "", "B", ".5K", "1.", "8 B B", "1025TiB", "99999999999999999999999", "0"})
    EXPECT_FALSE(error_of([&] { parse_size(bad, "s"); }).empty()) << "'" << bad << "'";
  EXPECT_TRUE(contains(error_of([] { parse_size("2048TiB", "s"); }), "limit"));
}

// Defect 2 (issue 10): plain bytes and 1k were rejected.
TEST(ParseSizeRange, NcclTestsStyleSweeps) {
  EXPECT_EQ(parse_size_range("1048576:1073741824", "--sizes").size(), 11u);  // 2^20..2^30, doubling
  EXPECT_EQ(parse_size_range("1k:4k", "--sizes"), (std::vector<std::uint64_t>{1024, 2048, 4096}));
  EXPECT_EQ(parse_size_range("8B:8GiB", "--sizes").size(), 31u);  // 2^3..2^33
  EXPECT_EQ(parse_size_range("1MiB:1GiB:4", "--sizes"),
            (std::vector<std::uint64_t>{1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30}));
  EXPECT_EQ(parse_size_range("100:300:1.5", "--sizes"), (std::vector<std::uint64_t>{100, 150, 225}));
  EXPECT_EQ(parse_size_range("64KiB", "--sizes"), (std::vector<std::uint64_t>{65536}));
  EXPECT_EQ(parse_size_range("3:5", "--sizes"), (std::vector<std::uint64_t>{3}));  // 6 > 5
}

TEST(ParseSizeRange, RejectsBadFactorsTooManyPointsAndBackwardsRanges) {
  EXPECT_TRUE(contains(error_of([] { parse_size_range("8B:8GiB:1", "--sizes"); }), "must be > 1"));
  EXPECT_TRUE(contains(error_of([] { parse_size_range("8B:8GiB:0.5", "--sizes"); }), "must be > 1"));
  const auto many = error_of([] { parse_size_range("8B:8GiB:1.0000001", "--sizes"); });
  EXPECT_TRUE(contains(many, "limit of 1000")) << many;
  EXPECT_TRUE(contains(error_of([] { parse_size_range("1GiB:1MiB", "--sizes"); }), "below minimum"));
  EXPECT_TRUE(contains(error_of([] { parse_size_range("8:16:1.01", "--sizes"); }), "round to 8 B"));
  for (std::string_view bad : {"1:2:3:4", "1::2", ":8", "8:", "0:8", "8:16:x", "8:16:inf", "8:16:nan"})
    EXPECT_FALSE(error_of([&] { parse_size_range(bad, "--sizes"); }).empty()) << "'" << bad << "'";
}

}  // namespace
}  // namespace strata::util
