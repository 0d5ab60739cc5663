#include "search/reduce/program.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "util/parse.h"

namespace strata::search::reduce {

SynthesisHierarchy::SynthesisHierarchy(std::vector<SynthLevel> levels) {
  levels_.push_back(SynthLevel{"root", 1, -1});
  for (auto& l : levels) {
    if (l.cardinality < 1)
      throw std::invalid_argument(fmt::format("level '{}' has cardinality {}", l.name, l.cardinality));
    if (l.name.empty() || find(l.name) >= 0)
      throw std::invalid_argument(
          fmt::format("synthesis level names must be distinct and non-empty ('{}')", l.name));
    num_devices_ *= l.cardinality;
    levels_.push_back(std::move(l));
  }
}

int SynthesisHierarchy::find(std::string_view name) const {
  for (std::size_t i = 0; i < levels_.size(); ++i)
    if (levels_[i].name == name) return static_cast<int>(i);
  return -1;
}

std::vector<int> SynthesisHierarchy::cardinalities() const {
  std::vector<int> c;
  for (std::size_t i = 1; i < levels_.size(); ++i) c.push_back(levels_[i].cardinality);
  return c;
}

std::string SynthesisHierarchy::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < levels_.size(); ++i)
    s += fmt::format("{}{} {}", i ? ", " : "", levels_[i].name, levels_[i].cardinality);
  return s + "]";
}

std::string_view dsl_name(sim::CollectiveOp op) {
  switch (op) {
    case sim::CollectiveOp::kAllReduce:
      return "AllReduce";
    case sim::CollectiveOp::kReduceScatter:
      return "ReduceScatter";
    case sim::CollectiveOp::kAllGather:
      return "AllGather";
    case sim::CollectiveOp::kReduce:
      return "Reduce";
    case sim::CollectiveOp::kBroadcast:
      return "Broadcast";
    default:
      return "?";
  }
}

std::string to_string(const Instruction& in, const SynthesisHierarchy& h) {
  std::string form;
  switch (in.form.kind) {
    case FormKind::kInsideGroup:
      form = "InsideGroup";
      break;
    case FormKind::kParallel:
      form = fmt::format("Parallel({})", h.level(in.form.level).name);
      break;
    case FormKind::kMaster:
      form = fmt::format("Master({})", h.level(in.form.level).name);
      break;
  }
  return fmt::format("({}, {}, {})", h.level(in.slice).name, form, dsl_name(in.op));
}

std::string to_string(const Program& p, const SynthesisHierarchy& h) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i) s += (i ? "; " : "") + to_string(p[i], h);
  return s;
}

std::string shape_name(const Program& p) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i) s += fmt::format("{}{}", i ? "-" : "", dsl_name(p[i].op));
  return s;
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

class Parser {
 public:
  Parser(std::string_view text, const SynthesisHierarchy& h) : text_(text), h_(h) {}

  Program parse() {
    Program p;
    skip_space();
    while (pos_ < text_.size()) {
      p.push_back(instruction());
      skip_space();
      if (pos_ < text_.size() && (text_[pos_] == ';' || text_[pos_] == ',')) {
        ++pos_;
        skip_space();
      }
    }
    if (p.empty()) fail("expected at least one instruction '(slice, form, collective)'");
    return p;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(
        fmt::format("program text, character {}: {} (in \"{}\")", pos_ + 1, what, text_));
  }
  void skip_space() {
    while (pos_ < text_.size() && (std::isspace(static_cast<unsigned char>(text_[pos_])) != 0)) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }
  std::string word() {
    skip_space();
    const std::size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) != 0 ||
                                   text_[pos_] == '_' || text_[pos_] == '-'))
      ++pos_;
    if (start == pos_) fail("expected a name");
    return std::string(text_.substr(start, pos_ - start));
  }
  int level() {
    const std::size_t at = pos_;
    const std::string w = word();
    int l = h_.find(w);
    if (l < 0) l = static_cast<int>(util::try_parse_int(w, {0, h_.depth()}).value_or(-1));
    if (l < 0) {
      pos_ = at;
      std::string names;
      for (const auto& lv : h_.levels()) names += (names.empty() ? "" : ", ") + lv.name;
      fail(fmt::format("unknown level '{}' (levels: {})", w, names));
    }
    return l;
  }
  Instruction instruction() {
    Instruction in;
    expect('(');
    in.slice = level();
    expect(',');
    const std::size_t form_at = pos_;
    const std::string form = lower(word());
    if (form == "insidegroup") {
      in.form = Form{FormKind::kInsideGroup, 0};
    } else if (form == "parallel" || form == "master") {
      expect('(');
      const int l = level();
      expect(')');
      in.form = Form{form == "parallel" ? FormKind::kParallel : FormKind::kMaster, l};
      if (l >= in.slice) {
        pos_ = form_at;
        fail(fmt::format("the level of {} must be an ancestor of the slice '{}'", form,
                         h_.level(in.slice).name));
      }
    } else {
      pos_ = form_at;
      fail("expected a form: InsideGroup, Parallel(level) or Master(level)");
    }
    expect(',');
    const std::size_t op_at = pos_;
    const std::string op = lower(word());
    bool found = false;
    for (auto c : kDslCollectives)
      if (lower(dsl_name(c)) == op) {
        in.op = c;
        found = true;
      }
    if (!found) {
      pos_ = op_at;
      fail("expected a collective: AllReduce, ReduceScatter, AllGather, Reduce or Broadcast");
    }
    expect(')');
    return in;
  }

  std::string_view text_;
  const SynthesisHierarchy& h_;
  std::size_t pos_ = 0;
};

}  // namespace

