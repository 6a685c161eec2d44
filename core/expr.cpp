// Parser and evaluator of family-file expressions: tokens, an immutable syntax tree, a tree walk.
//
// Recursion is bounded everywhere: the parser counts nesting (parentheses, calls, unary operators,
// ternary branches) up to kMaxDepth, and a run of one precedence level ("a + b + c + ...") becomes
// one flat node evaluated in a loop, so the tree is never deeper than a few nodes per level.
#include "core/expr.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "ktune/error.hpp"

namespace ktune::expr {

namespace {

constexpr std::int64_t kIntMin = std::numeric_limits<std::int64_t>::min();
constexpr double kTwo63 = 9223372036854775808.0;  // 2^63: the first double above int64

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// User text inside a message: quoted, control bytes shown as '?', long text cut.
std::string quote(std::string_view text) {
  constexpr std::size_t kShown = 80;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    out += (c < 0x20 || c == 0x7f) ? '?' : text[i];
  }
  if (text.size() > kShown) out += "...";
  return out + "'";
}

std::string show_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
  return buf;
}

// "integer 3", "real 0.5", "string 'f16'": a value in a message.
std::string describe(const Value& v) {
  return std::string(v.type_name()) + " " + (v.is_string() ? quote(v.as_string()) : v.to_string());
}

// Where a message comes from: "expression '...'" and the column of the text's first character.
struct Where {
  std::string_view what;
  std::size_t column_offset = 0;
  [[noreturn]] void fail(std::size_t pos, const std::string& message) const {
    invalid(std::string(what) + ": column " + std::to_string(column_offset + pos + 1) + ": " +
            message);
  }
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Exact comparison of an integer with a real (converting the integer could round it): -1, 0, 1.
int compare_int_real(std::int64_t i, double d) {
  if (!(d < kTwo63)) return -1;  // NaN too, which evaluation never makes: no UB in the cast
  if (d < -kTwo63) return 1;
  const double t = std::trunc(d);
  const auto ti = static_cast<std::int64_t>(t);
  if (i != ti) return i < ti ? -1 : 1;
  return d > t ? -1 : (d < t ? 1 : 0);
}

// Two numbers (not strings): -1, 0, 1.
int compare_numbers(const Value& a, const Value& b) {
  if (a.is_int() && b.is_int()) return (a.as_int() > b.as_int()) - (a.as_int() < b.as_int());
  if (a.is_int()) return compare_int_real(a.as_int(), b.as_real());
  if (b.is_int()) return -compare_int_real(b.as_int(), a.as_real());
  return (a.as_real() > b.as_real()) - (a.as_real() < b.as_real());
}

}  // namespace

// ---- Value ----------------------------------------------------------------------------------

Value Value::integer(std::int64_t v) {
  Value x;
  x.v_.emplace<0>(v);
  return x;
}

Value Value::real(double v) {
  Value x;
  x.v_.emplace<1>(v);
  return x;
}

Value Value::string(std::string v) {
  Value x;
  x.v_.emplace<2>(std::move(v));
  return x;
}

std::string_view Value::type_name() const {
  static constexpr std::string_view kNames[] = {"integer", "real", "string"};
  return v_.index() < 3 ? kNames[v_.index()] : "nothing";
}

std::int64_t Value::as_int() const {
  if (!is_int()) invalid("expected an integer, found " + describe(*this));
  return std::get<0>(v_);
}

double Value::as_real() const {
  if (is_int()) return static_cast<double>(std::get<0>(v_));
  if (!is_real()) invalid("expected a number, found " + describe(*this));
  return std::get<1>(v_);
}

const std::string& Value::as_string() const {
  if (!is_string()) invalid("expected a string, found " + describe(*this));
  return std::get<2>(v_);
}

std::string Value::to_string() const {
  if (is_int()) return std::to_string(std::get<0>(v_));
  if (is_string()) return std::get<2>(v_);
  if (!is_real()) return {};
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, std::get<1>(v_)).ptr;
  std::string s(buf, end);
  if (s.find_first_not_of("-0123456789") == std::string::npos) s += ".0";  // stays a real
  return s;
}

// ---- MapScope -------------------------------------------------------------------------------

void MapScope::set(std::string name, Value value) {
  values_.insert_or_assign(std::move(name), std::move(value));
}

