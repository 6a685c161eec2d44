// Worker processes for the tuner: spawn, frame protocol, watchdog (parent) and serve loop (worker).
#include "tuner/worker.hpp"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>

#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/channel.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/runner.hpp"

namespace ktune {
namespace {

using Clock = std::chrono::steady_clock;

enum class Msg : std::uint32_t {
  kInit = 1,     // parent -> worker: what to measure and where
  kMeasure = 2,  // parent -> worker: one compiled candidate
  kReady = 10,   // worker -> parent: context and buffers made
  kPhase = 11,   // worker -> parent: EvalPhase and its launches
  kResult = 12,  // worker -> parent: the Measurement
  kFailed = 13,  // worker -> parent: an error that is not the candidate's (code, message)
};

using channel::Reader;
using channel::Writer;

constexpr const char* kWho = "tuning worker";

bool send_frame(int fd, Msg type, const std::string& payload) {
  return channel::send_frame(fd, static_cast<std::uint32_t>(type), payload);
}

std::optional<std::pair<Msg, std::string>> read_frame(int fd) {
  auto frame = channel::read_frame(fd);
  if (!frame) return std::nullopt;
  return std::make_pair(static_cast<Msg>(frame->first), std::move(frame->second));
}

const char* phase_name(EvalPhase p) {
  switch (p) {
    case EvalPhase::kRun:
      return "first run";
    case EvalPhase::kVerify:
      return "check against the reference";
    case EvalPhase::kTime:
      return "timed runs";
  }
  return "?";
}

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

class WorkerRunner final : public CandidateRunner {
 public:
  WorkerRunner(const DeviceInfo& device, const Family& family, const Problem& problem,
               std::string db_path, const WorkerOptions& worker, const TimingOptions& timing,
               std::uint64_t seed)
      : device_(device),
        family_(family.name()),
        problem_(problem.key()),
        db_path_(std::move(db_path)),
        worker_(worker),
        timing_(timing),
        seed_(seed) {
    // Started now, so that the worker makes its context and buffers while the first candidates
    // compile; measure() waits for it to be ready.
    launch();
  }
  ~WorkerRunner() override { stop(); }

  const DeviceInfo& device() const override { return device_; }
  bool compiles() const override { return true; }
  int restarts() const override { return starts_ > 0 ? starts_ - 1 : 0; }

  Measurement measure(std::size_t index, const Config& config, const CompileResult* compiled,
                      const std::string&, ResultRecord& row) override {
    if (pid_ < 0) launch();
    if (!ready_) await_ready();
    Writer w;
    w.u64(index).str(to_string(config));
    channel::write(w, *compiled);
    Measurement m;
    if (!send_frame(fd_, Msg::kMeasure, w.data())) return died("before the candidate was sent");

    std::string phase = "inputs";
    double limit = worker_.setup_s;
    auto deadline = Clock::now() + seconds(limit);
    for (;;) {
      const auto frame = wait_frame(deadline);
      if (!frame) {
        if (pid_ < 0) return died("during its " + phase);
        kill_worker();
        m.status = status::kTimeout;
        m.message = "did not finish its " + phase + " within " + fmt_seconds(limit) + " (" +
                    limit_rule() + "); worker killed";
        return m;
      }
      Reader r(frame->second, kWho);
      switch (frame->first) {
        case Msg::kPhase: {
          const auto p = static_cast<EvalPhase>(r.u64());
          const auto launches = static_cast<int>(r.u64());
          phase = phase_name(p);
          limit = p == EvalPhase::kVerify ? worker_.setup_s
                                          : launch_limit() * launches + worker_.floor_s;
          deadline = Clock::now() + seconds(limit);
          break;
        }
        case Msg::kResult: {
          m.status = r.str();
          m.message = r.str();
          m.timing.min_ms = r.f64();
          m.timing.median_ms = r.f64();
          m.timing.max_ms = r.f64();
          m.timing.repeats = static_cast<int>(r.u64());
          m.metric = r.f64();
          row.registers = static_cast<int>(r.u64());
          if (r.u64()) {
            // A sticky error: the worker's context is lost and it exits; the run goes on.
            reap(std::chrono::seconds(10));
            m.message += " (worker restarted)";
          }
          if (m.status == status::kOk && (best_ms_ == 0 || m.timing.median_ms < best_ms_))
            best_ms_ = m.timing.median_ms;
          return m;
        }
        case Msg::kFailed: {
          const auto code = static_cast<ErrorCode>(r.u64());
          const std::string message = r.str();
          kill_worker();
          throw Error(code, "tuning worker: " + message);
        }
        default:
          kill_worker();
          throw Error(ErrorCode::kInternal, "tuning worker: unexpected message");
      }
    }
  }

