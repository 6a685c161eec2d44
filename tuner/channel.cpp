// Child processes and frames over a socket pair (tuner/channel.hpp).
#include "tuner/channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "ktune/error.hpp"

extern char** environ;

namespace ktune::channel {

Writer& Writer::u64(std::uint64_t v) {
  append(&v, sizeof v);
  return *this;
}

Writer& Writer::f64(double v) {
  append(&v, sizeof v);
  return *this;
}

Writer& Writer::str(const std::string& s) {
  u64(s.size());
  append(s.data(), s.size());
  return *this;
}

Writer& Writer::bytes(const std::vector<char>& b) {
  u64(b.size());
  append(b.data(), b.size());
  return *this;
}

std::uint64_t Reader::u64() {
  std::uint64_t v;
  take(&v, sizeof v);
  return v;
}

double Reader::f64() {
  double v;
  take(&v, sizeof v);
  return v;
}

std::string Reader::str() {
  const std::uint64_t n = u64();
  need(n);
  std::string s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

std::vector<char> Reader::bytes() {
  const std::string s = str();
  return {s.begin(), s.end()};
}

std::size_t Reader::count() {
  const std::uint64_t n = u64();
  if (n > (data_.size() - pos_) / 8)
    throw Error(ErrorCode::kInternal, std::string(who_) + ": truncated message");
  return static_cast<std::size_t>(n);
}

void Reader::need(std::uint64_t n) const {
  if (n > data_.size() - pos_)
    throw Error(ErrorCode::kInternal, std::string(who_) + ": truncated message");
}

void Reader::take(void* p, std::size_t n) {
  need(n);
  std::memcpy(p, data_.data() + pos_, n);
  pos_ += n;
}

void write(Writer& w, const CompileResult& compiled) {
  w.bytes(compiled.cubin).u64(compiled.lowered_names.size());
  for (const auto& name : compiled.lowered_names) w.str(name);
  w.u64(compiled.resources.size());
  for (const auto& r : compiled.resources)
    w.str(r.mangled_name)
        .u64(static_cast<std::uint64_t>(r.registers))
        .u64(static_cast<std::uint64_t>(r.barriers))
        .u64(static_cast<std::uint64_t>(r.smem_static))
        .u64(static_cast<std::uint64_t>(r.stack_frame))
        .u64(static_cast<std::uint64_t>(r.spill_stores))
        .u64(static_cast<std::uint64_t>(r.spill_loads));
  w.str(compiled.log).f64(compiled.compile_ms);
}

CompileResult read_compiled(Reader& r) {
  CompileResult compiled;
  compiled.cubin = r.bytes();
  compiled.lowered_names.resize(r.count());
  for (auto& name : compiled.lowered_names) name = r.str();
  compiled.resources.resize(r.count());
  for (auto& res : compiled.resources) {
    res.mangled_name = r.str();
    res.registers = static_cast<int>(r.u64());
    res.barriers = static_cast<int>(r.u64());
    res.smem_static = static_cast<int>(r.u64());
    res.stack_frame = static_cast<int>(r.u64());
    res.spill_stores = static_cast<int>(r.u64());
    res.spill_loads = static_cast<int>(r.u64());
  }
  compiled.log = r.str();
  compiled.compile_ms = r.f64();
  return compiled;
}

bool send_frame(int fd, std::uint32_t type, const std::string& payload) {
  std::string frame(12, '\0');
  const std::uint64_t n = payload.size();
  std::memcpy(frame.data(), &type, 4);
  std::memcpy(frame.data() + 4, &n, 8);
  frame += payload;
  std::size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t k = ::send(fd, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    sent += static_cast<std::size_t>(k);
  }
  return true;
}

namespace {

bool read_exact(int fd, void* p, std::size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t k = ::read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

}  // namespace

std::optional<std::pair<std::uint32_t, std::string>> read_frame(int fd) {
  char header[12];
  if (!read_exact(fd, header, sizeof header)) return std::nullopt;
  std::uint32_t t;
  std::uint64_t n;
  std::memcpy(&t, header, 4);
  std::memcpy(&n, header + 4, 8);
  if (n > (std::uint64_t{1} << 32)) return std::nullopt;  // not our protocol
  std::string payload(n, '\0');
  if (n && !read_exact(fd, payload.data(), n)) return std::nullopt;
  return std::make_pair(t, std::move(payload));
}

int wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return 0;
    pollfd p{fd, POLLIN, 0};
    const int k = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1 << 30)));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw Error(ErrorCode::kInternal, std::string("poll: ") + std::strerror(errno));
    if (k > 0) return 1;
  }
}

Child spawn(const std::vector<std::string>& command, const std::string& what) {
  if (command.empty()) throw Error(ErrorCode::kInternal, "cannot start " + what + ": no command");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(ErrorCode::kInternal, std::string("socketpair: ") + std::strerror(errno));
  // The child's end moves to descriptor 3; from a descriptor above it so that dup2 clears
  // close-on-exec (a dup2 onto itself would not).
  const int child_end = ::fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
  ::close(sv[1]);
  if (child_end < 0) {
    const int e = errno;
    ::close(sv[0]);
    throw Error(ErrorCode::kInternal, "cannot start " + what + ": " + std::strerror(e));
  }
  constexpr int kChildFd = 3;
  std::vector<std::string> args = command;
  args.push_back(std::to_string(kChildFd));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, child_end, kChildFd);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(child_end);
  if (rc != 0) {
    ::close(sv[0]);
    throw Error(ErrorCode::kInternal,
                "cannot start " + what + " " + command.front() + ": " + std::strerror(rc));
  }
  return {pid, sv[0]};
}

int reap(Child& child, std::chrono::milliseconds grace) {
  if (child.fd >= 0) ::close(child.fd), child.fd = -1;
  if (child.pid < 0) return 0;
  int wstatus = 0;
  const auto until = std::chrono::steady_clock::now() + grace;
  for (;;) {
    const pid_t r = ::waitpid(child.pid, &wstatus, WNOHANG);
    if (r == child.pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= until) {
      ::kill(child.pid, SIGKILL);
      while (::waitpid(child.pid, &wstatus, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  child.pid = -1;
  return wstatus;
}

std::string describe_exit(int wstatus) {
  if (WIFSIGNALED(wstatus)) {
    const int sig = WTERMSIG(wstatus);
    return "signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  if (WIFEXITED(wstatus)) return "exit status " + std::to_string(WEXITSTATUS(wstatus));
  return "status " + std::to_string(wstatus);
}

bool die_with_parent() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  return ::getppid() != 1;
}

}  // namespace ktune::channel