const Value* MapScope::find(std::string_view name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

Scope MapScope::scope() const {
  return [this](std::string_view name) { return find(name); };
}

// ---- Syntax tree ----------------------------------------------------------------------------

namespace detail {

enum class Op { kNeg, kNot, kMul, kDiv, kMod, kAdd, kSub, kLt, kLe, kGt, kGe, kEq, kNe, kAnd, kOr };

struct BinaryOp {
  std::string_view text;
  Op op;
  int level;  // 0 binds loosest
};
constexpr BinaryOp kBinaryOps[] = {
    {"||", Op::kOr, 0}, {"&&", Op::kAnd, 1}, {"==", Op::kEq, 2}, {"!=", Op::kNe, 2},
    {"<", Op::kLt, 3},  {"<=", Op::kLe, 3},  {">", Op::kGt, 3},  {">=", Op::kGe, 3},
    {"+", Op::kAdd, 4}, {"-", Op::kSub, 4},  {"*", Op::kMul, 5}, {"/", Op::kDiv, 5},
    {"%", Op::kMod, 5},
};
constexpr int kLevels = 6;

std::string_view op_text(Op op) {
  if (op == Op::kNeg) return "-";
  if (op == Op::kNot) return "!";
  for (const BinaryOp& b : kBinaryOps) {
    if (b.op == op) return b.text;
  }
  return "?";
}

enum class Func {
  kMin,
  kMax,
  kAbs,
  kCdiv,
  kRoundUp,
  kLog2,
  kIsPow2,
  kPow,
  kSqrt,
  kFloor,
  kCeil,
  kInt,
  kReal,
  kClamp,
  kSizeof
};

struct Function {
  std::string_view name;
  Func func;
  std::size_t min_args, max_args;
};
constexpr std::size_t kVariadic = std::numeric_limits<std::size_t>::max();
constexpr Function kFunctions[] = {
    {"min", Func::kMin, 2, kVariadic},  {"max", Func::kMax, 2, kVariadic},
    {"abs", Func::kAbs, 1, 1},          {"cdiv", Func::kCdiv, 2, 2},
    {"round_up", Func::kRoundUp, 2, 2}, {"log2", Func::kLog2, 1, 1},
    {"is_pow2", Func::kIsPow2, 1, 1},   {"pow", Func::kPow, 2, 2},
    {"sqrt", Func::kSqrt, 1, 1},        {"floor", Func::kFloor, 1, 1},
    {"ceil", Func::kCeil, 1, 1},        {"int", Func::kInt, 1, 1},
    {"real", Func::kReal, 1, 1},        {"clamp", Func::kClamp, 3, 3},
    {"sizeof", Func::kSizeof, 1, 1},
};

struct DtypeSize {
  std::string_view name;
  std::int64_t bytes;
};
// Every element type a family file's buffer may have (families/file_family.cpp), and f16 / bf16.
constexpr DtypeSize kDtypeSizes[] = {{"u8", 1},  {"i8", 1},   {"u16", 2}, {"i16", 2},
                                     {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"i32", 4},
                                     {"u32", 4}, {"f64", 8},  {"i64", 8}, {"u64", 8}};

enum class Kind { kLiteral, kName, kUnary, kChain, kTernary, kCall };

struct Node {
  Kind kind = Kind::kLiteral;
  std::size_t pos = 0;  // offset in the text, for messages
  Value value;          // kLiteral
  std::string name;     // kName
  const Function* function = nullptr;
  // kUnary: the operand; kChain: the operands; kTernary: condition, then, else; kCall: arguments.
  std::vector<std::shared_ptr<const Node>> args;
  // kUnary: one operator; kChain: ops[i] (at op_pos[i]) joins args[i] and args[i + 1].
  std::vector<Op> ops;
  std::vector<std::size_t> op_pos;
};

using NodePtr = std::shared_ptr<const Node>;

}  // namespace detail

namespace {

using detail::Func;
using detail::Kind;
using detail::Node;
using detail::NodePtr;
using detail::Op;

// ---- Lexer ----------------------------------------------------------------------------------

enum class Tok { kInt, kReal, kString, kName, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::size_t pos = 0;
  std::string text;
  Value value;  // literals
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "the end";
    case Tok::kString:
      return "string " + quote(t.value.as_string());
    default:
      return quote(t.text);
  }
}

Token lex_number(std::string_view s, std::size_t& i, const Where& w) {
  const std::size_t start = i;
  auto skip = [&](bool (*pred)(char)) {
    const std::size_t from = i;
    while (i < s.size() && pred(s[i])) ++i;
    return i > from;
  };
  Token t{Tok::kInt, start, {}, {}};
  if (s[i] == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    i += 2;
    if (!skip(is_hex)) w.fail(i, "expected a hex digit after '0x'");
    std::int64_t v = 0;
    const auto r = std::from_chars(s.data() + start + 2, s.data() + i, v, 16);
    if (r.ec != std::errc()) w.fail(start, "integer literal out of range");
    t.value = Value::integer(v);
  } else {
    skip(is_digit);
    if (i < s.size() && s[i] == '.') {
      t.kind = Tok::kReal;
      ++i;
      if (!skip(is_digit)) w.fail(i, "expected a digit after '.'");
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      t.kind = Tok::kReal;
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (!skip(is_digit)) w.fail(i, "expected a digit in the exponent");
    }
    if (t.kind == Tok::kInt) {
      std::int64_t v = 0;
      const auto r = std::from_chars(s.data() + start, s.data() + i, v);
      if (r.ec != std::errc()) w.fail(start, "integer literal out of range");
      t.value = Value::integer(v);
    } else {
      double v = 0;
      const auto r = std::from_chars(s.data() + start, s.data() + i, v);
      if (r.ec != std::errc() || !std::isfinite(v)) w.fail(start, "real literal out of range");
      t.value = Value::real(v);
    }
  }
  if (i < s.size() && (is_name_char(s[i]) || s[i] == '.')) {
    w.fail(i, "unexpected " + show_char(s[i]) + " after a number");
  }
  t.text = std::string(s.substr(start, i - start));
  return t;
}

Token lex_string(std::string_view s, std::size_t& i, const Where& w) {
  const std::size_t start = i;
  const char quote_char = s[i++];
  std::string v;
  while (true) {
    if (i >= s.size()) w.fail(start, "unterminated string");
    const char c = s[i++];
    if (c == quote_char) break;
    if (c == '\\') {
      if (i >= s.size()) w.fail(start, "unterminated string");
      if (s[i] != '"' && s[i] != '\'' && s[i] != '\\') {
        w.fail(i - 1, "unknown escape: only \\\", \\' and \\\\ are allowed");
      }
      v += s[i++];
      continue;
    }
    v += c;
  }
  return Token{Tok::kString, start, std::string(s.substr(start, i - start)),
               Value::string(std::move(v))};
}

std::vector<Token> lex(std::string_view s, const Where& w) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i == s.size()) break;
    const std::size_t start = i;
    const char c = s[i];
    if (is_digit(c)) {
      out.push_back(lex_number(s, i, w));
    } else if (c == '"' || c == '\'') {
      out.push_back(lex_string(s, i, w));
    } else if (is_name_start(c)) {
      while (true) {  // name(.name)*
        while (i < s.size() && is_name_char(s[i])) ++i;
        if (i == s.size() || s[i] != '.') break;
        if (i + 1 == s.size() || !is_name_start(s[i + 1])) {
          w.fail(i + 1, "expected a name after '.'");
        }
        ++i;
      }
      std::string name(s.substr(start, i - start));
      if (name == "true" || name == "false") {
        out.push_back(Token{Tok::kInt, start, name, Value::integer(name == "true")});
      } else {
        out.push_back(Token{Tok::kName, start, std::move(name), {}});
      }
    } else {
      static constexpr std::string_view kTwo[] = {"<=", ">=", "==", "!=", "&&", "||"};
      static constexpr std::string_view kOne = "+-*/%<>!?:(),";
      const std::string_view rest = s.substr(i);
      std::size_t len = 0;
      for (std::string_view op : kTwo) {
        if (rest.substr(0, 2) == op) len = 2;
      }
      if (len == 0 && kOne.find(c) != std::string_view::npos) len = 1;
      if (len == 0 && c == '=') w.fail(i, "unexpected '=' (equality is '==')");
      if (len == 0) w.fail(i, "unexpected " + show_char(c));
      out.push_back(Token{Tok::kPunct, start, std::string(rest.substr(0, len)), {}});
      i += len;
    }
  }
  out.push_back(Token{Tok::kEnd, s.size(), {}, {}});
  return out;
}

