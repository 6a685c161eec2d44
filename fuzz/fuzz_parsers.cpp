// libFuzzer target: the parsers of user input (sizes, shapes, problem keys, configurations)
// either accept the text or throw ktune::Error; anything else (a crash, another exception,
// undefined behaviour under UBSan) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "ktune/error.hpp"
#include "runtime/problem.hpp"
#include "runtime/util.hpp"
#include "templates/family.hpp"

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
      const ktune::Problem p = ktune::Problem::parse(family->name(), text);
      family->validate(p);
      (void)p.key();
    });
    attempt([&] { family->check_config(family->normalize(ktune::parse_config(text))); });
  }
  return 0;
}
