// Runs the ktune executable with arguments and captures exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace ktune::testing {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& env = "") {
  TempDir dir;
  std::string cmd = env + " " + shell_quote(KTUNE_CLI_PATH);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + dir.file("out") + " 2>" + dir.file("err") + " </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.out = slurp(dir.file("out"));
  r.err = slurp(dir.file("err"));
  return r;
}

}  // namespace ktune::testing
