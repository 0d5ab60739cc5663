#include "util/parse.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "util/error.h"

namespace strata::util {
namespace {

__extension__ typedef unsigned __int128 Wide;  // exact products of a size's digits and its unit

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Whole-text decimal integer with optional '-'; nullopt when malformed or outside int64.
std::optional<std::int64_t> read_int(std::string_view text) {
  if (text.empty() ||
      !(is_digit(text.front()) || (text.front() == '-' && text.size() > 1 && is_digit(text[1]))))
    return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return v;
}

[[noreturn]] void fail_size(std::string_view field, std::string_view text, std::string_view why) {
  throw InputError(fmt::format("{}: '{}' is not a size: {} (expected {})", field, text, why, kSizeRule));
}

// The multiplier of a size unit, or 0 when `unit` is not one.
std::uint64_t unit_factor(std::string_view unit) {
  if (unit.empty() || unit == "B") return 1;
  static constexpr std::string_view kPrefixes = "KMGT";
  const auto power = [](std::uint64_t base, std::size_t n) {
    std::uint64_t f = 1;
    for (std::size_t i = 0; i <= n; ++i) f *= base;
    return f;
  };
  const char upper =
      unit.front() >= 'a' && unit.front() <= 'z' ? static_cast<char>(unit.front() - 'a' + 'A') : unit.front();
  const auto p = kPrefixes.find(upper);
  if (p == std::string_view::npos) return 0;
  const std::string_view rest = unit.substr(1);
  if (rest.empty() || rest == "iB") return power(1024, p);
  if (rest == "B") return power(1000, p);
  return 0;
}

}  // namespace

std::optional<std::int64_t> try_parse_int(std::string_view text, IntRange range) {
  const auto v = read_int(text);
  if (!v || *v < range.min || *v > range.max) return std::nullopt;
  return v;
}

std::int64_t parse_int(std::string_view text, IntRange range, std::string_view field) {
  const auto v = try_parse_int(text, range);
  if (!v)
    throw InputError(
        fmt::format("{}: expected an integer in {}..{}, got '{}'", field, range.min, range.max, text));
  return *v;
}

double parse_real(std::string_view text, double min, double max, std::string_view field) {
  double v = 0;
  const bool starts_ok =
      !text.empty() && (is_digit(text.front()) || text.front() == '-' || text.front() == '.');
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (!starts_ok || ec != std::errc{} || end != text.data() + text.size() || !std::isfinite(v) || v < min ||
      v > max)
    throw InputError(fmt::format("{}: expected a number in {}..{}, got '{}'", field, min, max, text));
  return v;
}

std::vector<TextLine> split_lines(std::string_view text) {
  std::vector<TextLine> lines;
  int number = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, ++number});
    if (end == text.size()) break;
    pos = end + 1;
  }
  return lines;
}

std::vector<std::string> split_list(std::string_view text, char sep, std::string_view field) {
  std::vector<std::string> items;
  std::size_t pos = 0;
  while (true) {
    const auto next = text.find(sep, pos);
    const auto item =
        trim(text.substr(pos, next == std::string_view::npos ? std::string_view::npos : next - pos));
    if (item.empty())
      throw InputError(
          fmt::format("{}: empty item in '{}' (expected items separated by '{}')", field, text, sep));
    items.emplace_back(item);
    if (next == std::string_view::npos) return items;
    pos = next + 1;
  }
}

std::vector<std::int64_t> parse_int_list(std::string_view text, IntRange range, std::string_view field,
                                         char sep) {
  std::vector<std::int64_t> out;
  for (const auto& item : split_list(text, sep, field)) {
    const auto v = read_int(item);
    if (!v || *v < range.min || *v > range.max)
      throw InputError(fmt::format("{}: expected integers in {}..{} separated by '{}', got '{}' in '{}'",
                                   field, range.min, range.max, sep, item, text));
    out.push_back(*v);
  }
  return out;
}

std::vector<KeyValue> parse_key_values(std::string_view text, std::string_view field, char sep) {
  std::vector<KeyValue> out;
  std::set<std::string> seen;
  for (const auto& item : split_list(text, sep, field)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(
          fmt::format("{}: expected KEY=VALUE items separated by '{}', got '{}'", field, sep, item));
    KeyValue kv{std::string(trim(std::string_view(item).substr(0, eq))),
                std::string(trim(std::string_view(item).substr(eq + 1)))};
    if (!seen.insert(kv.key).second) throw InputError(fmt::format("{}: key '{}' given twice", field, kv.key));
    out.push_back(std::move(kv));
  }
  return out;
}

