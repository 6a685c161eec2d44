// Verifies and times one candidate on the GPU, following BENCHMARKING.md: fresh random inputs,
// poisoned outputs, reference check, warm-up, L2 flush, median of repeats with CUDA events.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "families/family.hpp"  // metric_of
#include "platform/device.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Kernel;
class Workload;

struct TimingOptions {
  int warmup = 3;
  int repeats = 20;
  bool flush_l2 = true;
  // A long run is timed fewer times: as many runs as fit in budget_ms of its own time (its first
  // warm-up run tells), at least min_repeats and at most `repeats`, after that one warm-up run
  // alone. 0: always `repeats` (the benchmarks). A tune's candidate of 72 ms (a 16258 x 13353 x
  // 8352 f32 GEMM) took 24 runs, 1.7 s; 30 runs of such kernels (cuBLAS's and ktune's, on an
  // H200) spread over 0.5 to 4% of their time, min to max, less than most candidates differ.
  double budget_ms = 0;
  int min_repeats = 5;
};

// How many timed runs `options` gives a run of `run_ms` (budget_ms above).
int repeats_within(double run_ms, const TimingOptions& options);

struct TimingStats {
  double min_ms = 0, median_ms = 0, max_ms = 0;
  int repeats = 0;
};

// Overwrites a buffer twice the L2 size so that each timed run starts with a cold cache.
class L2Flusher {
 public:
  explicit L2Flusher(const DeviceLimits& limits);
  void flush(CUstream stream);

 private:
  detail::DeviceBuffer buffer_;
  unsigned char value_ = 0;
};

// Times `run` (which enqueues work on `stream`) with CUDA events: warm-up, then `repeats` timed
// runs (fewer for a long run, with budget_ms), each after an L2 flush (when a flusher is given).
// Throws the run's errors.
TimingStats time_on_stream(const std::function<void(CUstream)>& run, CUstream stream,
                           const TimingOptions& options, L2Flusher* flusher);

struct Measurement {
  std::string status;  // ok, launch_error, fault, wrong_result
  std::string message;
  TimingStats timing;
  double metric = 0;          // in the family's unit
  bool context_lost = false;  // a sticky error: this process can run nothing more on the GPU
};

// Where an evaluation is, for a watchdog in another process: about to run the candidate once,
// to verify its output (no launch of the candidate), or to time it (`launches` runs).
enum class EvalPhase { kRun, kVerify, kTime };
using PhaseCallback = std::function<void(EvalPhase phase, int launches)>;

class Evaluator {
 public:
  Evaluator(const Device& device, Workload& workload, std::string unit, TimingOptions options);
  // Runs the candidate once on fresh data and verifies it; if correct, times it.
  Measurement evaluate(const Kernel& kernel, const Config& config, std::uint64_t seed);
  void on_phase(PhaseCallback callback) { on_phase_ = std::move(callback); }

 private:
  Workload& workload_;
  std::string unit_;
  TimingOptions options_;
  detail::Stream stream_;
  L2Flusher flusher_;
  PhaseCallback on_phase_;
};

}  // namespace ktune
