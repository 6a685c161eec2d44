// Where the tests find the ktune executable: $KTUNE_CLI, else beside the test binary or one
// folder above it (the build tree's layout), never at a path compiled in, so that a build copied
// to another folder (as on a GPU machine) still finds its own executable.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ktune::testing {

inline const std::string& ktune_cli() {
  static const std::string path = [] {
    if (const char* env = std::getenv("KTUNE_CLI"); env && *env) return std::string(env);
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec)
      for (const auto& candidate :
           {self.parent_path() / "ktune", self.parent_path().parent_path() / "ktune"})
        if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
    return std::string("ktune-not-found-beside-the-tests (set KTUNE_CLI)");
  }();
  return path;
}

}  // namespace ktune::testing
