// Terms of substitution rules: operator applications in prefix notation over tensor variables, e.g.
// conv2d(1,1,0,2,x,w). Plain value types; two terms are equal when they are structurally identical.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "search/subst/operators.h"

namespace strata::search::subst {

// An integer operator parameter: a literal, or (in axioms only) a universally quantified parameter variable.
struct Param {
  std::int64_t value = 0;
  std::string var;  // non-empty: a parameter variable
  [[nodiscard]] bool is_var() const { return !var.empty(); }
  friend bool operator==(const Param&, const Param&) = default;
};

class Term {
 public:
  // A tensor variable (a rule input, or a quantified tensor in an axiom).
  static Term variable(std::string name);
  // An operator application; throws std::invalid_argument when the parameter or argument count does not match
  // the operator's signature.
  static Term apply(Op op, std::vector<Param> params = {}, std::vector<Term> args = {});

  [[nodiscard]] bool is_variable() const { return is_variable_; }
  [[nodiscard]] const std::string& name() const { return name_; }  // variables only
  [[nodiscard]] Op op() const { return op_; }                      // applications only
  [[nodiscard]] const std::vector<Param>& params() const { return params_; }
  [[nodiscard]] const std::vector<Term>& args() const { return args_; }

  friend bool operator==(const Term& a, const Term& b);

 private:
  bool is_variable_ = false;
  Op op_ = Op::kEwadd;
  std::string name_;
  std::vector<Param> params_;
  std::vector<Term> args_;
};

// Prefix notation without spaces, TASO's spelling: ewadd(input_1,matmul(input_1,input_4)); nullary constants
// without parentheses (Imatmul).
std::string to_string(const Term& term);
void append_term(std::string& out, const Term& term);

// Number of operator applications (constants included).
int op_count(const Term& term);

// Appends the names of tensor variables (and of parameter variables, when asked) not yet in the lists, in
// depth-first left-to-right order of first occurrence.
void collect_variables(const Term& term, std::vector<std::string>& tensors,
                       std::vector<std::string>* params = nullptr);

// Where a piece of text starts in its file, for error messages.
struct TextOrigin {
  std::string_view file;
  int line = 1;
  int column = 1;  // 1-based column of text[0]
};

// Parses one term from text[pos...] (whitespace allowed between tokens) and leaves pos after it. An
// identifier that is not an operator name is a tensor variable; parameter positions take integer literals, or
// identifiers when allow_param_vars. Throws ConfigError "file:line:column: ..." naming what was expected.
Term parse_term(std::string_view text, std::size_t& pos, const TextOrigin& origin,
                bool allow_param_vars = false);

// True for names usable as variables: [A-Za-z_][A-Za-z0-9_]* and not an operator name.
bool is_valid_variable_name(std::string_view name);

}  // namespace strata::search::subst
