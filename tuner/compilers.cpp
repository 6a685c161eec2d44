// NVRTC in child processes (tuner/compilers.hpp): the parent's slots and the child's loop.
#include "tuner/compilers.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>

#include "ktune/error.hpp"
#include "tuner/channel.hpp"

namespace ktune {
namespace {

enum class Msg : std::uint32_t {
  kCompile = 1,    // parent -> child: a CompileRequest
  kCompiled = 10,  // child -> parent: the CompileResult
  kFailed = 11,    // child -> parent: the compile's Error (code, message, details)
};

constexpr const char* kWho = "compiler process";

void write(channel::Writer& w, const CompileRequest& request) {
  w.str(request.source_name).str(request.source).u64(request.headers.size());
  for (const auto& [name, text] : request.headers) w.str(name).str(text);
  w.u64(request.name_expressions.size());
  for (const auto& n : request.name_expressions) w.str(n);
  w.u64(request.options.size());
  for (const auto& o : request.options) w.str(o);
  w.str(request.arch).str(request.sources_hash);
}

CompileRequest read_request(channel::Reader& r) {
  CompileRequest request;
  request.source_name = r.str();
  request.source = r.str();
  request.headers.resize(r.count());
  for (auto& [name, text] : request.headers) {
    name = r.str();
    text = r.str();
  }
  request.name_expressions.resize(r.count());
  for (auto& n : request.name_expressions) n = r.str();
  request.options.resize(r.count());
  for (auto& o : request.options) o = r.str();
  request.arch = r.str();
  request.sources_hash = r.str();
  return request;
}

std::string what_of(const CompileRequest& request) {
  std::string names;
  for (const auto& n : request.name_expressions) names += "\n  " + n;
  return request.source_name + " for " + request.arch + ", name expressions:" + names;
}

}  // namespace

Compilers::Compilers(std::vector<std::string> command, unsigned processes, double limit_s)
    : command_(std::move(command)), limit_s_(limit_s) {
  if (processes == 0) processes = std::max(1u, std::thread::hardware_concurrency());
  slots_.resize(processes);
  try {
    for (Slot& s : slots_) {
      const channel::Child child = channel::spawn(command_, "a compiler process");
      s.pid = child.pid;
      s.fd = child.fd;
    }
  } catch (...) {
    for (Slot& s : slots_) {
      channel::Child child{s.pid, s.fd};
      channel::reap(child, std::chrono::seconds(0));
    }
    throw;
  }
}

Compilers::~Compilers() {
  // Every socket closed first, so that the children exit together; then each is waited for. One
  // that never answered may still be warming up, which nobody needs any more: killed at once (a
  // tune that ends early, or fails, does not wait for it).
  for (Slot& s : slots_) {
    if (s.fd >= 0) ::close(s.fd), s.fd = -1;
    if (!s.answered && s.pid > 0) ::kill(s.pid, SIGKILL);
  }
  for (Slot& s : slots_) {
    channel::Child child{s.pid, -1};
    channel::reap(child, std::chrono::seconds(5));
  }
}

int Compilers::restarts() const {
  std::lock_guard lock(mutex_);
  return restarts_;
}

void Compilers::abandon() {
  {
    std::lock_guard lock(mutex_);
    abandoned_ = true;
    // A pid is cleared under the lock before its child is reaped (compile()'s end_child): one
    // seen here is not yet reaped, so not reused by another process.
    for (Slot& s : slots_)
      if (s.busy && s.pid > 0) ::kill(s.pid, SIGKILL);
  }
  idle_.notify_all();
}

namespace {

Error abandoned_error(const CompileRequest& request) {
  return Error(ErrorCode::kCompile, "compile abandoned: its caller no longer needs it",
               request.source_name + " for " + request.arch);
}

}  // namespace

CompileResult Compilers::compile(const CompileRequest& request) {
  std::size_t i = 0;
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (abandoned_) throw abandoned_error(request);
      for (i = 0; i < slots_.size() && slots_[i].busy; ++i) {
      }
      if (i < slots_.size()) break;
      idle_.wait(lock);
    }
    slots_[i].busy = true;
  }
  // The slot is this call's alone until it is marked idle again.
  Slot& slot = slots_[i];
  struct Release {
    Compilers& self;
    Slot& slot;
    ~Release() {
      {
        std::lock_guard lock(self.mutex_);
        slot.busy = false;
      }
      self.idle_.notify_one();
    }
  } release{*this, slot};

  if (slot.pid < 0) {
    const channel::Child child = channel::spawn(command_, "a compiler process");
    std::lock_guard lock(mutex_);
    slot.pid = child.pid;
    slot.fd = child.fd;
    slot.answered = false;
    ++restarts_;
  }
  auto end_child = [&](std::chrono::milliseconds grace) {
    channel::Child child;
    {
      std::lock_guard lock(mutex_);  // abandon() kills by this pid until it is cleared
      child = {slot.pid, slot.fd};
      slot.pid = -1;
      slot.fd = -1;
    }
    return channel::reap(child, grace);
  };
  auto was_abandoned = [&] {
    std::lock_guard lock(mutex_);
    return abandoned_;
  };
  if (was_abandoned()) throw abandoned_error(request);  // between taking the slot and here

  channel::Writer w;
  write(w, request);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(limit_s_));
  std::optional<std::pair<std::uint32_t, std::string>> frame;
  bool answered = true;  // false: the child is past the limit
  try {
    if (channel::send_frame(slot.fd, static_cast<std::uint32_t>(Msg::kCompile), w.data())) {
      answered = channel::wait_readable(slot.fd, deadline) != 0;
      if (answered) frame = channel::read_frame(slot.fd);
    }
  } catch (...) {
    // poll failed: the child's answer may still come, and would be read as the next request's.
    end_child(std::chrono::seconds(0));
    throw;
  }
  if (!answered) {
    end_child(std::chrono::seconds(0));  // killed: no grace
    char limit[32];
    std::snprintf(limit, sizeof limit, "%.3g s", limit_s_);
    throw Error(ErrorCode::kCompile,
                std::string("NVRTC did not finish within ") + limit + "; compiler process killed",
                what_of(request));
  }
  if (!frame) {
    const int status = end_child(std::chrono::seconds(10));
    if (was_abandoned()) throw abandoned_error(request);
    throw Error(ErrorCode::kCompile,
                "the compiler process died compiling " + request.source_name + ": " +
                    channel::describe_exit(status) + " (started again for the next compile)",
                what_of(request));
  }
  {
    std::lock_guard lock(mutex_);
    slot.answered = true;
  }
  channel::Reader r(frame->second, kWho);
  switch (static_cast<Msg>(frame->first)) {
    case Msg::kCompiled:
      return channel::read_compiled(r);
    case Msg::kFailed: {
      const auto code = static_cast<ErrorCode>(r.u64());
      std::string message = r.str();
      throw Error(code, message, r.str());
    }
    default:
      end_child(std::chrono::seconds(0));
      throw Error(ErrorCode::kInternal, "compiler process: unexpected message");
  }
}

