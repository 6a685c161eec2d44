// libFuzzer target: family files. The input is a family file's text, read beside a fixed kernel
// source; it either loads or throws ktune::Error. A family that loads is exercised on its check
// problems: the constraints, the launch geometry, the names and the default configuration run
// without a fault; the text is also read as a built-in family's file. Anything else (a crash,
// another exception, undefined behaviour) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "families/file_family.hpp"
#include "ktune/error.hpp"

namespace {

// A folder with a source the fuzzed files may name ("k.cuh"), made once per process and removed
// as it exits (a fuzzing run starts many).
const std::string& folder() {
  // The names the exit handler reads: plain arrays, which no destructor runs before it.
  static char made[] = "/tmp/ktune-fuzz-family-XXXXXX";
  static char source[sizeof made + 6];
  static const std::string path = [] {
    if (!::mkdtemp(made)) std::abort();
    std::snprintf(source, sizeof source, "%s/k.cuh", made);
    std::ofstream(source) << "template <int A> __global__ void k(float*) {}\n";
    std::atexit([] {
      std::remove(source);
      ::rmdir(made);
    });
    return std::string(made);
  }();
  return path;
}

// The same text as a built-in family's file (no launch, arguments, verification or default: the
// C++ beside it says them): it loads or throws, and its rules and names run on the check problems
// with every parameter at its first value.
void builtin(const std::string& text) {
  std::unique_ptr<ktune::Family> family;
  try {
    family = ktune::parse_builtin_family_file(text, "families/f/f.family.toml");
  } catch (const ktune::Error&) {
    return;
  }
  const ktune::DeviceLimits limits = ktune::DeviceLimits::for_arch(9, 0);
  ktune::Config c;
  for (const auto& p : family->params()) c[p.name] = p.values.front();
  for (const ktune::Problem& p : family->check_problems()) {
    (void)family->reject(c, p, limits);  // reports, never throws
    try {
      (void)family->name_expressions(c, p);
      (void)family->work_of(p, limits);
    } catch (const ktune::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  builtin(text);
  std::unique_ptr<ktune::Family> family;
  try {
    family = ktune::parse_family_file(text, folder() + "/f.family.toml");
  } catch (const ktune::Error&) {
    return 0;  // a clear error is the expected answer to a bad file
  }
  const ktune::DeviceLimits limits = ktune::DeviceLimits::for_arch(9, 0);
  for (const ktune::Problem& p : family->check_problems()) {
    try {
      family->validate(p);
    } catch (const ktune::Error&) {
      continue;
    }
    for (const ktune::Config& c : {family->default_config(p, limits)}) {
      (void)family->reject(c, p, limits);  // reports, never throws
      (void)family->block_threads(c, p);
      try {
        (void)family->name_expressions(c, p);
        (void)family->reference_names(p);
      } catch (const ktune::Error&) {
      }
    }
  }
  return 0;
}
