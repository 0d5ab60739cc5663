#include "search/subst/verifier.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <z3++.h>

#include "util/timer.h"

namespace strata::search::subst {

std::string_view to_string(VerifyStatus status) {
  switch (status) {
    case VerifyStatus::kProved:
      return "proved";
    case VerifyStatus::kFalse:
      return "false";
    case VerifyStatus::kNotProved:
      return "not-proved";
    case VerifyStatus::kInvalid:
      return "invalid";
  }
  return "?";
}

namespace {

// The Z3 vocabulary of one context: the tensor sort and one function per operator symbol.
class Encoding {
 public:
  explicit Encoding(z3::context& ctx) : ctx_(ctx), tensor_(ctx.uninterpreted_sort("T")) {
    for (const OpInfo& info : all_ops()) {
      z3::sort_vector domain(ctx_);
      for (std::size_t i = 0; i < info.params.size(); ++i) domain.push_back(ctx_.int_sort());
      for (int i = 0; i < info.tensor_args; ++i) domain.push_back(tensor_);
      functions_.push_back(ctx_.function(std::string(info.name).c_str(), domain, tensor_));
    }
  }

  [[nodiscard]] const z3::sort& tensor() const { return tensor_; }

  // Variables map tensor and parameter variable names to Z3 constants.
  using Variables = std::map<std::string, z3::expr, std::less<>>;

  z3::expr term(const Term& t, const Variables& vars) const {
    if (t.is_variable()) return vars.at(t.name());
    z3::expr_vector args(ctx_);
    for (const Param& p : t.params())
      args.push_back(p.is_var() ? vars.at(p.var) : ctx_.int_val(static_cast<int64_t>(p.value)));
    for (const Term& a : t.args()) args.push_back(term(a, vars));
    return functions_[static_cast<std::size_t>(t.op())](args);
  }

  // ∀ vars. (params in their domains) → lhs = rhs
  z3::expr axiom(const Axiom& ax) const {
    Variables vars;
    z3::expr_vector bound(ctx_);
    for (const std::string& name : ax.tensor_variables) {
      z3::expr c = ctx_.constant(name.c_str(), tensor_);
      vars.emplace(name, c);
      bound.push_back(c);
    }
    z3::expr guard = ctx_.bool_val(true);
    for (const ParamVariable& p : ax.param_variables) {
      z3::expr c = ctx_.int_const(p.name.c_str());
      vars.emplace(p.name, c);
      bound.push_back(c);
      z3::expr_vector alternatives(ctx_);
      for (std::int64_t v : p.domain) alternatives.push_back(c == ctx_.int_val(static_cast<int64_t>(v)));
      guard = guard && z3::mk_or(alternatives);
    }
    z3::expr body = term(ax.lhs, vars) == term(ax.rhs, vars);
    if (!ax.param_variables.empty()) body = z3::implies(guard, body);
    return bound.empty() ? body : z3::forall(bound, body);
  }

