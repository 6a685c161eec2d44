// What the tuner's child processes (the tuning worker, the compilers) share: starting a child on
// one end of a socket pair, length-prefixed frames over it, and reaping it. Each protocol (its
// message types, what a frame holds) stays with its own module: worker.cpp, compilers.cpp.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "platform/nvrtc.hpp"

namespace ktune::channel {

// A frame's payload, written and read in order: integers as 8 bytes, strings length-prefixed.
class Writer {
 public:
  Writer& u64(std::uint64_t v);
  Writer& f64(double v);
  Writer& str(const std::string& s);
  Writer& bytes(const std::vector<char>& b);
  const std::string& data() const { return data_; }

 private:
  void append(const void* p, std::size_t n) { data_.append(static_cast<const char*>(p), n); }
  std::string data_;
};

// Throws Error(kInternal, "<who>: truncated message") where the payload ends early.
class Reader {
 public:
  Reader(const std::string& data, const char* who) : data_(data), who_(who) {}
  std::uint64_t u64();
  double f64();
  std::string str();
  std::vector<char> bytes();
  // A count of elements that follow, each of at least 8 bytes: more than the payload can hold
  // throws (a corrupt count does not allocate).
  std::size_t count();

 private:
  void need(std::uint64_t n) const;
  void take(void* p, std::size_t n);
  const std::string& data_;
  const char* who_;
  std::size_t pos_ = 0;
};

// A compile's result as a frame carries it (the CUBIN, names, ptxas resources and log).
void write(Writer& w, const CompileResult& compiled);
CompileResult read_compiled(Reader& r);

// False when the peer is gone (a dead peer does not kill the sender with SIGPIPE).
bool send_frame(int fd, std::uint32_t type, const std::string& payload);
// nullopt when the peer closed the socket or died, or sent what is not a frame.
std::optional<std::pair<std::uint32_t, std::string>> read_frame(int fd);
// Whether a frame can be read from fd before `deadline`: 1 yes (or the peer is gone: read_frame
// then says so), 0 not before the deadline. Throws Error(kInternal) where poll fails.
int wait_readable(int fd, std::chrono::steady_clock::time_point deadline);

// A child started with `command` + the number of its end of a socket pair (descriptor 3).
struct Child {
  pid_t pid = -1;
  int fd = -1;  // the parent's end
};
// Throws Error(kInternal, "cannot start <what> <command>: <reason>").
Child spawn(const std::vector<std::string>& command, const std::string& what);
// Closes the parent's end, waits up to `grace` for the child to exit, then kills it; returns its
// wait status (0 where there was no child). Leaves `child` empty.
int reap(Child& child, std::chrono::milliseconds grace);
// "signal 11 (Segmentation fault)", "exit status 1".
std::string describe_exit(int wstatus);

// For the child's side: asks to die with the parent; false where the parent is already gone.
bool die_with_parent();

}  // namespace ktune::channel