int run_compiler(int fd) {
  if (!channel::die_with_parent()) return 1;  // the parent died before we could ask
  // NVRTC's first compile in a process costs more than its next ones; paid here, while the
  // parent is still building its space and its seeds, not in the first candidate's compile.
  if (const std::vector<int> archs = nvrtc_supported_archs(); !archs.empty())
    warm_nvrtc("sm_" + std::to_string(archs.back()));
  for (;;) {
    auto frame = channel::read_frame(fd);
    if (!frame) return 0;  // the parent is done
    if (static_cast<Msg>(frame->first) != Msg::kCompile) return 1;
    channel::Writer w;
    Msg reply = Msg::kCompiled;
    try {
      channel::Reader r(frame->second, kWho);
      const CompileResult compiled = compile(read_request(r));
      channel::write(w, compiled);
    } catch (const Error& e) {
      reply = Msg::kFailed;
      w = {};
      w.u64(static_cast<std::uint64_t>(e.code())).str(e.what()).str(e.details());
    } catch (const std::exception& e) {
      reply = Msg::kFailed;
      w = {};
      w.u64(static_cast<std::uint64_t>(ErrorCode::kInternal)).str(e.what()).str("");
    }
    if (!channel::send_frame(fd, static_cast<std::uint32_t>(reply), w.data())) return 0;
  }
}

}  // namespace ktune
