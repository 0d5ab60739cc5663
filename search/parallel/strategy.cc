#include "search/parallel/strategy.h"

#include <array>
#include <utility>

#include <fmt/format.h>

namespace strata::search::parallel {
namespace {

constexpr std::array<std::pair<PipelineSchedule, std::string_view>, 3> kSchedules = {{
    {PipelineSchedule::kGpipe, "gpipe"},
    {PipelineSchedule::kOneFOneB, "1f1b"},
    {PipelineSchedule::kInterleaved, "interleaved"},
}};
constexpr std::array<std::pair<Recompute, std::string_view>, 3> kRecomputes = {{
    {Recompute::kNone, "none"},
    {Recompute::kSelective, "selective"},
    {Recompute::kFull, "full"},
}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [value, name] : table)
    if (value == e) return name;
  return "?";
}
template <class E, std::size_t N>
std::optional<E> parse_of(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [value, name] : table)
    if (name == s) return value;
  return std::nullopt;
}

}  // namespace

std::string_view schedule_name(PipelineSchedule s) {
  return name_of(kSchedules, s);
}
std::optional<PipelineSchedule> parse_schedule(std::string_view name) {
  return parse_of(kSchedules, name);
}
std::string_view recompute_name(Recompute r) {
  return name_of(kRecomputes, r);
}
std::optional<Recompute> parse_recompute(std::string_view name) {
  return parse_of(kRecomputes, name);
}

std::string LlmStrategy::describe() const {
  return fmt::format("tp{} pp{} dp{} cp{} ep{}{} mb{} gb{} {} v{} recompute={} zero{}", tp, pp, dp, cp, ep,
                     sequence_parallel ? " sp" : "", micro_batch, global_batch, schedule_name(schedule),
                     virtual_stages, recompute_name(recompute), zero);
}

}  // namespace strata::search::parallel
