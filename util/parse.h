// Strict parsers for command-line and configuration values, declared once. Every parser consumes the whole
// text (no trailing junk: "1x", "8abc"), checks ranges and overflow, and on bad input throws InputError
// whose message starts with `field` (the option or YAML field, e.g. "--group") and says what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::util {

// Inclusive bounds of an integer option.
struct IntRange {
  std::int64_t min;
  std::int64_t max;
};

// A decimal integer with an optional leading '-', in [range.min, range.max]. "08" is 8; "+8", "0x8", "1e2",
// "8.0" and " 8" are rejected.
std::int64_t parse_int(std::string_view text, IntRange range, std::string_view field);
// The same rule without the message, for parsers that report errors in their own terms: nullopt when `text`
// is not such an integer.
std::optional<std::int64_t> try_parse_int(std::string_view text, IntRange range);

// A finite decimal number in [min, max] ("2", "1.5", "1e3"; not "inf", "nan", "2x").
double parse_real(std::string_view text, double min, double max, std::string_view field);

// Splits "a,b,c" at `sep`; items are trimmed of spaces and must not be empty ("a,,b", "a," are rejected).
std::vector<std::string> split_list(std::string_view text, char sep, std::string_view field);

// A `sep`-separated list of integers, each in `range` ("0,1,2"; "0,1x" is rejected).
std::vector<std::int64_t> parse_int_list(std::string_view text, IntRange range, std::string_view field,
                                         char sep = ',');

struct KeyValue {
  std::string key;
  std::string value;
  friend bool operator==(const KeyValue&, const KeyValue&) = default;
};
// "b=8,s=128": non-empty keys, each once, each followed by '=' (the value may be empty: "b=").
std::vector<KeyValue> parse_key_values(std::string_view text, std::string_view field, char sep = ',');

// A rank set "0-7,12,16-19" over ranks 0..count-1: single ranks and inclusive ranges LO-HI with LO <= HI,
// each rank at most once, in the order written. Empty text is an error (callers decide what "no set" means).
std::vector<int> parse_rank_set(std::string_view text, int count, std::string_view field);

// The lines of a text file, each without its terminator ("\n" or "\r\n") and with its 1-based number, for
// readers that name the line of a mistake (rule files, nccl-tests logs, NCCL's INFO output). A final line
// without "\n" counts; a text ending in "\n" has an empty last line.
struct TextLine {
  std::string_view text;
  int number;
};
std::vector<TextLine> split_lines(std::string_view text);

// Byte sizes. One rule everywhere a size is read: a whole number of bytes, written as a plain integer
// ("1048576", as nccl-tests' -b/-e take them) or a number with a unit. K, M, G, T (one letter, any case) and
// KiB, MiB, GiB, TiB are powers of 1024, as nccl-tests reads -b 1K / -e 8G; KB, MB, GB, TB are powers of 1000
// (the SI meaning the hardware YAML files use); B is bytes. A space may separate number and unit. Fractions
// are allowed when the result is a whole number of bytes ("1.5KiB" = 1536; "0.4B" is rejected).
inline constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 50;  // 1 PiB: above any memory or message size
inline constexpr std::string_view kSizeRule =
    "a whole number of bytes: a plain integer (1048576) or a number with a unit, where K, M, G, T (any case) "
    "and KiB, MiB, GiB, TiB are powers of 1024 (as in nccl-tests), KB, MB, GB, TB powers of 1000, B bytes; "
    "at most 1 PiB";
// A size in [min_bytes, kMaxBytes].
std::uint64_t parse_size(std::string_view text, std::string_view field, std::uint64_t min_bytes = 1);

// A size sweep like nccl-tests' -b/-e/-f: "MIN:MAX[:FACTOR]" (sizes MIN, MIN*FACTOR, ... up to MAX, each
// rounded to whole bytes; FACTOR defaults to 2 and must be > 1) or a single SIZE. MIN >= 1 B, MAX >= MIN,
// at most kMaxSizePoints sizes, and no two sizes may round to the same byte count.
inline constexpr std::size_t kMaxSizePoints = 1000;
std::vector<std::uint64_t> parse_size_range(std::string_view text, std::string_view field);

}  // namespace strata::util
