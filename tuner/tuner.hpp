// The tuning loop: space -> strategy -> compile (thread pool) -> verify and time -> database.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "runtime/device.hpp"
#include "runtime/nvrtc.hpp"
#include "runtime/problem.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/space.hpp"

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

struct TuneOptions {
  std::string strategy = "auto";  // auto: exhaustive when the space fits the budget, else model
  std::uint64_t seed = 1;
  std::size_t max_evals = 400;  // 0: no limit
  double max_seconds = 0;       // 0: no limit
  // Stop after this many evaluations in a row without a new best 0.5% faster (0: no limit).
  std::size_t patience = 0;
  unsigned compile_threads = 0;  // 0: one per hardware thread
  TimingOptions timing;
  // A progress line on stderr: redrawn on a terminal, a plain line every 30 s in a log.
  bool progress = true;
  // Plain lines even on a terminal (several GPUs tune at once), each starting with the label.
  bool progress_plain = false;
  std::string progress_label;      // e.g. "[GPU 1] "
  std::size_t transfer_seeds = 8;  // winners of neighbouring problems evaluated first
  SearchSpace::Only only;          // parameters held to some of their values
  WorkerOptions worker;
};

struct TuneSummary {
  std::int64_t run_id = 0;
  std::string strategy;
  std::string problem;
  std::size_t space_size = 0;
  std::size_t already_done = 0;  // evaluated by earlier runs, skipped
  std::size_t seeded = 0;        // winners of neighbouring problems evaluated first
  std::size_t evaluated = 0;     // in this run
  std::size_t ok = 0;
  std::size_t failed = 0;
  int crashed_recovered = 0;  // rows left in flight by a killed run, now marked crashed
  std::string stop_reason;    // space exhausted, evaluation budget, time budget, context lost
  double seconds = 0;
  double compile_seconds = 0;  // summed over compile threads
  std::size_t compiled = 0;    // NVRTC compiles (candidates proposed, run or not)
  std::size_t compile_threads = 0;
  double gpu_wait_seconds = 0;       // the GPU thread waiting for a compile
  int worker_restarts = 0;           // workers replaced after a fault or a timeout
  std::optional<ResultRecord> best;  // best ok result for the problem (this run or earlier)
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

// Tunes one problem. Every candidate is written as soon as it is measured; a run stopped at any
// point resumes where it stopped (evaluated configurations are skipped).
TuneSummary tune(Database& db, const Device& device, const Family& family, const Problem& problem,
                 const TuneOptions& options);
TuneSummary tune(Database& db, CandidateRunner& runner, const Family& family,
                 const Problem& problem, const TuneOptions& options);

}  // namespace ktune
