// libFuzzer target: the parsers of user input (sizes, shapes, problem keys, configurations)
// either accept the text or throw ktune::Error; anything else (a crash, another exception,
// undefined behaviour under UBSan) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/util.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto attempt = [](auto&& f) {
    try {
      f();
    } catch (const ktune::Error&) {
      // A clear error is the expected answer to bad input.
    }
  };
  attempt([&] { ktune::parse_size(text, "--n"); });
  attempt([&] { ktune::parse_shape(text, 3, "--shape"); });
  attempt([&] { ktune::parse_config(text); });
  for (const ktune::Family* family : ktune::all_families()) {
    attempt([&] {
      // A key that passes validation is safe for the family's arithmetic: its default
      // configuration and the static constraints run on it without a fault (k=-5 once divided by
      // zero further down).
      const ktune::Problem p = family->parse_problem(text);
      (void)p.key();
      const ktune::DeviceLimits limits = ktune::DeviceLimits::for_arch(9, 0);
      const ktune::Config c = family->default_config(p, limits);
      (void)family->reject(c, p, limits);
      (void)family->reject_prefix(c, p, limits);
      (void)family->adapt(c, p, limits);
    });
    attempt([&] { family->check_config(family->normalize(ktune::parse_config(text))); });
  }
  return 0;
}