// ---- Parser ---------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view text, const Where& where) : tokens_(lex(text, where)), where_(where) {}

  NodePtr parse() {
    NodePtr root = parse_ternary();
    if (peek().kind != Tok::kEnd) {
      where_.fail(peek().pos, "expected an operator or the end, found " + describe(peek()));
    }
    return root;
  }

  std::vector<std::string> names() {
    std::sort(names_.begin(), names_.end());
    names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
    return names_;
  }

 private:
  const Token& peek() const { return tokens_[next_]; }
  const Token& take() { return tokens_[next_ + 1 < tokens_.size() ? next_++ : next_]; }
  bool at(std::string_view punct) const {
    return peek().kind == Tok::kPunct && peek().text == punct;
  }
  void expect(std::string_view punct) {
    if (!at(punct)) {
      where_.fail(peek().pos, "expected '" + std::string(punct) + "', found " + describe(peek()));
    }
    take();
  }

  // Entering one more level of nesting: the bound that keeps every recursion here shallow.
  void enter(std::size_t pos) {
    if (depth_ == kMaxDepth) {
      where_.fail(pos, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ++depth_;
  }

  NodePtr parse_nested(std::size_t pos) {
    enter(pos);
    NodePtr n = parse_ternary();
    --depth_;
    return n;
  }

  NodePtr parse_ternary() {
    NodePtr cond = parse_binary(0);
    if (!at("?")) return cond;
    auto n = std::make_shared<Node>();
    n->kind = Kind::kTernary;
    n->pos = take().pos;
    n->args.push_back(std::move(cond));
    n->args.push_back(parse_nested(peek().pos));
    expect(":");
    n->args.push_back(parse_nested(peek().pos));  // right associative: a ? b : c ? d : e
    return n;
  }

  const detail::BinaryOp* binary_op(int level) const {
    if (peek().kind != Tok::kPunct) return nullptr;
    for (const detail::BinaryOp& b : detail::kBinaryOps) {
      if (b.level == level && b.text == peek().text) return &b;
    }
    return nullptr;
  }

  // A run of operators of one level, left to right, as one flat node.
  NodePtr parse_binary(int level) {
    if (level == detail::kLevels) return parse_unary();
    NodePtr first = parse_binary(level + 1);
    const detail::BinaryOp* op = binary_op(level);
    if (op == nullptr) return first;
    auto n = std::make_shared<Node>();
    n->kind = Kind::kChain;
    n->pos = first->pos;
    n->args.push_back(std::move(first));
    for (; op != nullptr; op = binary_op(level)) {
      n->ops.push_back(op->op);
      n->op_pos.push_back(take().pos);
      n->args.push_back(parse_binary(level + 1));
    }
    return n;
  }

  NodePtr parse_unary() {
    if (!at("-") && !at("!")) return parse_primary();
    auto n = std::make_shared<Node>();
    n->kind = Kind::kUnary;
    n->pos = peek().pos;
    n->ops.push_back(take().text == "-" ? Op::kNeg : Op::kNot);
    enter(n->pos);
    n->args.push_back(parse_unary());
    --depth_;
    return n;
  }

  NodePtr parse_primary() {
    const Token& t = peek();
    if (t.kind == Tok::kInt || t.kind == Tok::kReal || t.kind == Tok::kString) {
      auto n = std::make_shared<Node>();
      n->pos = t.pos;
      n->value = t.value;
      take();
      return n;
    }
    if (t.kind == Tok::kName) return parse_name();
    if (at("(")) {
      const std::size_t pos = take().pos;
      NodePtr n = parse_nested(pos);
      expect(")");
      return n;
    }
    where_.fail(t.pos, "expected a value, found " + describe(t));
  }

  NodePtr parse_name() {
    const Token& name = take();
    auto n = std::make_shared<Node>();
    n->pos = name.pos;
    if (!at("(")) {
      n->kind = Kind::kName;
      n->name = name.text;
      names_.push_back(name.text);
      return n;
    }
    n->kind = Kind::kCall;
    for (const detail::Function& f : detail::kFunctions) {
      if (f.name == name.text) n->function = &f;
    }
    if (n->function == nullptr) {
      std::string known;
      for (const detail::Function& f : detail::kFunctions) {
        known += (known.empty() ? "" : ", ") + std::string(f.name);
      }
      where_.fail(name.pos, "unknown function " + quote(name.text) + " (known: " + known + ")");
    }
    take();  // (
    if (!at(")")) {
      while (true) {
        n->args.push_back(parse_nested(peek().pos));
        if (!at(",")) break;
        take();
      }
      if (!at(")")) where_.fail(peek().pos, "expected ',' or ')', found " + describe(peek()));
    }
    take();  // )
    const detail::Function& f = *n->function;
    const std::size_t count = n->args.size();
    if (count < f.min_args || count > f.max_args) {
      // Each function takes a fixed count or a minimum (min, max).
      const bool variadic = f.max_args == detail::kVariadic;
      where_.fail(name.pos, "function " + quote(f.name) + " takes " +
                                (variadic ? "at least " : "") + std::to_string(f.min_args) +
                                (f.min_args == 1 && !variadic ? " argument" : " arguments") +
                                ", found " + std::to_string(count));
    }
    return n;
  }

  std::vector<Token> tokens_;
  Where where_;
  std::size_t next_ = 0;
  int depth_ = 0;
  std::vector<std::string> names_;
};

// ---- Evaluator ------------------------------------------------------------------------------

class Evaluator {
 public:
  Evaluator(const Scope& scope, const Where& where) : scope_(scope), where_(where) {}

  Value eval(const Node& n) const {
    switch (n.kind) {
      case Kind::kLiteral:
        return n.value;
      case Kind::kName:
        return lookup(n);
      case Kind::kUnary:
        return unary(n.ops[0], eval(*n.args[0]), n.pos);
      case Kind::kChain:
        return chain(n);
      case Kind::kTernary:
        return eval(*n.args[condition(*n.args[0]) ? 1 : 2]);
      case Kind::kCall:
        return call(n);
    }
    where_.fail(n.pos, "unknown node");  // unreachable
  }

 private:
  [[noreturn]] void fail(std::size_t pos, const std::string& message) const {
    where_.fail(pos, message);
  }

  Value finite(double v, std::size_t pos) const {
    if (!std::isfinite(v)) fail(pos, "result is not a finite number");
    return Value::real(v);
  }

  Value lookup(const Node& n) const {
    const Value* v = scope_ ? scope_(n.name) : nullptr;
    if (v == nullptr) fail(n.pos, "unknown name " + quote(n.name));
    if (v->is_real() && !std::isfinite(v->as_real())) {
      fail(n.pos, "name " + quote(n.name) + " is not a finite number");
    }
    return *v;
  }

  bool condition(const Node& n) const {
    const Value v = eval(n);
    if (!v.is_int()) fail(n.pos, "a condition must be an integer, found " + describe(v));
    return v.as_int() != 0;
  }

  Value unary(Op op, const Value& v, std::size_t pos) const {
    if (op == Op::kNot) {
      if (!v.is_int()) fail(pos, "operator '!' needs an integer, found " + describe(v));
      return Value::integer(v.as_int() == 0);
    }
    if (v.is_real()) return Value::real(-v.as_real());
    if (!v.is_int()) fail(pos, "operator '-' needs a number, found " + describe(v));
    if (v.as_int() == kIntMin) fail(pos, "integer overflow: -(" + v.to_string() + ")");
    return Value::integer(-v.as_int());
  }

  Value chain(const Node& n) const {
    if (n.ops[0] == Op::kAnd || n.ops[0] == Op::kOr) {
      const bool stop = n.ops[0] == Op::kOr;  // || stops at a true operand, && at a false one
      for (const NodePtr& a : n.args) {
        if (condition(*a) == stop) return Value::integer(stop);
      }
      return Value::integer(!stop);
    }
    Value acc = eval(*n.args[0]);
    for (std::size_t i = 0; i < n.ops.size(); ++i) {
      acc = binary(n.ops[i], acc, eval(*n.args[i + 1]), n.op_pos[i]);
    }
    return acc;
  }

  Value binary(Op op, const Value& a, const Value& b, std::size_t pos) const {
    auto text = [op] { return std::string(detail::op_text(op)); };  // for messages only
    if (op == Op::kLt || op == Op::kLe || op == Op::kGt || op == Op::kGe || op == Op::kEq ||
        op == Op::kNe) {
      int c = 0;
      if (a.is_string() && b.is_string()) {
        const int r = a.as_string().compare(b.as_string());
        c = (r > 0) - (r < 0);
      } else if (a.is_string() || b.is_string()) {
        fail(pos,
             "operator '" + text() + "' cannot compare " + describe(a) + " with " + describe(b));
      } else {
        c = compare_numbers(a, b);
      }
      return Value::integer(op == Op::kLt   ? c < 0
                            : op == Op::kLe ? c <= 0
                            : op == Op::kGt ? c > 0
                            : op == Op::kGe ? c >= 0
                            : op == Op::kEq ? c == 0
                                            : c != 0);
    }
    if (a.is_string() || b.is_string()) {
      if (op != Op::kAdd || !a.is_string() || !b.is_string()) {
        fail(pos,
             "operator '" + text() + "' cannot combine " + describe(a) + " and " + describe(b));
      }
      if (a.as_string().size() + b.as_string().size() > kMaxStringLength) {
        fail(pos, "string longer than " + std::to_string(kMaxStringLength) + " characters");
      }
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_int() && b.is_int()) {
      const std::int64_t x = a.as_int(), y = b.as_int();
      std::int64_t r = 0;
      bool overflow = false;
      switch (op) {
        case Op::kAdd:
          overflow = __builtin_add_overflow(x, y, &r);
          break;
        case Op::kSub:
          overflow = __builtin_sub_overflow(x, y, &r);
          break;
        case Op::kMul:
          overflow = __builtin_mul_overflow(x, y, &r);
          break;
        default:  // / and %, truncating toward zero as in C
          if (y == 0) fail(pos, op == Op::kDiv ? "division by zero" : "modulo by zero");
          if (x == kIntMin && y == -1) {
            overflow = op == Op::kDiv;  // the quotient 2^63 does not fit; the remainder is 0
          } else {
            r = op == Op::kDiv ? x / y : x % y;
          }
      }
      if (overflow) {
        fail(pos, "integer overflow: " + a.to_string() + " " + text() + " " + b.to_string());
      }
      return Value::integer(r);
    }
    if (op == Op::kMod) {
      fail(pos, "operator '%' needs integers, found " + describe(a) + " and " + describe(b));
    }
    const double x = a.as_real(), y = b.as_real();
    switch (op) {
      case Op::kAdd:
        return finite(x + y, pos);
      case Op::kSub:
        return finite(x - y, pos);
      case Op::kMul:
        return finite(x * y, pos);
      default:
        if (y == 0) fail(pos, "division by zero");
        return finite(x / y, pos);
    }
  }

  Value call(const Node& n) const {
    const std::string name(n.function->name);
    std::vector<Value> a;
    a.reserve(n.args.size());
    for (const NodePtr& arg : n.args) a.push_back(eval(*arg));
    auto number = [&](std::size_t i) -> const Value& {
      if (a[i].is_string()) {
        fail(n.args[i]->pos, name + "() needs a number, found " + describe(a[i]));
      }
      return a[i];
    };
    auto integer = [&](std::size_t i) {
      if (!a[i].is_int()) {
        fail(n.args[i]->pos, name + "() needs an integer, found " + describe(a[i]));
      }
      return a[i].as_int();
    };
    auto as_real_if = [](bool real, const Value& v) { return real ? Value::real(v.as_real()) : v; };
    switch (n.function->func) {
      case Func::kMin:
      case Func::kMax: {
        const int sign = n.function->func == Func::kMin ? -1 : 1;
        std::size_t best = 0;
        bool real = number(0).is_real();
        for (std::size_t i = 1; i < a.size(); ++i) {
          real = number(i).is_real() || real;
          if (compare_numbers(a[i], a[best]) == sign) best = i;
        }
        return as_real_if(real, a[best]);
      }
      case Func::kAbs: {
        const Value& v = number(0);
        if (v.is_real()) return Value::real(std::fabs(v.as_real()));
        if (v.as_int() == kIntMin) fail(n.pos, "integer overflow: abs(" + v.to_string() + ")");
        return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
      }
      case Func::kCdiv:
      case Func::kRoundUp: {
        const std::int64_t x = integer(0), y = integer(1);
        if (x < 0) {
          fail(n.args[0]->pos, name + "() needs a non-negative dividend, found " + describe(a[0]));
        }
        if (y <= 0) {
          fail(n.args[1]->pos, name + "() needs a positive divisor, found " + describe(a[1]));
        }
        const std::int64_t q = x / y + (x % y != 0);
        if (n.function->func == Func::kCdiv) return Value::integer(q);
        std::int64_t r = 0;
        if (__builtin_mul_overflow(q, y, &r)) {
          fail(n.pos,
               "integer overflow: round_up(" + a[0].to_string() + ", " + a[1].to_string() + ")");
        }
        return Value::integer(r);
      }
      case Func::kLog2: {
        const Value& v = number(0);
        if (v.as_real() <= 0) {
          fail(n.args[0]->pos, "log2() needs a positive number, found " + describe(v));
        }
        if (v.is_real()) return finite(std::log2(v.as_real()), n.pos);
        return Value::integer(63 - __builtin_clzll(static_cast<std::uint64_t>(v.as_int())));
      }
      case Func::kIsPow2: {
        const std::int64_t x = integer(0);
        return Value::integer(x > 0 && (x & (x - 1)) == 0);
      }
      case Func::kPow: {
        if (a[0].is_int() && a[1].is_int()) {
          std::int64_t base = a[0].as_int(), e = a[1].as_int(), r = 1;
          if (e < 0) {
            fail(n.args[1]->pos, "pow() of integers needs a non-negative exponent, found " +
                                     a[1].to_string() + " (pow(real(a), b) gives a real)");
          }
          // Square and multiply; once |base| >= 2 squares past int64, so would the result.
          while (true) {
            bool overflow = (e & 1) && __builtin_mul_overflow(r, base, &r);
            e >>= 1;
            overflow = overflow || (e != 0 && __builtin_mul_overflow(base, base, &base));
            if (overflow) {
              fail(n.pos,
                   "integer overflow: pow(" + a[0].to_string() + ", " + a[1].to_string() + ")");
            }
            if (e == 0) return Value::integer(r);
          }
        }
        return finite(std::pow(number(0).as_real(), number(1).as_real()), n.pos);
      }
      case Func::kSqrt: {
        const double x = number(0).as_real();
        if (x < 0) fail(n.args[0]->pos, "sqrt() of a negative number: " + describe(a[0]));
        return Value::real(std::sqrt(x));
      }
      case Func::kFloor:
      case Func::kCeil:
      case Func::kInt: {
        const Value& v = number(0);
        if (v.is_int()) return v;
        const double x = v.as_real();
        const double t = n.function->func == Func::kFloor  ? std::floor(x)
                         : n.function->func == Func::kCeil ? std::ceil(x)
                                                           : std::trunc(x);
        if (!(t >= -kTwo63 && t < kTwo63)) {
          fail(n.pos, name + "(" + v.to_string() + ") is out of the integer range");
        }
        return Value::integer(static_cast<std::int64_t>(t));
      }
      case Func::kReal:
        return Value::real(number(0).as_real());
      case Func::kClamp: {
        const Value &x = number(0), &lo = number(1), &hi = number(2);
        if (compare_numbers(lo, hi) > 0) {
          fail(n.pos, "clamp() needs lo <= hi, found " + lo.to_string() + " > " + hi.to_string());
        }
        const bool real = x.is_real() || lo.is_real() || hi.is_real();
        if (compare_numbers(x, lo) < 0) return as_real_if(real, lo);
        if (compare_numbers(x, hi) > 0) return as_real_if(real, hi);
        return as_real_if(real, x);
      }
      case Func::kSizeof: {
        if (!a[0].is_string()) {
          fail(n.args[0]->pos, "sizeof() needs a dtype string, found " + describe(a[0]));
        }
        std::string known;
        for (const detail::DtypeSize& d : detail::kDtypeSizes) {
          if (d.name == a[0].as_string()) return Value::integer(d.bytes);
          known += (known.empty() ? "" : ", ") + std::string(d.name);
        }
        fail(n.args[0]->pos, "sizeof() knows " + known + "; found " + quote(a[0].as_string()));
      }
    }
    fail(n.pos, "unknown function");  // unreachable
  }

  const Scope& scope_;
  Where where_;
};

}  // namespace

