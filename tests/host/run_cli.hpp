// Runs the ktune executable with arguments and captures exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.hpp"
#include "tests/ktune_cli.hpp"

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

// `prefix` goes before the command in the shell line: variables (A=1), a wrapper (timeout 30,
// setpriv ...), or commands ending with ';' (ulimit -f 16;). `stdout_to`: where standard output
// goes instead of the captured file (e.g. /dev/full).
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& prefix = "",
                         const std::string& stdout_to = "") {
  TempDir dir;
  // $KTUNE_FAMILY_FILES is how this process hands the family files it registered
  // (testing::faults_family) to the tuner's worker processes; the ktune under test sees only the
  // family files its arguments (or `prefix`) name. Inherited, it made the planted-fault family
  // known to every later command of a whole-suite run ("n=1024" became a valid problem of it).
  std::string cmd = "unset KTUNE_FAMILY_FILES; " + prefix + " " + shell_quote(ktune_cli());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + (stdout_to.empty() ? dir.file("out") : stdout_to) + " 2>" + dir.file("err") +
         " </dev/null";
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
