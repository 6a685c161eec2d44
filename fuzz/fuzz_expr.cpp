// libFuzzer target: family-file expressions and name templates either parse and evaluate or throw
// ktune::Error; anything else (a crash, a stack overflow, another exception, undefined behaviour
// under UBSan, a value that does not read back) is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>

#include "core/expr.hpp"
#include "ktune/error.hpp"

namespace {

using ktune::expr::Expression;
using ktune::expr::MapScope;
using ktune::expr::Template;
using ktune::expr::Value;

// Names a family file sees, with the extremes that arithmetic trips on.
const MapScope& scope() {
  static const MapScope* s = new MapScope{
      {"a", Value::integer(3)},
      {"b", Value::integer(-7)},
      {"zero", Value::integer(0)},
      {"n", Value::integer(1 << 20)},
      {"big", Value::integer(std::numeric_limits<std::int64_t>::max())},
      {"small", Value::integer(std::numeric_limits<std::int64_t>::min())},
      {"TILE_X", Value::integer(16)},
      {"device.max_threads_per_block", Value::integer(1024)},
      {"x", Value::real(0.5)},
      {"huge", Value::real(1e308)},
      {"tiny", Value::real(-4.9e-324)},
      {"T", Value::string("float")},
      {"dtype", Value::string("bf16")},
      {"empty", Value::string("")},
  };
  return *s;
}

// A number's text parses back to the same number (the text of templates, the keys of tables).
void check_reads_back(const Value& v) {
  if (v.is_string() || (v.is_int() && v.as_int() == std::numeric_limits<std::int64_t>::min())) {
    return;  // strings render raw; INT64_MIN has no literal
  }
  try {
    if (!(Expression::parse(v.to_string()).eval(ktune::expr::Scope{}) == v)) std::abort();
  } catch (const ktune::Error&) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const ktune::expr::Scope names = scope().scope();
  auto attempt = [](auto&& f) {
    try {
      f();
    } catch (const ktune::Error&) {
      // A clear error is the expected answer to bad input.
    }
  };
  attempt([&] {
    const Expression e = Expression::parse(text);
    (void)e.names();
    attempt([&] { check_reads_back(e.eval(names)); });
    attempt([&] { (void)e.eval_int(names); });
    attempt([&] { (void)e.eval_real(names); });
    attempt([&] { (void)e.eval_bool(names); });
  });
  attempt([&] {
    const Template t = Template::parse(text);
    (void)t.names();
    (void)t.render(names);
  });
  return 0;
}