 private:
  z3::context& ctx_;
  z3::sort tensor_;
  std::vector<z3::func_decl> functions_;
};

void configure(z3::solver& solver, z3::context& ctx, const VerifyOptions& options) {
  z3::params params(ctx);
  params.set("timeout", options.timeout_ms);
  for (const auto& [name, value] : options.z3_params) {
    if (value == "true" || value == "false")
      params.set(name.c_str(), value == "true");
    else if (!value.empty() &&
             std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      params.set(name.c_str(), static_cast<unsigned>(std::stoul(value)));
    else
      params.set(name.c_str(), value.c_str());
  }
  solver.set(params);
}

// Rejects unknown or mistyped Z3 parameters before any rule is attempted.
void check_options(const VerifyOptions& options) {
  try {
    z3::context ctx;
    z3::solver solver(ctx);
    configure(solver, ctx, options);
    (void)solver.check();  // Z3 validates parameter names only when the solver runs
  } catch (const z3::exception& e) {
    // Z3 appends the list of all legal parameters; its first line names the problem.
    const std::string_view msg = e.msg();
    throw std::invalid_argument(
        fmt::format("--z3: {} (see `z3 -p` for Z3's solver parameters)", msg.substr(0, msg.find('\n'))));
  }
}

// The first parameter of `t` outside its verified domain, described; nullopt when all are inside.
std::optional<std::string> out_of_domain(const Term& t) {
  if (t.is_variable()) return std::nullopt;
  const OpInfo& info = op_info(t.op());
  for (std::size_t i = 0; i < t.params().size(); ++i)
    if (!in_domain(info.params[i].kind, t.params()[i].value))
      return fmt::format("{} parameter {}={} outside the verified {} domain", info.name, info.params[i].name,
                         t.params()[i].value, param_kind_name(info.params[i].kind));
  for (const Term& a : t.args())
    if (auto r = out_of_domain(a)) return r;
  return std::nullopt;
}

EquationResult prove(const Equation& eq, const Rule& rule, const z3::expr_vector& axioms, z3::context& ctx,
                     const Encoding& enc, const VerifyOptions& options) {
  const util::Stopwatch clock;
  EquationResult result;
  auto finish = [&](VerifyStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
    result.seconds = clock.seconds();
    return result;
  };
  for (const Term* side : {&eq.lhs, &eq.rhs})
    if (auto why = out_of_domain(*side)) return finish(VerifyStatus::kInvalid, *why);
  try {
    Encoding::Variables vars;
    for (const RuleInput& in : rule.inputs)
      vars.emplace(in.name, ctx.constant(in.name.c_str(), enc.tensor()));
    z3::solver solver(ctx);
    configure(solver, ctx, options);
    solver.add(axioms);
    solver.add(enc.term(eq.lhs, vars) != enc.term(eq.rhs, vars));
    const z3::check_result answer = solver.check();
    const std::string why = answer == z3::unknown ? solver.reason_unknown() : "";
    switch (answer) {
      case z3::unsat:
        return finish(VerifyStatus::kProved, "");
      case z3::sat:
        // A model of the axioms, not of real tensors: the rule is not entailed, which says nothing about its
        // truth (evaluation found no counter-example before Z3 ran).
        return finish(VerifyStatus::kNotProved,
                      "not entailed (Z3 found a model of the axioms where it fails)");
      case z3::unknown:
        return finish(VerifyStatus::kNotProved, why);
    }
  } catch (const z3::exception& e) {
    return finish(VerifyStatus::kNotProved, fmt::format("z3 error: {}", e.msg()));
  }
  return finish(VerifyStatus::kNotProved, "unreachable");
}

// A Z3 context with the axioms encoded once for all equations of a rule. Each equation gets a fresh solver:
// reusing one solver with push/pop is several times cheaper per query but changes Z3's search (incremental
// mode) enough to lose proofs.
class Prover {
 public:
  Prover(std::span<const Axiom> axioms, const VerifyOptions& options)
      : options_(options), enc_(ctx_), axioms_(ctx_) {
    for (const Axiom& ax : axioms) axioms_.push_back(enc_.axiom(ax));
  }
  RuleResult verify(const Rule& rule);

 private:
  const VerifyOptions& options_;
  z3::context ctx_;
  Encoding enc_;
  z3::expr_vector axioms_;
};

RuleResult Prover::verify(const Rule& rule) {
  RuleResult result;
  result.status = VerifyStatus::kProved;
  for (std::size_t i = 0; i < rule.outputs.size(); ++i) {
    EquationResult eq = prove(rule.outputs[i], rule, axioms_, ctx_, enc_, options_);
    result.seconds += eq.seconds;
    if (eq.status != VerifyStatus::kProved && result.status == VerifyStatus::kProved) {
      result.status = eq.status;
      result.reason = rule.outputs.size() > 1 ? fmt::format("output {}: {}", i, eq.reason) : eq.reason;
    }
    result.equations.push_back(std::move(eq));
  }
  return result;
}

// The verdict of the evaluation checks, when they reject the rule.
std::optional<RuleResult> check_by_evaluation(const Rule& rule, const VerifyOptions& options) {
  const util::Stopwatch clock;
  auto reject = [&](VerifyStatus status, std::string reason) {
    RuleResult r;
    r.status = status;
    r.reason = std::move(reason);
    r.seconds = clock.seconds();
    return r;
  };
  if (options.check_shapes)
    if (auto why = rule_shape_error(rule)) return reject(VerifyStatus::kInvalid, "ill-typed: " + *why);
  if (options.refute_by_evaluation)
    if (auto why = refute_by_evaluation(rule, options.refute))
      return reject(why->false_over_reals ? VerifyStatus::kFalse : VerifyStatus::kNotProved,
                    "evaluation: " + why->reason);
  return std::nullopt;
}

// Operators outside TASO's named vocabulary that occur in `t`.
void collect_extra_ops(const Term& t, std::vector<Op>& out) {
  if (t.is_variable()) return;
  if (static_cast<int>(t.op()) >= kNumNamedOps && std::find(out.begin(), out.end(), t.op()) == out.end())
    out.push_back(t.op());
  for (const Term& a : t.args()) collect_extra_ops(a, out);
}

// The operators outside TASO's vocabulary each axiom mentions, computed once for all rules.
std::vector<std::vector<Op>> extra_ops_of(std::span<const Axiom> axioms) {
  std::vector<std::vector<Op>> out(axioms.size());
  for (std::size_t i = 0; i < axioms.size(); ++i) {
    collect_extra_ops(axioms[i].lhs, out[i]);
    collect_extra_ops(axioms[i].rhs, out[i]);
  }
  return out;
}

// The axioms given to Z3 for `rule`: an axiom about an operator outside TASO's vocabulary (declared by its
// OpDef) only when the rule uses that operator. Leaving assumptions out can only prove less, never something
// false; and it keeps Z3's search over TASO's rules what it was before such operators existed.
std::vector<Axiom> axioms_for(const Rule& rule, std::span<const Axiom> axioms,
                              std::span<const std::vector<Op>> axiom_ops) {
  std::vector<Op> in_rule;
  for (const Equation& eq : rule.outputs) {
    collect_extra_ops(eq.lhs, in_rule);
    collect_extra_ops(eq.rhs, in_rule);
  }
  std::vector<Axiom> out;
  for (std::size_t i = 0; i < axioms.size(); ++i)
    if (std::all_of(axiom_ops[i].begin(), axiom_ops[i].end(),
                    [&](Op op) { return std::find(in_rule.begin(), in_rule.end(), op) != in_rule.end(); }))
      out.push_back(axioms[i]);
  return out;
}

RuleResult verify_one(const Rule& rule, std::span<const Axiom> axioms,
                      std::span<const std::vector<Op>> axiom_ops, const VerifyOptions& options) {
  if (auto rejected = check_by_evaluation(rule, options)) return *std::move(rejected);
  if (!options.run_z3) {
    RuleResult r;
    r.reason = "not refuted by evaluation (Z3 not run)";
    return r;
  }
  return Prover(axioms_for(rule, axioms, axiom_ops), options).verify(rule);
}

}  // namespace

// One Z3 context per rule: Z3's search depends on the order in which terms were created in a context, so a
// context shared by several rules makes a rule's outcome depend on its neighbours (sharing one per 4 rules
// saved 4 ms per rule but lost the proof of rule #594 of TASO's 820-rule file).
std::vector<RuleResult> verify_rules(std::span<const Rule> rules, std::span<const Axiom> axioms,
                                     const VerifyOptions& options, const VerifyProgress& progress) {
  check_options(options);
  std::vector<RuleResult> results(rules.size());
  std::mutex progress_mutex;
  std::size_t done = 0;
  const auto axiom_ops = extra_ops_of(axioms);
  const int jobs = options.jobs > 0 ? options.jobs : tbb::this_task_arena::max_concurrency();
  tbb::task_arena arena(jobs);
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, rules.size(), 1),
                      [&](const tbb::blocked_range<std::size_t>& range) {
                        for (std::size_t i = range.begin(); i != range.end(); ++i) {
                          results[i] = verify_one(rules[i], axioms, axiom_ops, options);
                          if (progress) {
                            const std::lock_guard lock(progress_mutex);
                            progress(++done, rules.size(), i, results[i]);
                          }
                        }
                      });
  });
  return results;
}

}  // namespace strata::search::subst
