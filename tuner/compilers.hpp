// NVRTC compiles in child processes. One process does not get many cores' worth of NVRTC: on an
// H100's 16 cores, `ktune check` compiled 9.1 kernels a second as one process of 16 threads and
// 25.9 as 16 processes of one thread (2.4 as one process of one; docs/GEMM.md, "Compile
// throughput"). A compile that crashes NVRTC or never ends ends its process, not the caller.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "platform/nvrtc.hpp"

namespace ktune {

class Compilers {
 public:
  // `processes` children (0: one per hardware thread) started at once with `command` + the number
  // of a descriptor (the ktune command runs {"/proc/self/exe", "__compiler"}). A compile that runs
  // past `limit_s` seconds has its child killed. Throws Error(kInternal) where a child cannot be
  // started.
  Compilers(std::vector<std::string> command, unsigned processes, double limit_s = 600);
  // Closes the children's sockets: they exit; one still compiling is killed, and so is one that
  // has answered nothing yet (it may still be warming NVRTC up: run_compiler).
  ~Compilers();
  Compilers(const Compilers&) = delete;
  Compilers& operator=(const Compilers&) = delete;

  // As ktune::compile(request), in an idle child (waiting for one). Thread-safe; as many calls
  // run at once as there are children. A child that dies or passes the limit throws
  // Error(kCompile) that says so and is started again for the next compile; a child that cannot
  // be started again throws Error(kInternal).
  CompileResult compile(const CompileRequest& request);

  unsigned size() const { return static_cast<unsigned>(slots_.size()); }
  // Children started again after one died or was killed.
  int restarts() const;
  // Kills the children compiling now; their compile() calls, and every later one, throw
  // Error(kCompile) that says the compile was abandoned. For a caller done with what they would
  // give (a tuning run at its end), which would otherwise wait for them.
  void abandon();

 private:
  struct Slot {
    pid_t pid = -1;
    int fd = -1;
    bool busy = false;
    bool answered = false;  // this child has answered a compile (it is past its warm-up)
  };
  std::vector<std::string> command_;
  double limit_s_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::vector<Slot> slots_;
  int restarts_ = 0;
  bool abandoned_ = false;
};

// The child's side: compiles what the parent sends on descriptor `fd` until it closes the socket;
// returns the exit status. Dies with the parent.
int run_compiler(int fd);

}  // namespace ktune