 private:
  static std::chrono::nanoseconds seconds(double s) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
  }
  double launch_limit() const {
    if (best_ms_ <= 0) return worker_.first_s;
    return std::max(worker_.floor_s, worker_.factor * best_ms_ * 1e-3);
  }

  std::string limit_rule() const {
    char buf[160];
    if (best_ms_ <= 0)
      std::snprintf(buf, sizeof buf, "%.3g s per launch until a candidate has been timed",
                    worker_.first_s);
    else
      std::snprintf(buf, sizeof buf, "per launch max(%.3g s, %.3g x the best time %.4g ms)",
                    worker_.floor_s, worker_.factor, best_ms_);
    return buf;
  }

  Measurement died(const std::string& when) {
    Measurement m;
    const int wstatus = reap(std::chrono::seconds(10));
    m.status = status::kFault;
    m.message =
        "worker died " + when + ": " + channel::describe_exit(wstatus) + " (worker restarted)";
    return m;
  }

  // The next frame, or nullopt at the deadline (worker still running) or when the worker is gone
  // (then pid_ < 0 after reaping it).
  std::optional<std::pair<Msg, std::string>> wait_frame(Clock::time_point deadline) {
    if (!channel::wait_readable(fd_, deadline)) return std::nullopt;
    auto frame = read_frame(fd_);
    if (!frame) {
      last_exit_ = reap(std::chrono::seconds(10));
      return std::nullopt;
    }
    return frame;
  }

  // Spawns a worker and sends it the problem; await_ready() collects its answer.
  void launch() {
    channel::Child child = channel::spawn(worker_.command, "the tuning worker");
    pid_ = child.pid;
    fd_ = child.fd;
    ++starts_;
    Writer w;
    w.str(family_).str(problem_).u64(static_cast<std::uint64_t>(device_.ordinal)).str(db_path_);
    w.u64(static_cast<std::uint64_t>(timing_.warmup))
        .u64(static_cast<std::uint64_t>(timing_.repeats))
        .u64(timing_.flush_l2 ? 1 : 0)
        .f64(timing_.budget_ms)
        .u64(static_cast<std::uint64_t>(timing_.min_repeats))
        .u64(seed_);
    ready_ = false;
    init_sent_ = send_frame(fd_, Msg::kInit, w.data());
  }

  void await_ready() {
    if (!init_sent_) {
      const int ws = reap(std::chrono::seconds(10));
      throw Error(ErrorCode::kInternal,
                  "the tuning worker exited at start: " + channel::describe_exit(ws));
    }
    const auto frame = wait_frame(Clock::now() + seconds(worker_.setup_s));
    if (frame && frame->first == Msg::kReady) {
      ready_ = true;
      return;
    }
    if (frame && frame->first == Msg::kFailed) {
      Reader r(frame->second, kWho);
      const auto code = static_cast<ErrorCode>(r.u64());
      const std::string message = r.str();
      kill_worker();
      throw Error(code, message);
    }
    const bool gone = pid_ < 0;
    kill_worker();
    throw Error(ErrorCode::kInternal,
                gone ? "the tuning worker exited at start: " + channel::describe_exit(last_exit_)
                     : "the tuning worker did not start within " + fmt_seconds(worker_.setup_s));
  }

  // Waits up to `grace` for the worker to exit (it does after a sticky error or EOF), then kills
  // it. Returns its wait status (0 if there was no worker).
  int reap(std::chrono::milliseconds grace) {
    if (pid_ < 0 && fd_ < 0) return last_exit_;
    channel::Child child{pid_, fd_};
    const bool had_child = pid_ >= 0;
    const int wstatus = channel::reap(child, grace);
    pid_ = -1;
    fd_ = -1;
    ready_ = false;
    if (had_child) last_exit_ = wstatus;
    return last_exit_;
  }
  void kill_worker() {
    if (pid_ >= 0) ::kill(pid_, SIGKILL);
    reap(std::chrono::seconds(0));
  }
  void stop() {
    // Closing the socket ends the worker's loop; a worker stuck in a kernel is killed.
    reap(std::chrono::seconds(5));
  }

