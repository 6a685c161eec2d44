// Host tests: the expression language of family files (parse, evaluate, templates, errors).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "core/expr.hpp"
#include "ktune/error.hpp"

namespace ktune::expr {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

// Names most tests evaluate against.
MapScope vars() {
  return MapScope{
      {"TILE_X", Value::integer(16)},   {"TILE_Y", Value::integer(8)},
      {"n", Value::integer(1000)},      {"zero", Value::integer(0)},
      {"half", Value::real(0.5)},       {"T", Value::string("float")},
      {"dtype", Value::string("bf16")}, {"device.max_threads_per_block", Value::integer(1024)}};
}

Value eval(std::string_view text) { return Expression::parse(text).eval(vars().scope()); }
std::int64_t eval_int(std::string_view text) {
  return Expression::parse(text).eval_int(vars().scope());
}
double eval_real(std::string_view text) {
  return Expression::parse(text).eval_real(vars().scope());
}

// The message of the Error(kInvalidArgument) that f throws ("" and a failure when none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}
std::string parse_error(std::string_view text) {
  return error_of([&] { Expression::parse(text); });
}
std::string eval_error(std::string_view text) {
  const Expression e = Expression::parse(text);  // parsing must succeed: the error is evaluation's
  return error_of([&] { e.eval(vars().scope()); });
}

TEST(Expr, PrecedenceAndAssociativity) {
  EXPECT_EQ(eval_int("1 + 2 * 3"), 7);
  EXPECT_EQ(eval_int("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval_int("10 - 4 - 3"), 3);    // left associative
  EXPECT_EQ(eval_int("100 / 10 / 5"), 2);  // not 100 / 2
  EXPECT_EQ(eval_int("2 * 3 % 4"), 2);     // (2 * 3) % 4, not 2 * (3 % 4)
  EXPECT_EQ(eval_int("-2 * 3"), -6);
  EXPECT_EQ(eval_int("- - 5"), 5);
  EXPECT_EQ(eval_int("!0 + 1"), 2);  // ! binds tighter than +
  EXPECT_EQ(eval_int("!5"), 0);
  EXPECT_EQ(eval_int("1 + 2 < 4"), 1);
  EXPECT_EQ(eval_int("3 > 2 > 1"), 0);  // (3 > 2) > 1, as in C
  EXPECT_EQ(eval_int("1 < 2 == 1"), 1);
  EXPECT_EQ(eval_int("2 == 2 != 0"), 1);
  EXPECT_EQ(eval_int("1 || 0 && 0"), 1);  // && binds tighter than ||
  EXPECT_EQ(eval_int("0 && 1 || 1"), 1);
  EXPECT_EQ(eval_int("1 + 2 == 3 && 4 > 3"), 1);
  EXPECT_EQ(eval_int("1 ? 2 : 0 ? 3 : 4"), 2);  // right associative
  EXPECT_EQ(eval_int("0 ? 2 : 0 ? 3 : 4"), 4);
  EXPECT_EQ(eval_int("0 ? 2 : 1 ? 3 : 4"), 3);
  EXPECT_EQ(eval_int("1 ? 0 ? 7 : 8 : 9"), 8);
  EXPECT_EQ(eval_int("0 || 0 ? 5 : 6"), 6);  // ?: binds loosest
  EXPECT_EQ(eval_int("TILE_X * TILE_Y <= device.max_threads_per_block"), 1);
  EXPECT_EQ(eval_int(" \t( ( 42 ) )\n"), 42);
}

TEST(Expr, IntegerAndRealSemantics) {
  EXPECT_EQ(eval("7 / 2"), Value::integer(3));
  EXPECT_EQ(eval("7.0 / 2"), Value::real(3.5));
  EXPECT_EQ(eval("7 / 2.0"), Value::real(3.5));
  EXPECT_EQ(eval("1 + 0.5"), Value::real(1.5));
  EXPECT_EQ(eval("n * half"), Value::real(500.0));
  EXPECT_EQ(eval("2 * 3"), Value::integer(6));
  EXPECT_EQ(eval("1e3"), Value::real(1000.0));
  EXPECT_EQ(eval("2.5e-1"), Value::real(0.25));
  EXPECT_EQ(eval("1E+2"), Value::real(100.0));
  EXPECT_EQ(eval("0x1F + 0XaB"), Value::integer(31 + 171));
  EXPECT_EQ(eval("007"), Value::integer(7));
  EXPECT_EQ(eval("true + true"), Value::integer(2));
  EXPECT_EQ(eval("false"), Value::integer(0));
  EXPECT_EQ(eval("-half"), Value::real(-0.5));
  EXPECT_EQ(eval("9223372036854775807"), Value::integer(kMax));
  EXPECT_EQ(eval("-9223372036854775807 - 1"), Value::integer(kMin));
  EXPECT_EQ(eval("0.1 + 0.2").to_string(), "0.30000000000000004");
  EXPECT_TRUE(eval("1 < 2").is_int());  // booleans are integers
  EXPECT_TRUE(eval("half < 2").is_int());
}

TEST(Expr, CDivisionAndModuloOnNegatives) {
  EXPECT_EQ(eval_int("-7 / 2"), -3);  // truncates toward zero
  EXPECT_EQ(eval_int("7 / -2"), -3);
  EXPECT_EQ(eval_int("-7 / -2"), 3);
  EXPECT_EQ(eval_int("-7 % 2"), -1);  // sign of the dividend
  EXPECT_EQ(eval_int("7 % -2"), 1);
  EXPECT_EQ(eval_int("-7 % -2"), -1);
  EXPECT_EQ(eval_int("(-9223372036854775807 - 1) % -1"), 0);  // no trap, no overflow
  EXPECT_EQ(eval_int("(-9223372036854775807 - 1) / 1"), kMin);
}

TEST(Expr, MixedComparisonsAreExact) {
  EXPECT_EQ(eval_int("1 == 1.0"), 1);
  EXPECT_EQ(eval_int("2 < 2.5"), 1);
  EXPECT_EQ(eval_int("-3 < -2.5"), 1);
  EXPECT_EQ(eval_int("-2 > -2.5"), 1);
  // 2^53 + 1 is not a double: converting it would make these equal.
  EXPECT_EQ(eval_int("9007199254740993 == 9007199254740992.0"), 0);
  EXPECT_EQ(eval_int("9007199254740993 > 9007199254740992.0"), 1);
  EXPECT_EQ(eval_int("9223372036854775807 < 9223372036854775808.0"), 1);
  EXPECT_EQ(eval_int("-9223372036854775807 - 1 == -9223372036854775808.0"), 1);
  EXPECT_EQ(eval_int("1e300 > 9223372036854775807"), 1);
  EXPECT_EQ(eval_int("2.0 >= 2"), 1);
  EXPECT_EQ(eval_int("2.5 != 2.5"), 0);
}

TEST(Expr, Functions) {
  EXPECT_EQ(eval("min(3, 1, 2)"), Value::integer(1));
  EXPECT_EQ(eval("max(3, 1, 2)"), Value::integer(3));
  EXPECT_EQ(eval("min(-4, 7)"), Value::integer(-4));
  EXPECT_EQ(eval("min(2, 1.5)"), Value::real(1.5));
  EXPECT_EQ(eval("max(2, 1.5)"), Value::real(2.0));  // a real argument makes the result real
  EXPECT_EQ(eval("abs(-5)"), Value::integer(5));
  EXPECT_EQ(eval("abs(5)"), Value::integer(5));
  EXPECT_EQ(eval("abs(-2.5)"), Value::real(2.5));
  EXPECT_EQ(eval("cdiv(10, 4)"), Value::integer(3));
  EXPECT_EQ(eval("cdiv(8, 4)"), Value::integer(2));
  EXPECT_EQ(eval("cdiv(0, 4)"), Value::integer(0));
  EXPECT_EQ(eval("cdiv(9223372036854775807, 2)"), Value::integer(kMax / 2 + 1));
  EXPECT_EQ(eval("cdiv(n, TILE_X * 4)"), Value::integer(16));
  EXPECT_EQ(eval("round_up(10, 4)"), Value::integer(12));
  EXPECT_EQ(eval("round_up(12, 4)"), Value::integer(12));
  EXPECT_EQ(eval("round_up(0, 4)"), Value::integer(0));
  EXPECT_EQ(eval("log2(1)"), Value::integer(0));
  EXPECT_EQ(eval("log2(1023)"), Value::integer(9));
  EXPECT_EQ(eval("log2(1024)"), Value::integer(10));
  EXPECT_EQ(eval("log2(9223372036854775807)"), Value::integer(62));
  EXPECT_EQ(eval("log2(8.0)"), Value::real(3.0));
  EXPECT_EQ(eval("is_pow2(64)"), Value::integer(1));
  EXPECT_EQ(eval("is_pow2(96)"), Value::integer(0));
  EXPECT_EQ(eval("is_pow2(0)"), Value::integer(0));
  EXPECT_EQ(eval("is_pow2(-8)"), Value::integer(0));
  EXPECT_EQ(eval("is_pow2(1)"), Value::integer(1));
  EXPECT_EQ(eval("pow(3, 4)"), Value::integer(81));
  EXPECT_EQ(eval("pow(7, 0)"), Value::integer(1));
  EXPECT_EQ(eval("pow(0, 0)"), Value::integer(1));
  EXPECT_EQ(eval("pow(2, 62)"), Value::integer(std::int64_t{1} << 62));
  EXPECT_EQ(eval("pow(-2, 63)"), Value::integer(kMin));
  EXPECT_EQ(eval("pow(-1, 9223372036854775807)"), Value::integer(-1));
  EXPECT_EQ(eval("pow(1, 9223372036854775807)"), Value::integer(1));
  EXPECT_EQ(eval("pow(2.0, -1)"), Value::real(0.5));
  EXPECT_EQ(eval("pow(4, 0.5)"), Value::real(2.0));
  EXPECT_EQ(eval("sqrt(16)"), Value::real(4.0));
  EXPECT_EQ(eval("sqrt(2.25)"), Value::real(1.5));
  EXPECT_EQ(eval("floor(2.7)"), Value::integer(2));
  EXPECT_EQ(eval("floor(-2.5)"), Value::integer(-3));
  EXPECT_EQ(eval("ceil(2.1)"), Value::integer(3));
  EXPECT_EQ(eval("ceil(-2.5)"), Value::integer(-2));
  EXPECT_EQ(eval("floor(5)"), Value::integer(5));
  EXPECT_EQ(eval("int(2.9)"), Value::integer(2));
  EXPECT_EQ(eval("int(-2.9)"), Value::integer(-2));  // truncation
  EXPECT_EQ(eval("int(7)"), Value::integer(7));
  EXPECT_EQ(eval("int(-9223372036854775808.0)"), Value::integer(kMin));
  EXPECT_EQ(eval("real(3)"), Value::real(3.0));
  EXPECT_EQ(eval("real(half)"), Value::real(0.5));
  EXPECT_EQ(eval("clamp(5, 0, 3)"), Value::integer(3));
  EXPECT_EQ(eval("clamp(-5, 0, 3)"), Value::integer(0));
  EXPECT_EQ(eval("clamp(2, 0, 3)"), Value::integer(2));
  EXPECT_EQ(eval("clamp(2, 0, 3.5)"), Value::real(2.0));
  EXPECT_EQ(eval("clamp(4, 4, 4)"), Value::integer(4));
  const std::pair<const char*, std::int64_t> sizes[] = {
      {"f16", 2}, {"bf16", 2}, {"f32", 4}, {"i32", 4}, {"u32", 4}, {"f64", 8},
      {"i64", 8}, {"u64", 8},  {"u8", 1},  {"i8", 1},  {"u16", 2}, {"i16", 2}};
  for (const auto& [dtype, bytes] : sizes) {
    EXPECT_EQ(eval_int("sizeof('" + std::string(dtype) + "')"), bytes) << dtype;
  }
  EXPECT_EQ(eval_int("sizeof(dtype) * n"), 2000);
}

TEST(Expr, FunctionErrors) {
  EXPECT_CONTAINS(eval_error("cdiv(5, 0)"), "positive divisor");
  EXPECT_CONTAINS(eval_error("cdiv(5, -1)"), "positive divisor");
  EXPECT_CONTAINS(eval_error("cdiv(-5, 2)"), "non-negative dividend");
  EXPECT_CONTAINS(eval_error("cdiv(5.0, 2)"), "needs an integer, found real 5.0");
  EXPECT_CONTAINS(eval_error("round_up(3, 0)"), "positive divisor");
  EXPECT_CONTAINS(eval_error("round_up(9223372036854775807, 2)"), "integer overflow");
  EXPECT_CONTAINS(eval_error("log2(0)"), "log2() needs a positive number");
  EXPECT_CONTAINS(eval_error("log2(-4)"), "log2() needs a positive number");
  EXPECT_CONTAINS(eval_error("log2(-0.5)"), "log2() needs a positive number");
  EXPECT_CONTAINS(eval_error("is_pow2(4.0)"), "needs an integer");
  EXPECT_CONTAINS(eval_error("pow(2, 63)"), "integer overflow: pow(2, 63)");
  EXPECT_CONTAINS(eval_error("pow(3, 1000000)"), "integer overflow");
  EXPECT_CONTAINS(eval_error("pow(2, -1)"), "non-negative exponent");
  EXPECT_CONTAINS(eval_error("pow(10.0, 400)"), "not a finite number");
  EXPECT_CONTAINS(eval_error("pow(-8.0, 0.5)"), "not a finite number");
  EXPECT_CONTAINS(eval_error("sqrt(-1)"), "sqrt() of a negative number");
  EXPECT_CONTAINS(eval_error("floor(1e19)"), "out of the integer range");
  EXPECT_CONTAINS(eval_error("ceil(-1e19)"), "out of the integer range");
  EXPECT_CONTAINS(eval_error("int(9223372036854775808.0)"), "out of the integer range");
  EXPECT_CONTAINS(eval_error("abs(-9223372036854775807 - 1)"), "integer overflow");
  EXPECT_CONTAINS(eval_error("clamp(1, 3, 2)"), "lo <= hi");
  EXPECT_CONTAINS(eval_error("min(1, T)"), "min() needs a number, found string 'float'");
  EXPECT_CONTAINS(eval_error("real('x')"), "needs a number");
  EXPECT_CONTAINS(eval_error("sizeof('f128')"), "sizeof() knows");
  EXPECT_CONTAINS(eval_error("sizeof('f128')"), "'f128'");
  EXPECT_CONTAINS(eval_error("sizeof(4)"), "needs a dtype string");
  // Arity and unknown functions are found when parsing.
  EXPECT_CONTAINS(parse_error("cdiv(1)"), "function 'cdiv' takes 2 arguments, found 1");
  EXPECT_CONTAINS(parse_error("abs(1, 2)"), "function 'abs' takes 1 argument, found 2");
  EXPECT_CONTAINS(parse_error("min(1)"), "takes at least 2 arguments, found 1");
  EXPECT_CONTAINS(parse_error("clamp()"), "takes 3 arguments, found 0");
  const std::string unknown = parse_error("1 + foo(2)");
  EXPECT_CONTAINS(unknown, "column 5: unknown function 'foo'");
  EXPECT_CONTAINS(unknown, "cdiv");  // lists the known ones
  EXPECT_CONTAINS(parse_error("a.b(1)"), "unknown function 'a.b'");
  EXPECT_CONTAINS(parse_error("min(1,)"), "column 7: expected a value, found ')'");
  EXPECT_CONTAINS(parse_error("min(1 2)"), "column 7: expected ',' or ')', found '2'");
}

TEST(Expr, StringsAndComparisons) {
  EXPECT_EQ(eval("'ab' + \"cd\""), Value::string("abcd"));
  EXPECT_EQ(eval("T + '4'"), Value::string("float4"));
  EXPECT_EQ(eval("''"), Value::string(""));
  EXPECT_EQ(eval("'it\\'s'"), Value::string("it's"));
  EXPECT_EQ(eval("\"say \\\"hi\\\" \\\\ \""), Value::string("say \"hi\" \\ "));
  EXPECT_EQ(eval("\"it's\""), Value::string("it's"));
  EXPECT_EQ(eval_int("T == 'float'"), 1);
  EXPECT_EQ(eval_int("T != 'float'"), 0);
  EXPECT_EQ(eval_int("'abc' < 'abd'"), 1);
  EXPECT_EQ(eval_int("'abc' < 'ab'"), 0);
  EXPECT_EQ(eval_int("'b' >= 'a'"), 1);
  EXPECT_EQ(eval_int("dtype == 'bf16' ? 2 : 4"), 2);
  const std::string mixed = eval_error("T == 1");
  EXPECT_CONTAINS(mixed, "column 3: operator '==' cannot compare string 'float' with integer 1");
  EXPECT_CONTAINS(eval_error("1.5 < 'x'"), "cannot compare real 1.5 with string 'x'");
  EXPECT_CONTAINS(eval_error("T + 1"), "operator '+' cannot combine string 'float' and integer 1");
  EXPECT_CONTAINS(eval_error("T * 2"), "operator '*' cannot combine");
  EXPECT_CONTAINS(eval_error("T - T"), "operator '-' cannot combine");
  EXPECT_CONTAINS(eval_error("-T"), "operator '-' needs a number, found string 'float'");
  EXPECT_CONTAINS(eval_error("!T"), "operator '!' needs an integer");
  EXPECT_CONTAINS(eval_error("T ? 1 : 2"), "a condition must be an integer, found string");
  EXPECT_CONTAINS(eval_error("half && 1"), "a condition must be an integer, found real 0.5");
  EXPECT_CONTAINS(eval_error("1.5 % 2"), "operator '%' needs integers");
}

TEST(Expr, ShortCircuitSkipsErrors) {
  EXPECT_EQ(eval_int("0 && 1 / 0"), 0);
  EXPECT_EQ(eval_int("1 || unknown_name"), 1);
  EXPECT_EQ(eval_int("zero != 0 && n / zero > 1"), 0);
  EXPECT_EQ(eval_int("1 ? 5 : 1 / 0"), 5);
  EXPECT_EQ(eval_int("0 ? 1 / 0 : 6"), 6);
  EXPECT_EQ(eval_int("2 && 3"), 1);  // normalized to 0/1
  EXPECT_EQ(eval_int("0 || -4"), 1);
  EXPECT_CONTAINS(eval_error("1 && 1 / 0"), "division by zero");
}

TEST(Expr, DottedNamesAndNamesList) {
  EXPECT_EQ(eval_int("device.max_threads_per_block / 32"), 32);
  MapScope deep{{"a.b.c_1", Value::integer(7)}};
  EXPECT_EQ(Expression::parse("a.b.c_1 * 2").eval_int(deep.scope()), 14);
  const Expression e = Expression::parse(
      "TILE_X * TILE_Y <= device.max_threads_per_block && TILE_X > 0 ? cdiv(n, TILE_X) : "
      "min(n, true)");
  const std::vector<std::string> expected = {"TILE_X", "TILE_Y", "device.max_threads_per_block",
                                             "n"};
  EXPECT_EQ(e.names(), expected);  // sorted, unique, no functions, no true/false
  EXPECT_TRUE(Expression::parse("1 + 2").names().empty());
  EXPECT_EQ(Expression::parse("a.b + a + a.b").names(), (std::vector<std::string>{"a", "a.b"}));
  EXPECT_CONTAINS(parse_error("a. b"), "column 3: expected a name after '.'");
  EXPECT_CONTAINS(parse_error("a.1"), "column 3: expected a name after '.'");
  EXPECT_CONTAINS(parse_error("a."), "column 3: expected a name after '.'");
}

TEST(Expr, SyntaxErrorsNameTheColumn) {
  EXPECT_CONTAINS(parse_error("a +* b"), "expression 'a +* b': column 4: expected a value");
  EXPECT_CONTAINS(parse_error("1 2"), "column 3: expected an operator or the end, found '2'");
  EXPECT_CONTAINS(parse_error("(1 + 2"), "column 7: expected ')', found the end");
  EXPECT_CONTAINS(parse_error("1 + 2)"), "column 6: expected an operator or the end");
  EXPECT_CONTAINS(parse_error(""), "column 1: expected a value, found the end");
  EXPECT_CONTAINS(parse_error("   "), "column 4: expected a value, found the end");
  EXPECT_CONTAINS(parse_error("1 ? 2"), "column 6: expected ':', found the end");
  EXPECT_CONTAINS(parse_error("'abc"), "column 1: unterminated string");
  EXPECT_CONTAINS(parse_error("x + \"ab\\\""), "column 5: unterminated string");
  EXPECT_CONTAINS(parse_error("'a\\n'"), "column 3: unknown escape");
  EXPECT_CONTAINS(parse_error("a = 1"), "column 3: unexpected '=' (equality is '==')");
  EXPECT_CONTAINS(parse_error("a $ 1"), "column 3: unexpected '$'");
  EXPECT_CONTAINS(parse_error(std::string("a \x01")), "column 3: unexpected byte 0x01");
  EXPECT_CONTAINS(parse_error("a & b"), "unexpected '&'");
  EXPECT_CONTAINS(parse_error("12abc"), "column 3: unexpected 'a' after a number");
  EXPECT_CONTAINS(parse_error("1.e5"), "column 3: expected a digit after '.'");
  EXPECT_CONTAINS(parse_error("1.5.2"), "unexpected '.' after a number");
  EXPECT_CONTAINS(parse_error("1e"), "expected a digit in the exponent");
  EXPECT_CONTAINS(parse_error("0x"), "expected a hex digit");
  EXPECT_CONTAINS(parse_error("0xG"), "expected a hex digit");
  EXPECT_CONTAINS(parse_error("9223372036854775808"), "integer literal out of range");
  EXPECT_CONTAINS(parse_error("0x8000000000000000"), "integer literal out of range");
  EXPECT_CONTAINS(parse_error("1e999"), "real literal out of range");
  EXPECT_CONTAINS(parse_error("+1"), "column 1: expected a value, found '+'");
  // A message quotes long text shortened, and control bytes as '?'.
  const std::string long_text = std::string(200, 'x') + " 1";
  const std::string m = parse_error(long_text);
  EXPECT_CONTAINS(m, "...': column 202");
  EXPECT_LT(m.size(), 200u);
}

TEST(Expr, EvaluationErrorsNameWhatAndWhere) {
  const std::string unknown = eval_error("n + nope * 2");
  EXPECT_CONTAINS(unknown, "expression 'n + nope * 2': column 5: unknown name 'nope'");
  EXPECT_CONTAINS(eval_error("device.warp"), "unknown name 'device.warp'");
  EXPECT_CONTAINS(eval_error("n / zero"), "column 3: division by zero");
  EXPECT_CONTAINS(eval_error("n % 0"), "column 3: modulo by zero");
  EXPECT_CONTAINS(eval_error("1.0 / 0"), "division by zero");
  EXPECT_CONTAINS(eval_error("half / 0.0"), "division by zero");
  EXPECT_CONTAINS(eval_error("9223372036854775807 + 1"),
                  "column 21: integer overflow: 9223372036854775807 + 1");
  EXPECT_CONTAINS(eval_error("(-9223372036854775807 - 1) / -1"), "integer overflow");
  EXPECT_CONTAINS(eval_error("-(-9223372036854775807 - 1)"), "integer overflow");
  EXPECT_CONTAINS(eval_error("-9223372036854775807 - 2"), "integer overflow");
  EXPECT_CONTAINS(eval_error("4611686018427387904 * 2"), "integer overflow");
  EXPECT_CONTAINS(eval_error("1e308 * 10"), "not a finite number");
  EXPECT_CONTAINS(eval_error("-1e308 - 1e308"), "not a finite number");
  MapScope bad{{"inf", Value::real(std::numeric_limits<double>::infinity())}};
  EXPECT_CONTAINS(error_of([&] { Expression::parse("inf * 0").eval(bad.scope()); }),
                  "name 'inf' is not a finite number");
}

TEST(Expr, TypedEvaluation) {
  const MapScope m = vars();
  EXPECT_EQ(Expression::parse("n / 3").eval_int(m.scope()), 333);
  EXPECT_CONTAINS(error_of([&] { Expression::parse("2.0").eval_int(m.scope()); }),
                  "expected an integer result, found real 2.0");
  EXPECT_CONTAINS(error_of([&] { Expression::parse("T").eval_int(m.scope()); }),
                  "expected an integer result, found string 'float'");
  EXPECT_DOUBLE_EQ(eval_real("n"), 1000.0);
  EXPECT_DOUBLE_EQ(eval_real("half * 3"), 1.5);
  EXPECT_CONTAINS(error_of([&] { Expression::parse("T").eval_real(m.scope()); }),
                  "expected a number");
  EXPECT_TRUE(Expression::parse("TILE_X == 16").eval_bool(m.scope()));
  EXPECT_FALSE(Expression::parse("0").eval_bool(m.scope()));
  EXPECT_TRUE(Expression::parse("-3").eval_bool(m.scope()));
  EXPECT_CONTAINS(error_of([&] { Expression::parse("1.0").eval_bool(m.scope()); }),
                  "expected a condition");
}

TEST(Expr, LimitsAgainstHostileInput) {
  // Far past the length limit: refused before any recursion.
  EXPECT_CONTAINS(parse_error(std::string(100000, '(')), "more than the 4096 allowed");
  EXPECT_CONTAINS(parse_error(std::string(100000, '-') + "1"), "more than the 4096 allowed");
  const std::string at_limit = std::string(kMaxTextLength - 1, ' ') + "1";
  EXPECT_EQ(Expression::parse(at_limit).eval_int(Scope{}), 1);
  // Nesting: 64 levels are fine, 65 are an error, within the length limit.
  auto nested = [](int depth) { return std::string(depth, '(') + "1" + std::string(depth, ')'); };
  EXPECT_EQ(Expression::parse(nested(kMaxDepth)).eval_int(Scope{}), 1);
  EXPECT_CONTAINS(parse_error(nested(kMaxDepth + 1)), "column 65: nested deeper than 64 levels");
  EXPECT_CONTAINS(parse_error(std::string(4000, '(')), "nested deeper than 64 levels");
  EXPECT_CONTAINS(parse_error(std::string(4000, '-') + "1"), "nested deeper than 64 levels");
  EXPECT_CONTAINS(parse_error(std::string(4000, '!') + "1"), "nested deeper than 64 levels");
  // The deepest tree the limit allows (every precedence level under every call) still evaluates.
  std::string deepest;
  for (int i = 0; i < kMaxDepth; ++i) deepest += "abs(1 || 1 && 1 == 1 < 1 + 1 * ";
  deepest += "1" + std::string(kMaxDepth, ')');
  EXPECT_EQ(Expression::parse(deepest).eval_int(Scope{}), 1);
  std::string calls;
  for (int i = 0; i < 300; ++i) calls += "abs(";
  EXPECT_CONTAINS(parse_error(calls + "1" + std::string(300, ')')), "nested deeper");
  std::string ternary;
  for (int i = 0; i < 300; ++i) ternary += "1 ? 1 : ";
  EXPECT_CONTAINS(parse_error(ternary + "1"), "nested deeper");
  // A long run of one operator is flat, not deep: it evaluates in a loop.
  std::string sum = "1";
  for (int i = 0; i < 2000; ++i) sum += "+1";
  EXPECT_EQ(Expression::parse(sum).eval_int(Scope{}), 2001);
  std::string many = "max(0";
  for (int i = 1; i < 1000; ++i) many += "," + std::to_string(i);
  EXPECT_EQ(Expression::parse(many + ")").eval_int(Scope{}), 999);
  // Concatenation cannot grow a string without bound.
  MapScope big{{"s", Value::string(std::string(kMaxStringLength / 2 + 1, 'x'))}};
  EXPECT_CONTAINS(error_of([&] { Expression::parse("s + s").eval(big.scope()); }),
                  "string longer than");
}

TEST(Expr, ExpressionIsCopyableValue) {
  Expression copy = Expression::parse("TILE_X + 1");
  {
    const Expression original = Expression::parse("n * 2");
    copy = original;
  }
  EXPECT_EQ(copy.text(), "n * 2");
  EXPECT_EQ(copy.eval_int(vars().scope()), 2000);
  // An empty Scope knows no name.
  EXPECT_CONTAINS(error_of([&] { copy.eval(Scope{}); }), "unknown name 'n'");
  // Any callable serves as a scope.
  const Value seven = Value::integer(7);
  const Scope lambda = [&](std::string_view name) { return name == "n" ? &seven : nullptr; };
  EXPECT_EQ(copy.eval_int(lambda), 14);
}

TEST(Expr, ValueBasics) {
  EXPECT_EQ(Value(), Value::integer(0));
  EXPECT_EQ(Value::integer(-5).to_string(), "-5");
  EXPECT_EQ(Value::integer(kMin).to_string(), "-9223372036854775808");
  EXPECT_EQ(Value::real(0.5).to_string(), "0.5");
  EXPECT_EQ(Value::real(2.0).to_string(), "2.0");
  EXPECT_EQ(Value::real(-3.0).to_string(), "-3.0");
  EXPECT_EQ(Value::real(0.1).to_string(), "0.1");
  EXPECT_EQ(Value::real(1e20).to_string(), "1e+20");
  EXPECT_EQ(Value::real(1.5e-7).to_string(), "1.5e-07");
  EXPECT_EQ(Value::string("f16").to_string(), "f16");
  EXPECT_FALSE(Value::integer(1) == Value::real(1.0));
  EXPECT_FALSE(Value::string("1") == Value::integer(1));
  EXPECT_TRUE(Value::string("a") == Value::string("a"));
  EXPECT_EQ(Value::integer(3).as_real(), 3.0);
  EXPECT_EQ(Value::real(2.5).type_name(), "real");
  EXPECT_CONTAINS(error_of([] { Value::real(2.5).as_int(); }),
                  "expected an integer, found real 2.5");
  EXPECT_CONTAINS(error_of([] { Value::integer(2).as_string(); }), "expected a string");
  EXPECT_CONTAINS(error_of([] { Value::string("x").as_real(); }), "expected a number");
  // A real's text reads back as the same real.
  for (double d : {0.5, 2.0, 1e20, 1.5e-7, 0.1, 123456.789}) {
    EXPECT_EQ(Expression::parse(Value::real(d).to_string()).eval(Scope{}), Value::real(d));
  }
}

TEST(Expr, MapScope) {
  MapScope m;
  EXPECT_EQ(m.find("a"), nullptr);
  m.set("a", Value::integer(1));
  m.set("b.c", Value::string("x"));
  ASSERT_NE(m.find("a"), nullptr);
  EXPECT_EQ(*m.find("a"), Value::integer(1));
  m.set("a", Value::real(2.5));  // replaces
  EXPECT_EQ(*m.find("a"), Value::real(2.5));
  EXPECT_EQ(m.find("b"), nullptr);
  const Scope s = m.scope();
  EXPECT_EQ(*s("b.c"), Value::string("x"));
  EXPECT_EQ(s("zz"), nullptr);
  m.set("late", Value::integer(9));  // the scope refers to the map: sees later changes
  EXPECT_EQ(Expression::parse("late + a").eval(s), Value::real(11.5));
  const MapScope init{{"x", Value::integer(1)}, {"y", Value::integer(2)}};
  EXPECT_EQ(Expression::parse("x * 10 + y").eval_int(init.scope()), 12);
}

TEST(Expr, TemplateRendering) {
  const MapScope m = vars();
  const Template t = Template::parse("my::conv<{TILE_X}, {TILE_Y}, {T}>");
  EXPECT_EQ(t.render(m.scope()), "my::conv<16, 8, float>");
  EXPECT_EQ(t.names(), (std::vector<std::string>{"T", "TILE_X", "TILE_Y"}));
  EXPECT_EQ(t.text(), "my::conv<{TILE_X}, {TILE_Y}, {T}>");
  EXPECT_EQ(Template::parse("k<{TILE_X * 2}, {cdiv(n, 256)}>").render(m.scope()), "k<32, 4>");
  EXPECT_EQ(Template::parse("{{x}}").render(m.scope()), "{x}");
  EXPECT_EQ(Template::parse("a}}b{{c").render(m.scope()), "a}b{c");
  EXPECT_EQ(Template::parse("{{{n}}}").render(m.scope()), "{1000}");
  EXPECT_EQ(Template::parse("{ '}' + T + \"{\" }").render(m.scope()), "}float{");
  EXPECT_EQ(Template::parse("{half * 3}|{real(2)}|{dtype}").render(m.scope()), "1.5|2.0|bf16");
  EXPECT_EQ(Template::parse("plain").render(m.scope()), "plain");
  EXPECT_EQ(Template::parse("").render(m.scope()), "");
  EXPECT_EQ(Template().render(m.scope()), "");
  EXPECT_EQ(Template::parse("{n}{n}").render(m.scope()), "10001000");
  EXPECT_EQ(Template::parse("{n}{{").names(), (std::vector<std::string>{"n"}));
  std::string holes;
  for (std::size_t i = 0; i < kMaxHoles; ++i) holes += "{1}";
  EXPECT_EQ(Template::parse(holes).render(m.scope()), std::string(kMaxHoles, '1'));
}

TEST(Expr, TemplateErrors) {
  auto template_error = [](std::string_view text) {
    return error_of([&] { Template::parse(text); });
  };
  EXPECT_CONTAINS(template_error("k<{a"), "template 'k<{a': column 3: unclosed hole");
  EXPECT_CONTAINS(template_error("{'}"), "column 1: unclosed hole");
  EXPECT_CONTAINS(template_error("x{}"), "column 2: empty hole");
  EXPECT_CONTAINS(template_error("x{  }"), "column 2: empty hole");
  EXPECT_CONTAINS(template_error("a}b"), "column 2: unmatched '}'");
  EXPECT_CONTAINS(template_error("{a{b}}"), "column 3: '{' inside a hole");
  // A hole's syntax errors count columns in the template.
  EXPECT_CONTAINS(template_error("k<{a +* b}>"),
                  "template 'k<{a +* b}>': column 7: expected a value");
  EXPECT_CONTAINS(template_error("k<{foo(1)}>"), "column 4: unknown function 'foo'");
  std::string holes;
  for (std::size_t i = 0; i <= kMaxHoles; ++i) holes += "{1}";
  EXPECT_CONTAINS(template_error(holes), "more than 256 holes");
  EXPECT_CONTAINS(template_error(std::string(5000, 'x')), "more than the 4096 allowed");
  // Evaluation errors too.
  const MapScope m = vars();
  const Template t = Template::parse("k<{n / zero}, {nope}>");
  EXPECT_CONTAINS(error_of([&] { t.render(m.scope()); }),
                  "template 'k<{n / zero}, {nope}>': column 6: division by zero");
  const Template u = Template::parse("k<{n}, {nope}>");
  EXPECT_CONTAINS(error_of([&] { u.render(m.scope()); }), "column 9: unknown name 'nope'");
}

}  // namespace
}  // namespace ktune::expr