// ---- Expression -----------------------------------------------------------------------------

Expression Expression::parse(std::string_view text) {
  return parse_in(text, "expression " + quote(text), 0);
}

Expression Expression::parse_in(std::string_view text, std::string where,
                                std::size_t column_offset) {
  if (text.size() > kMaxTextLength) {
    invalid(where + ": " + std::to_string(text.size()) + " characters, more than the " +
            std::to_string(kMaxTextLength) + " allowed");
  }
  Parser parser(text, Where{where, column_offset});
  Expression e;
  e.root_ = parser.parse();
  e.names_ = parser.names();
  e.text_ = std::string(text);
  e.where_ = std::move(where);
  e.column_offset_ = column_offset;
  return e;
}

Value Expression::eval(const Scope& scope) const {
  return Evaluator(scope, Where{where_, column_offset_}).eval(*root_);
}

std::int64_t Expression::eval_int(const Scope& scope) const {
  const Value v = eval(scope);
  if (!v.is_int()) invalid(where_ + ": expected an integer result, found " + describe(v));
  return v.as_int();
}

double Expression::eval_real(const Scope& scope) const {
  const Value v = eval(scope);
  if (v.is_string()) invalid(where_ + ": expected a number, found " + describe(v));
  return v.as_real();
}

bool Expression::eval_bool(const Scope& scope) const {
  const Value v = eval(scope);
  if (!v.is_int()) invalid(where_ + ": expected a condition (an integer), found " + describe(v));
  return v.as_int() != 0;
}

