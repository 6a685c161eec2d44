// Candidate evaluation: classify by CUDA error code, verify, then time.
#include "tuner/evaluator.hpp"

#include <algorithm>
#include <cmath>

#include "families/family.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {

using detail::check;
using detail::driver;

L2Flusher::L2Flusher(const DeviceLimits& limits)
    : buffer_(static_cast<std::size_t>(limits.l2_bytes) * 2) {}

void L2Flusher::flush(CUstream stream) {
  // A different value each time, so that no level of the memory system can skip the writes.
  check(driver().cuMemsetD8Async(buffer_.get(), ++value_, buffer_.size(), stream),
        "cuMemsetD8Async (L2 flush)");
}

int repeats_within(double run_ms, const TimingOptions& options) {
  const int most = std::max(1, options.repeats);
  if (!(options.budget_ms > 0) || !(run_ms > 0)) return most;
  const double fit = std::ceil(options.budget_ms / run_ms);
  const int least = std::clamp(options.min_repeats, 1, most);
  return fit >= most ? most : std::max(least, static_cast<int>(fit));
}

TimingStats time_on_stream(const std::function<void(CUstream)>& run, CUstream stream,
                           const TimingOptions& options, L2Flusher* flusher) {
  detail::Event start, stop;
  int warmup = options.warmup;
  int repeats = std::max(1, options.repeats);
  const bool budgeted = options.budget_ms > 0;
  if (budgeted && warmup > 0) {
    // The first warm-up run, timed, says how long a run is.
    start.record(stream);
    run(stream);
    stop.record(stream);
    repeats = repeats_within(stop.since(start), options);
    // A long run: that warm-up is enough.
    warmup = repeats < std::max(1, options.repeats) ? 0 : warmup - 1;
  }
  for (int i = 0; i < warmup; ++i) run(stream);
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    if (flusher && options.flush_l2) flusher->flush(stream);
    start.record(stream);
    run(stream);
    stop.record(stream);
    times.push_back(stop.since(start));
    // No warm-up to tell: the first timed run does.
    if (budgeted && options.warmup <= 0 && i == 0) repeats = repeats_within(times[0], options);
  }
  std::sort(times.begin(), times.end());
  TimingStats s;
  s.repeats = static_cast<int>(times.size());
  s.min_ms = times.front();
  s.max_ms = times.back();
  const std::size_t n = times.size();
  s.median_ms = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
  return s;
}

Evaluator::Evaluator(const Device& device, Workload& workload, std::string unit,
                     TimingOptions options)
    : workload_(workload), unit_(std::move(unit)), options_(options), flusher_(device.limits()) {}

Measurement Evaluator::evaluate(const Kernel& kernel, const Config& config, std::uint64_t seed) {
  Measurement m;
  const auto& d = driver();
  CUstream s = stream_.get();
  try {
    auto phase = [&](EvalPhase p, int launches) {
      if (on_phase_) on_phase_(p, launches);
    };
    workload_.prepare(seed, s);
    // Inputs ready before the watchdog's clock for the candidate starts.
    check(d.cuStreamSynchronize(s), "cuStreamSynchronize (inputs)");
    phase(EvalPhase::kRun, 1);
    workload_.run(kernel, config, s);
    CUresult r = d.cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS) check(r, "kernel execution");
    phase(EvalPhase::kVerify, 0);
    std::string wrong = workload_.verify(s);
    if (!wrong.empty()) {
      m.status = "wrong_result";
      m.message = wrong;
      return m;
    }
    phase(EvalPhase::kTime, options_.warmup + std::max(1, options_.repeats));
    m.timing = time_on_stream([&](CUstream st) { workload_.run(kernel, config, st); }, s, options_,
                              &flusher_);
    m.metric = metric_of(workload_.work(), m.timing.median_ms, unit_);
    m.status = "ok";
  } catch (const Error& e) {
    const auto r = static_cast<CUresult>(e.cuda_result());
    if (e.code() != ErrorCode::kCuda) throw;
    m.message = e.what();
    if (detail::is_sticky_error(r)) {
      m.status = r == CUDA_ERROR_LAUNCH_TIMEOUT ? "timeout" : "fault";
      m.context_lost = true;
    } else {
      m.status = "launch_error";
      d.cuStreamSynchronize(s);  // drain; a non-sticky error leaves the stream usable
    }
  }
  return m;
}

}  // namespace ktune
