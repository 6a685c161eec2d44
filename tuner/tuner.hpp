// The tuning loop: space -> strategy -> compile (thread pool) -> a runner verifies and times ->
// database.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "platform/device.hpp"
#include "platform/nvrtc.hpp"
#include "platform/problem.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/runner.hpp"
#include "tuner/space.hpp"

namespace ktune {

class Device;
class Family;

struct TuneOptions {
  std::string strategy = "auto";  // auto: exhaustive when the space fits the budget, else model
  std::uint64_t seed = 1;
  std::size_t max_evals = 400;  // 0: no limit
  double max_seconds = 0;       // 0: no limit
  // Stop after this many evaluations in a row without a new best 0.5% faster (0: no limit).
  std::size_t patience = 0;
  unsigned compile_threads = 0;  // 0: one per hardware thread
  // Each compile thread compiles in a child process of its own, started with this command (+ a
  // descriptor number; the ktune command passes {"/proc/self/exe", "__compiler"}): NVRTC gets
  // the cores that it does not get as threads of one process (tuner/compilers.hpp). Empty: the
  // compile threads call NVRTC in this process.
  std::vector<std::string> compiler_command;
  // 20 timed runs a candidate, fewer for one of more than 10 ms (TimingOptions::budget_ms).
  TimingOptions timing{.warmup = 3, .repeats = 20, .flush_l2 = true, .budget_ms = 200};
  // A progress line on stderr: redrawn on a terminal, a plain line every 30 s in a log.
  bool progress = true;
  // Plain lines even on a terminal (several GPUs tune at once), each starting with the label.
  bool progress_plain = false;
  std::string progress_label;      // e.g. "[GPU 1] "
  std::size_t transfer_seeds = 8;  // winners of neighbouring problems evaluated first
  // The first of those seeds: the runtime's answer for the problem (its lookup chain) and the
  // next 3 of its predicted ranking, after this problem's own winners (earlier templates, other
  // GPUs of the architecture).
  bool start_from_lookup = true;
  // Measure the winners (of this GPU's architecture) of every other problem the family's model
  // can carry to this one (GEMM: the same dtype, any op), adapted, and nothing else: the
  // measurements the runtime's predicted lookup step ranks from (docs/GEMM.md, "Cross
  // measurements").
  bool measure_winners = false;
  SearchSpace::Only only;  // parameters held to some of their values
  WorkerOptions worker;
  // Compile each kernel once: candidates are read from the database's binary cache when another
  // run (of any problem: a GEMM kernel depends on its types, ops and parameters only) compiled
  // them, and what this run compiles is kept there, within binary_cache_bytes of code (the oldest
  // go first).
  bool reuse_binaries = true;
  // While every candidate in flight still compiles, measure instead of waiting a configuration
  // that differs from a kernel measured in this run in launch parameters alone (GEMM's split
  // count and rasterisation: no compile), the fastest kernel's first. They are evaluations like
  // the strategy's (max_evals counts them), seeded to the strategy and observed by it.
  bool launch_variants = true;
  std::uint64_t binary_cache_bytes = std::uint64_t(1) << 30;
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
  // `failed` by the rows' status (invalid: refused once compiled, e.g. for local memory;
  // wrong_result, fault, timeout, ...): what a user reads first where a run failed much.
  std::map<std::string, std::size_t> failed_by_status;
  int crashed_recovered = 0;  // rows left in flight by a killed run, now marked crashed
  std::string stop_reason;    // space exhausted, evaluation budget, time budget, context lost
  double seconds = 0;
  double compile_seconds = 0;  // summed over compile threads
  std::size_t compiled = 0;    // NVRTC compiles (candidates proposed, run or not)
  std::size_t reused = 0;      // candidates read from the binary cache instead
  std::size_t shared = 0;      // candidates that waited on another's compile of their kernel
  // Of `evaluated`: launch variants of kernels measured before (TuneOptions::launch_variants)
  std::size_t launch_variants = 0;
  // Of those: measured in place of proposals still compiling, given up where the budget was all
  // proposed (not measured this run; a later one may propose them again)
  std::size_t given_up = 0;
  std::size_t compile_threads = 0;
  bool compile_processes = false;    // the compile threads compiled in child processes
  double gpu_wait_seconds = 0;       // the GPU thread waiting for a compile
  double first_wait_seconds = 0;     // of which until the first kernel this run compiled
  std::size_t cached_first = 0;      // kernels of other problems' candidates taken first
  int worker_restarts = 0;           // workers replaced after a fault or a timeout
  int compiler_restarts = 0;         // compiler processes replaced after a crash or a hang
  std::optional<ResultRecord> best;  // best ok result for the problem (this run or earlier)
};

// "N failed" with its statuses, most first ("89 failed: 80 invalid, 9 wrong_result"); "0 failed"
// where none did.
std::string failed_text(const TuneSummary& summary);

// The configuration a measured row proposes as a seed for `problem`: a winner of this very
// problem (under an earlier template, or on a sibling GPU) as it was measured, the parameters
// added since at their first values, where the family still allows it; any other row's adapted
// to the problem. (Adapting the problem's own winner re-split a skinny GEMM's k and lost it:
// a re-tune after the skinny kernels grew two parameters started from slower kernels.)
Config seed_config(const Family& family, const ResultRecord& row, const Problem& problem,
                   const DeviceLimits& limits);

// Tunes one problem. Every candidate is written as soon as it is measured; a run stopped at any
// point resumes where it stopped (evaluated configurations are skipped).
TuneSummary tune(Database& db, const Device& device, const Family& family, const Problem& problem,
                 const TuneOptions& options);
TuneSummary tune(Database& db, CandidateRunner& runner, const Family& family,
                 const Problem& problem, const TuneOptions& options);

}  // namespace ktune
