#include "search/subst/term.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/config_error.h"

namespace strata::search::subst {

Term Term::variable(std::string name) {
  Term t;
  t.is_variable_ = true;
  t.name_ = std::move(name);
  return t;
}

Term Term::apply(Op op, std::vector<Param> params, std::vector<Term> args) {
  const OpInfo& info = op_info(op);
  if (params.size() != info.params.size() || static_cast<int>(args.size()) != info.tensor_args)
    throw std::invalid_argument(fmt::format("{} takes {} parameters and {} tensor arguments, got {} and {}",
                                            info.name, info.params.size(), info.tensor_args, params.size(),
                                            args.size()));
  Term t;
  t.op_ = op;
  t.params_ = std::move(params);
  t.args_ = std::move(args);
  return t;
}

bool operator==(const Term& a, const Term& b) {
  if (a.is_variable_ != b.is_variable_) return false;
  if (a.is_variable_) return a.name_ == b.name_;
  return a.op_ == b.op_ && a.params_ == b.params_ && a.args_ == b.args_;
}

void append_term(std::string& out, const Term& term) {
  if (term.is_variable()) {
    out += term.name();
    return;
  }
  out += op_info(term.op()).name;
  if (term.params().empty() && term.args().empty()) return;
  out += '(';
  bool first = true;
  for (const Param& p : term.params()) {
    if (!first) out += ',';
    first = false;
    out += p.is_var() ? p.var : std::to_string(p.value);
  }
  for (const Term& a : term.args()) {
    if (!first) out += ',';
    first = false;
    append_term(out, a);
  }
  out += ')';
}

std::string to_string(const Term& term) {
  std::string out;
  append_term(out, term);
  return out;
}

int op_count(const Term& term) {
  if (term.is_variable()) return 0;
  int n = 1;
  for (const Term& a : term.args()) n += op_count(a);
  return n;
}

void collect_variables(const Term& term, std::vector<std::string>& tensors,
                       std::vector<std::string>* params) {
  if (term.is_variable()) {
    if (std::find(tensors.begin(), tensors.end(), term.name()) == tensors.end())
      tensors.push_back(term.name());
    return;
  }
  if (params != nullptr)
    for (const Param& p : term.params())
      if (p.is_var() && std::find(params->begin(), params->end(), p.var) == params->end())
        params->push_back(p.var);
  for (const Term& a : term.args()) collect_variables(a, tensors, params);
}

namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

class TermParser {
 public:
  TermParser(std::string_view text, std::size_t& pos, const TextOrigin& origin, bool allow_param_vars)
      : text_(text), pos_(pos), origin_(origin), allow_param_vars_(allow_param_vars) {}

  // Terms of real rules are a few levels deep; the limit keeps a hostile file (20,000 nested operators) from
  // overflowing the stack here and in every recursive walk over the term afterwards.
  static constexpr int kMaxDepth = 256;

  Term term() {
    skip_space();
    const std::size_t start = pos_;
    struct DepthGuard {
      int& depth;
      ~DepthGuard() { --depth; }
    } guard{++depth_};
    if (depth_ > kMaxDepth)
      throw error(start,
                  fmt::format("terms nested more than {} operators deep are not supported", kMaxDepth));
    const std::string_view id = identifier();
    if (id.empty())
      throw error(start, fmt::format("expected a term (operator or variable name), got {}", here()));
    const auto op = find_op(id);
    if (!op) {
      skip_space();
      if (peek() == '(')
        throw error(start, fmt::format("unknown operator '{}' (known: {})", id, known_ops()));
      return Term::variable(std::string(id));
    }
    const OpInfo& info = op_info(*op);
    const std::size_t expected = info.params.size() + static_cast<std::size_t>(info.tensor_args);
    std::vector<Param> params;
    std::vector<Term> args;
    skip_space();
    if (peek() != '(') {
      if (expected == 0) return Term::apply(*op);
      throw error(pos_, fmt::format("expected '(' after '{}' ({})", id, signature(info)));
    }
    ++pos_;
    skip_space();
    if (expected == 0) {
      if (peek() != ')') throw error(pos_, fmt::format("expected ')': {} takes no arguments", id));
      ++pos_;
      return Term::apply(*op);
    }
    for (std::size_t i = 0; i < expected; ++i) {
      if (i > 0) {
        skip_space();
        if (peek() != ',')
          throw error(pos_, fmt::format("expected ',' before argument {} of {} ({}), got {}", i + 1, id,
                                        signature(info), here()));
        ++pos_;
      }
      if (i < info.params.size())
        params.push_back(param(info, i));
      else
        args.push_back(term());
    }
    skip_space();
    if (peek() != ')')
      throw error(pos_, fmt::format("expected ')' after the {} arguments of {} ({}), got {}", expected, id,
                                    signature(info), here()));
    ++pos_;
    return Term::apply(*op, std::move(params), std::move(args));
  }

 private:
  Param param(const OpInfo& info, std::size_t index) {
    skip_space();
    const std::size_t start = pos_;
    const ParamSpec& spec = info.params[index];
    if (is_ident_start(peek())) {
      const std::string_view id = identifier();
      if (!allow_param_vars_)
        throw error(start, fmt::format("expected an integer for parameter '{}' ({}) of {}, got '{}'",
                                       spec.name, param_kind_name(spec.kind), info.name, id));
      return Param{0, std::string(id)};
    }
    std::size_t end = pos_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end])) != 0) ++end;
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + end, value);
    if (ec != std::errc() || ptr == text_.data() + pos_)
      throw error(start, fmt::format("expected an integer for parameter '{}' ({}) of {}, got {}", spec.name,
                                     param_kind_name(spec.kind), info.name, here()));
    pos_ = end;
    return Param{value, {}};
  }

  std::string_view identifier() {
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) return {};
    const std::size_t start = pos_;
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  [[nodiscard]] char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  [[nodiscard]] std::string here() const {
    if (pos_ >= text_.size()) return "end of line";
    std::size_t end = pos_ + 1;
    if (is_ident_char(text_[pos_]))
      while (end < text_.size() && is_ident_char(text_[end])) ++end;
    return fmt::format("'{}'", text_.substr(pos_, end - pos_));
  }

  static std::string signature(const OpInfo& info) {
    std::string s = fmt::format("{}(", info.name);
    bool first = true;
    for (const ParamSpec& p : info.params) {
      s += first ? "" : ",";
      s += p.name;
      first = false;
    }
    for (int i = 0; i < info.tensor_args; ++i) {
      s += first ? "" : ",";
      s += fmt::format("t{}", i + 1);
      first = false;
    }
    return s + ")";
  }

  static std::string known_ops() {
    std::string s;
    for (const OpInfo& info : all_ops()) s += (s.empty() ? "" : " ") + std::string(info.name);
    return s;
  }

  [[nodiscard]] ConfigError error(std::size_t at, std::string_view message) const {
    return ConfigError(fmt::format("{}:{}:{}: {}", origin_.file, origin_.line,
                                   origin_.column + static_cast<int>(at), message));
  }

  std::string_view text_;
  std::size_t& pos_;
  const TextOrigin& origin_;
  bool allow_param_vars_;
  int depth_ = 0;
};

}  // namespace

Term parse_term(std::string_view text, std::size_t& pos, const TextOrigin& origin, bool allow_param_vars) {
  return TermParser(text, pos, origin, allow_param_vars).term();
}

bool is_valid_variable_name(std::string_view name) {
  if (name.empty() || !is_ident_start(name.front())) return false;
  if (!std::all_of(name.begin(), name.end(), is_ident_char)) return false;
  return !find_op(name).has_value();
}

}  // namespace strata::search::subst