  DeviceInfo device_;
  std::string family_, problem_, db_path_;
  WorkerOptions worker_;
  TimingOptions timing_;
  std::uint64_t seed_;
  pid_t pid_ = -1;
  int fd_ = -1;
  int starts_ = 0;
  int last_exit_ = 0;
  bool init_sent_ = false;
  bool ready_ = false;
  double best_ms_ = 0;
};

}  // namespace

std::unique_ptr<CandidateRunner> make_worker_runner(const DeviceInfo& device, const Family& family,
                                                    const Problem& problem,
                                                    const std::string& db_path,
                                                    const WorkerOptions& worker,
                                                    const TimingOptions& timing,
                                                    std::uint64_t seed) {
  if (worker.command.empty())
    throw Error(ErrorCode::kInvalidArgument, "make_worker_runner: no worker command");
  return std::make_unique<WorkerRunner>(device, family, problem, db_path, worker, timing, seed);
}

int run_tuning_worker(int fd) {
  if (!channel::die_with_parent()) return 1;  // the parent died before we could ask
  auto fail = [fd](ErrorCode code, const std::string& message) {
    Writer w;
    w.u64(static_cast<std::uint64_t>(code)).str(message);
    send_frame(fd, Msg::kFailed, w.data());
    return 1;
  };
  auto init = read_frame(fd);
  if (!init || init->first != Msg::kInit) return 1;
  std::unique_ptr<Device> device;
  std::unique_ptr<Database> db;
  std::unique_ptr<CandidateRunner> runner;
  std::unique_ptr<Problem> problem;
  const Family* family = nullptr;
  try {
    Reader r(init->second, kWho);
    family = &find_family(r.str());
    problem = std::make_unique<Problem>(family->parse_problem(r.str()));
    const int ordinal = static_cast<int>(r.u64());
    const std::string db_path = r.str();
    TimingOptions timing;
    timing.warmup = static_cast<int>(r.u64());
    timing.repeats = static_cast<int>(r.u64());
    timing.flush_l2 = r.u64() != 0;
    timing.budget_ms = r.f64();
    timing.min_repeats = static_cast<int>(r.u64());
    const std::uint64_t seed = r.u64();
    device = std::make_unique<Device>(ordinal);
    device->make_current();
    if (!db_path.empty()) {
      try {
        db = std::make_unique<Database>(db_path);
      } catch (const Error&) {
        db.reset();  // the helper kernels are then compiled, not read from the cache
      }
    }
    runner = make_gpu_runner(
        db.get(), *device, *family, *problem, timing, seed, [fd](EvalPhase p, int launches) {
          Writer w;
          w.u64(static_cast<std::uint64_t>(p)).u64(static_cast<std::uint64_t>(launches));
          send_frame(fd, Msg::kPhase, w.data());
        });
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const std::exception& e) {
    return fail(ErrorCode::kInternal, e.what());
  }
  if (!send_frame(fd, Msg::kReady, {})) return 1;

  for (;;) {
    auto frame = read_frame(fd);
    if (!frame) return 0;  // the parent is done
    if (frame->first != Msg::kMeasure) return fail(ErrorCode::kInternal, "unexpected message");
    Measurement m;
    ResultRecord row;
    try {
      Reader r(frame->second, kWho);
      const std::size_t index = r.u64();
      const Config config = parse_config(r.str());
      const CompileResult compiled = channel::read_compiled(r);
      m = runner->measure(index, config, &compiled, {}, row);
    } catch (const Error& e) {
      return fail(e.code(), e.what());
    } catch (const std::exception& e) {
      return fail(ErrorCode::kInternal, e.what());
    }
    Writer w;
    w.str(m.status).str(m.message);
    w.f64(m.timing.min_ms).f64(m.timing.median_ms).f64(m.timing.max_ms);
    w.u64(static_cast<std::uint64_t>(m.timing.repeats)).f64(m.metric);
    w.u64(static_cast<std::uint64_t>(row.registers)).u64(m.context_lost ? 1 : 0);
    if (!send_frame(fd, Msg::kResult, w.data())) return 0;
    // After a sticky error this process can run nothing more on the GPU: exit; the parent
    // starts a fresh worker for the next candidate.
    if (m.context_lost) return 0;
  }
}

}  // namespace ktune
