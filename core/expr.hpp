// Expressions of family files: constraints, launch geometry, buffer lengths, kernel name templates.
//
// Family files are written by users and fuzzed in CI, so everything here either answers or throws
// ktune::Error(kInvalidArgument) naming the text, the column and what is wrong: no crash, no
// unbounded recursion, no signed overflow, no result that is NaN or infinite.
//
// The language is C's expression syntax on three kinds of value:
//   literals   42  0x2A  1.5  1e-3  "f16"  'f16'  true  false      (strings escape only \" \' \\)
//   names      TILE_X  device.max_threads_per_block                  (looked up in a Scope)
//   operators  unary - !;  * / %;  + -;  < <= > >=;  == !=;  &&;  ||;  c ? a : b;  ( )
//   functions  min(a, b, ...) max(a, b, ...) abs(x) cdiv(a, b) round_up(a, b) log2(x) is_pow2(x)
//              pow(a, b) sqrt(x) floor(x) ceil(x) int(x) real(x) clamp(x, lo, hi) sizeof(dtype)
// Integers stay integers (/ and % truncate toward zero as in C); an integer meeting a real becomes
// a real. Booleans are the integers 1 and 0; conditions (!, &&, ||, ?:) must be integers. Strings
// compare with each other and concatenate with +. Unknown functions and wrong argument counts are
// found when parsing; unknown names and type errors when evaluating.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ktune::expr {

// Limits against hostile input; each is an error, never a crash.
inline constexpr std::size_t kMaxTextLength = 4096;  // characters of one expression or template
inline constexpr int kMaxDepth = 64;                 // nested parentheses, calls, unary operators
inline constexpr std::size_t kMaxHoles = 256;        // {holes} of one template
inline constexpr std::size_t kMaxStringLength = 1 << 16;  // a string made by concatenation

// An integer (int64), a real (finite double) or a string (an axis such as dtype). Default: 0.
class Value {
 public:
  Value() = default;
  static Value integer(std::int64_t v);
  static Value real(double v);
  static Value string(std::string v);

  bool is_int() const { return v_.index() == 0; }
  bool is_real() const { return v_.index() == 1; }
  bool is_string() const { return v_.index() == 2; }
  std::string_view type_name() const;  // "integer", "real" or "string"

  // Each throws Error(kInvalidArgument) for the wrong kind; as_real() converts an integer.
  std::int64_t as_int() const;
  double as_real() const;
  const std::string& as_string() const;

  // Integers in decimal; reals in the shortest form that reads back the same, with ".0" added to
  // an integral one ("0.5", "2.0", "1e+20") so that it stays a real; strings as they are.
  std::string to_string() const;

  // Same kind and same value: integer 1 and real 1.0 differ.
  bool operator==(const Value& other) const { return v_ == other.v_; }

 private:
  std::variant<std::int64_t, double, std::string> v_;
};

// Answers a name with its value, or nullptr when the name is unknown.
using Scope = std::function<const Value*(std::string_view name)>;

// A Scope over a map of names.
class MapScope {
 public:
  MapScope() = default;
  MapScope(std::initializer_list<std::pair<const std::string, Value>> values) : values_(values) {}
  void set(std::string name, Value value);
  const Value* find(std::string_view name) const;  // nullptr when unknown
  // Refers to *this, which must outlive the returned Scope.
  Scope scope() const;

 private:
  std::map<std::string, Value, std::less<>> values_;
};

namespace detail {
struct Node;
}

// A parsed expression. Cheap to copy: copies share the immutable syntax tree.
class Expression {
 public:
  // Throws Error(kInvalidArgument), e.g. "expression 'a +* b': column 4: expected a value, found
  // '*'", for bad syntax, unknown functions, wrong argument counts and the limits above.
  static Expression parse(std::string_view text);

  const std::string& text() const { return text_; }
  // Every variable name used (taken branches or not), sorted, each once.
  const std::vector<std::string>& names() const { return names_; }

  // Each throws Error(kInvalidArgument) naming the column: an unknown name (named), a type error
  // (naming both types), division by zero, integer overflow, a result that is not finite.
  Value eval(const Scope& scope) const;
  std::int64_t eval_int(const Scope& scope) const;  // an integral real is an error too
  double eval_real(const Scope& scope) const;       // an integer converts
  bool eval_bool(const Scope& scope) const;         // an integer, true when != 0

 private:
  friend class Template;
  Expression() = default;
  // `where` starts every message ("expression '...'"); columns count from `column_offset`.
  static Expression parse_in(std::string_view text, std::string where, std::size_t column_offset);

  std::string text_;
  std::string where_;
  std::size_t column_offset_ = 0;
  std::shared_ptr<const detail::Node> root_;
  std::vector<std::string> names_;
};

// Text with {expression} holes, e.g. "my::conv<{TILE_X}, {TILE_Y}, {T}>"; "{{" and "}}" stand for
// literal braces. A hole renders as its value's to_string().
class Template {
 public:
  Template() = default;  // the empty text
  // Throws Error(kInvalidArgument) naming the column: an unclosed or empty hole, a lone '}', a bad
  // expression in a hole, more than kMaxHoles holes.
  static Template parse(std::string_view text);

  const std::string& text() const { return text_; }
  std::vector<std::string> names() const;  // of all holes, sorted, each once
  std::string render(const Scope& scope) const;

 private:
  std::string text_;
  std::vector<std::string> literals_{std::string()};  // literals_[i] comes before holes_[i]
  std::vector<Expression> holes_;
};

}  // namespace ktune::expr