// ---- Template -------------------------------------------------------------------------------

Template Template::parse(std::string_view text) {
  const std::string where = "template " + quote(text);
  if (text.size() > kMaxTextLength) {
    invalid(where + ": " + std::to_string(text.size()) + " characters, more than the " +
            std::to_string(kMaxTextLength) + " allowed");
  }
  const Where w{where, 0};
  Template t;
  t.text_ = std::string(text);
  t.literals_.clear();
  std::string literal;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    const bool doubled = i + 1 < text.size() && text[i + 1] == c;
    if ((c == '{' || c == '}') && doubled) {
      literal += c;
      i += 2;
      continue;
    }
    if (c == '}') w.fail(i, "unmatched '}' (a literal brace is written '}}')");
    if (c != '{') {
      literal += c;
      ++i;
      continue;
    }
    // A hole: up to the next '}' outside a string literal.
    const std::size_t open = i++;
    while (true) {
      if (i >= text.size()) w.fail(open, "unclosed hole '{'");
      if (text[i] == '}') break;
      if (text[i] == '{') w.fail(i, "'{' inside a hole");
      if (text[i] == '"' || text[i] == '\'') {
        const char q = text[i++];
        while (i < text.size() && text[i] != q) i += text[i] == '\\' ? 2 : 1;
      }
      ++i;
    }
    const std::string_view inner = text.substr(open + 1, i - open - 1);
    if (inner.find_first_not_of(" \t\r\n") == std::string_view::npos) w.fail(open, "empty hole");
    if (t.holes_.size() == kMaxHoles) {
      w.fail(open, "more than " + std::to_string(kMaxHoles) + " holes");
    }
    t.holes_.push_back(Expression::parse_in(inner, where, open + 1));
    t.literals_.push_back(std::move(literal));
    literal.clear();
    ++i;
  }
  t.literals_.push_back(std::move(literal));
  return t;
}

std::vector<std::string> Template::names() const {
  std::vector<std::string> all;
  for (const Expression& hole : holes_) {
    all.insert(all.end(), hole.names().begin(), hole.names().end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return all;
}

std::string Template::render(const Scope& scope) const {
  std::string out = literals_[0];
  for (std::size_t i = 0; i < holes_.size(); ++i) {
    out += holes_[i].eval(scope).to_string();
    out += literals_[i + 1];
  }
  return out;
}

}  // namespace ktune::expr