std::vector<int> parse_rank_set(std::string_view text, int count, std::string_view field) {
  const auto expected = [&](std::string_view why) {
    return InputError(
        fmt::format("{}: {} (expected ranks in 0..{} like 0-7,12,16-19, each once)", field, why, count - 1));
  };
  if (trim(text).empty()) throw expected("no ranks given");
  std::vector<int> out;
  std::vector<bool> used(static_cast<std::size_t>(count > 0 ? count : 0), false);
  const auto rank = [&](std::string_view s, std::string_view item) {
    const auto v = read_int(s);
    if (!v || *v < 0) throw expected(fmt::format("'{}' is not a rank or range", item));
    if (*v >= count) throw expected(fmt::format("rank {} is outside 0..{}", *v, count - 1));
    return static_cast<int>(*v);
  };
  for (const auto& item : split_list(text, ',', field)) {
    const auto dash = item.find('-', 1);
    int lo = 0, hi = 0;
    if (dash == std::string::npos) {
      lo = hi = rank(item, item);
    } else {
      lo = rank(std::string_view(item).substr(0, dash), item);
      hi = rank(std::string_view(item).substr(dash + 1), item);
      if (lo > hi) throw expected(fmt::format("range '{}' runs backwards (write {}-{})", item, hi, lo));
    }
    for (int r = lo; r <= hi; ++r) {
      if (used[static_cast<std::size_t>(r)]) throw expected(fmt::format("rank {} is listed twice", r));
      used[static_cast<std::size_t>(r)] = true;
      out.push_back(r);
    }
  }
  return out;
}

std::uint64_t parse_size(std::string_view text, std::string_view field, std::uint64_t min_bytes) {
  const std::string_view s = trim(text);
  std::size_t i = 0;
  Wide whole = 0, frac = 0, scale = 1;
  while (i < s.size() && is_digit(s[i])) {
    whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
    if (whole > kMaxBytes) fail_size(field, text, fmt::format("larger than the limit of {} B", kMaxBytes));
    ++i;
  }
  if (i == 0) fail_size(field, text, "it does not start with a digit");
  if (i < s.size() && s[i] == '.') {
    ++i;
    const std::size_t first = i;
    while (i < s.size() && is_digit(s[i])) {
      if (i - first >= 18) fail_size(field, text, "more than 18 decimal places");
      frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
      scale *= 10;
      ++i;
    }
    if (i == first) fail_size(field, text, "no digits after '.'");
  }
  const std::string_view unit = trim(s.substr(i));
  const std::uint64_t factor = unit_factor(unit);
  if (factor == 0) fail_size(field, text, fmt::format("unknown unit '{}'", unit));
  const Wide scaled_frac = frac * factor;
  if (scaled_frac % scale != 0) fail_size(field, text, "not a whole number of bytes");
  const Wide bytes = whole * factor + scaled_frac / scale;
  if (bytes > kMaxBytes) fail_size(field, text, fmt::format("larger than the limit of {} B", kMaxBytes));
  if (bytes < min_bytes) fail_size(field, text, fmt::format("smaller than the minimum of {} B", min_bytes));
  return static_cast<std::uint64_t>(bytes);
}

std::vector<std::uint64_t> parse_size_range(std::string_view text, std::string_view field) {
  const auto parts = split_list(text, ':', field);
  if (parts.size() > 3)
    throw InputError(
        fmt::format("{}: too many ':' in '{}' (expected SIZE or MIN:MAX[:FACTOR])", field, text));
  const std::uint64_t lo = parse_size(parts[0], field);
  if (parts.size() == 1) return {lo};
  const std::uint64_t hi = parse_size(parts[1], field);
  if (hi < lo)
    throw InputError(fmt::format("{}: maximum {} is below minimum {} in '{}' (expected MIN:MAX[:FACTOR])",
                                 field, parts[1], parts[0], text));
  const double factor = parts.size() == 3 ? parse_real(parts[2], 0, 1e300, field) : 2.0;
  if (!(factor > 1))
    throw InputError(fmt::format("{}: factor {} in '{}' must be > 1 (each size is the previous times FACTOR)",
                                 field, parts[2], text));
  // The number of sizes is 1 + floor(log(hi/lo) / log(factor)); checked before the loop so that a factor
  // just above 1 is refused rather than enumerated.
  const double points = 1 + std::floor(std::log(static_cast<double>(hi) / static_cast<double>(lo)) /
                                       std::log(factor) * (1 + 1e-12));
  if (points > static_cast<double>(kMaxSizePoints))
    throw InputError(fmt::format(
        "{}: '{}' gives {:.0f} sizes, more than the limit of {} (use a larger factor, at least {:.4g})",
        field, text, points, kMaxSizePoints,
        std::pow(static_cast<double>(hi) / static_cast<double>(lo), 1.0 / (kMaxSizePoints - 1))));
  std::vector<std::uint64_t> sizes;
  for (double s = static_cast<double>(lo); s <= static_cast<double>(hi) * (1 + 1e-12); s *= factor) {
    const auto b = static_cast<std::uint64_t>(std::round(s));
    if (!sizes.empty() && sizes.back() == b)
      throw InputError(fmt::format("{}: factor {} in '{}' is too small: two sizes round to {} B", field,
                                   parts[2], text, b));
    sizes.push_back(b);
  }
  return sizes;
}

}  // namespace strata::util
