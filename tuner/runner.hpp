// Where the tuning loop has its candidates measured: a CandidateRunner. The loop (tuner.cpp) and
// the worker process (worker.cpp) meet here and nowhere else: the loop holds a runner, the worker
// runs the in-process GPU runner on its side of the socket.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "platform/device.hpp"
#include "platform/nvrtc.hpp"
#include "platform/problem.hpp"
#include "tuner/evaluator.hpp"

namespace ktune {

class Device;
class Family;

// Candidates measured in a worker process: a fault or a hang then ends the worker (restarted
// for the next candidate), not the run.
struct WorkerOptions {
  // The worker's command line, to which the socket's descriptor number is appended; the ktune
  // command runs one as {"/proc/self/exe", "__worker"}. Empty: candidates run in this process,
  // where a fault loses the CUDA context and stops the run (it resumes when run again).
  std::vector<std::string> command;
  // Host-side limit on one launch of a candidate: max(floor, factor x the best time so far);
  // `first` until a candidate has been timed.
  double floor_s = 1.0;
  double factor = 50.0;
  double first_s = 20.0;
  // Inputs, the reference check and the worker's start (context, buffers) get this long.
  double setup_s = 300.0;
};

// Measures candidates for the tuning loop: on a GPU (compiled with NVRTC, verified, timed), or
// from a recording (replay), so that the loop, its database writes and its resume logic run the
// same way with or without a GPU.
class CandidateRunner {
 public:
  virtual ~CandidateRunner() = default;
  virtual const DeviceInfo& device() const = 0;
  // Whether candidates are compiled (on the thread pool) before measure() gets them.
  virtual bool compiles() const = 0;
  // Measures a candidate whose row is committed as in flight; `compiled` and `cache_key` when
  // compiles(). May fill row fields it knows better (registers as the driver counts them).
  virtual Measurement measure(std::size_t index, const Config& config,
                              const CompileResult* compiled, const std::string& cache_key,
                              ResultRecord& row) = 0;
  // Workers started again after a fault or a timeout (0 for a runner in this process).
  virtual int restarts() const { return 0; }
};

// Measures in this process on `device` (the database, if any, caches helper kernels).
std::unique_ptr<CandidateRunner> make_gpu_runner(Database* db, const Device& device,
                                                 const Family& family, const Problem& problem,
                                                 const TimingOptions& timing, std::uint64_t seed,
                                                 PhaseCallback on_phase);

struct Recording;
// Replays `recording` (its recorded outcome per configuration), after `delay_ms` per candidate
// as if a GPU were timing it.
std::unique_ptr<CandidateRunner> make_replay_runner(const Recording& recording, double delay_ms);

}  // namespace ktune