Program parse_program(std::string_view text, const SynthesisHierarchy& h) {
  return Parser(text, h).parse();
}

Grouping groups_of(const SynthesisHierarchy& h, int slice, Form form) {
  const int depth = h.depth();
  if (slice < 0 || slice > depth)
    throw std::invalid_argument(fmt::format("slice level {} does not exist", slice));
  if (form.kind != FormKind::kInsideGroup && (form.level < 0 || form.level >= slice))
    throw std::invalid_argument(
        fmt::format("form level {} is not an ancestor of slice level {}", form.level, slice));
  // key: levels that stay fixed inside a group; members vary over the others. Position = levels below the
  // slice.
  std::vector<bool> fixed(static_cast<std::size_t>(depth + 1), false);
  int top = form.kind == FormKind::kInsideGroup ? slice : form.level;
  for (int l = 1; l <= depth; ++l) {
    if (form.kind == FormKind::kInsideGroup)
      fixed[static_cast<std::size_t>(l)] = l <= slice;
    else
      fixed[static_cast<std::size_t>(l)] = l <= top || l > slice;
  }
  std::map<std::vector<int>, std::vector<int>> by_key;
  std::vector<int> t(static_cast<std::size_t>(depth + 1), 0);
  for (int d = 0; d < h.num_devices(); ++d) {
    int rest = d;
    for (int l = depth; l >= 1; --l) {
      t[static_cast<std::size_t>(l)] = rest % h.cardinality(l);
      rest /= h.cardinality(l);
    }
    if (form.kind == FormKind::kMaster) {
      bool position_zero = true;
      for (int l = slice + 1; l <= depth; ++l)
        position_zero = position_zero && t[static_cast<std::size_t>(l)] == 0;
      if (!position_zero) continue;
    }
    std::vector<int> key;
    for (int l = 1; l <= depth; ++l)
      key.push_back(fixed[static_cast<std::size_t>(l)] ? t[static_cast<std::size_t>(l)] : -1);
    by_key[key].push_back(d);
  }
  Grouping out;
  for (auto& [k, members] : by_key) out.push_back(std::move(members));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() < b.front(); });
  return out;
}

std::vector<GroupingChoice> distinct_groupings(const SynthesisHierarchy& h) {
  std::vector<GroupingChoice> out;
  std::set<Grouping> seen;
  auto consider = [&](int slice, Form form) {
    Grouping g = groups_of(h, slice, form);
    if (std::all_of(g.begin(), g.end(), [](const auto& grp) { return grp.size() < 2; })) return;
    if (!seen.insert(g).second) return;
    out.push_back(GroupingChoice{slice, form, std::move(g)});
  };
  for (int slice = 0; slice <= h.depth(); ++slice) {
    consider(slice, Form{FormKind::kInsideGroup, 0});
    for (int anc = 0; anc < slice; ++anc) consider(slice, Form{FormKind::kParallel, anc});
    for (int anc = 0; anc < slice; ++anc) consider(slice, Form{FormKind::kMaster, anc});
  }
  return out;
}

}  // namespace strata::search::reduce
