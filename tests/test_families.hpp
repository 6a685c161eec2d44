// The family files of ktune's own tests (tests/families/), found as the CLI is: in
// $KTUNE_TEST_FAMILIES, else in families/ beside the test binary (the build copies them there),
// never at a path compiled in, so that a build copied to another folder still finds them.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "families/registry.hpp"

namespace ktune::testing {

inline std::string test_family_file(const std::string& name) {
  std::filesystem::path folder;
  if (const char* env = std::getenv("KTUNE_TEST_FAMILIES"); env && *env) {
    folder = env;
  } else {
    std::error_code ec;
    folder = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "families";
  }
  return (folder / name / (name + ".family.toml")).string();
}

// The planted-fault family (tests/families/faults), known to this process and to the tuner's
// worker processes it starts.
inline const Family& faults_family() {
  return add_family_file(test_family_file("faults"), /*for_child_processes=*/true);
}

}  // namespace ktune::testing
