// The candidate runners of this process: on the GPU (in the tuner's process or in a worker's),
// and from a recording (replay).
#include "tuner/runner.hpp"

#include <chrono>
#include <thread>

#include "families/family.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"
#include "tuner/replay.hpp"

namespace ktune {
namespace {

class GpuRunner final : public CandidateRunner {
 public:
  GpuRunner(Database* db, const Device& device, const Family& family, const Problem& problem,
            const TimingOptions& timing, std::uint64_t seed, PhaseCallback on_phase)
      : device_(device),
        family_(family),
        problem_(problem),
        cache_(device, db),
        workload_(family.make_workload(problem, device, cache_)),
        evaluator_(device, *workload_, family.metric_unit(), timing),
        seed_(seed) {
    evaluator_.on_phase(std::move(on_phase));
  }
  const DeviceInfo& device() const override { return device_.info(); }
  bool compiles() const override { return true; }
  Measurement measure(std::size_t, const Config& config, const CompileResult* compiled,
                      const std::string&, ResultRecord& row) override {
    Measurement m;
    try {
      // Loaded for this measurement only: the module is unloaded when it returns, so device and
      // host memory stay flat however many candidates a run measures.
      auto kernel = std::make_shared<const Kernel>(*compiled, device_);
      row.registers = kernel->registers(0);  // the driver's count, which the launch obeys
      const int threads = family_.block_threads(config, problem_);
      const int allowed = kernel->max_threads_per_block(0);
      if (threads > allowed) {
        m.status = status::kInvalid;
        m.message = std::to_string(threads) + " threads per block, but with " +
                    std::to_string(row.registers) + " registers the kernel allows " +
                    std::to_string(allowed);
        return m;
      }
      // Every candidate on the same inputs: a workload makes its reference for them once (the
      // GEMM workloads' double-accumulation GEMM of the whole problem; gemm.hpp, KeptReference).
      return evaluator_.evaluate(*kernel, config, seed_ * 1000003ull);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCuda) throw;
      m.status = detail::is_sticky_error(static_cast<CUresult>(e.cuda_result()))
                     ? status::kFault
                     : status::kLaunchError;
      m.context_lost = m.status == status::kFault;
      m.message = e.what();
      return m;
    }
  }

 private:
  const Device& device_;
  const Family& family_;
  const Problem& problem_;
  KernelCache cache_;
  std::unique_ptr<Workload> workload_;
  Evaluator evaluator_;
  std::uint64_t seed_;
};

class ReplayRunner final : public CandidateRunner {
 public:
  ReplayRunner(const Recording& r, double delay_ms) : recording_(r), delay_ms_(delay_ms) {
    info_.name = r.device_record.name;
    info_.limits = DeviceLimits::for_arch(r.device_record.cc_major, r.device_record.cc_minor);
    info_.limits.sm_count = r.device_record.sm_count;
    info_.uuid = r.device_record.uuid;
    info_.driver_version = r.device_record.driver_version;
  }
  const DeviceInfo& device() const override { return info_; }
  bool compiles() const override { return false; }
  Measurement measure(std::size_t index, const Config&, const CompileResult*, const std::string&,
                      ResultRecord&) override {
    if (delay_ms_ > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(delay_ms_));
    Measurement m;
    const std::string& recorded = recording_.status.at(index);
    if (recording_.time_ms.at(index)) {
      m.status = status::kOk;
      m.timing.min_ms = m.timing.median_ms = m.timing.max_ms = *recording_.time_ms[index];
      m.timing.repeats = 1;
      m.metric = recording_.metric.at(index);
    } else {
      m.status = recorded.empty() ? status::kInvalid : recorded;
      m.message = recorded.empty() ? "not in the recording" : "replayed outcome";
    }
    return m;
  }

 private:
  const Recording& recording_;
  double delay_ms_;
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<CandidateRunner> make_gpu_runner(Database* db, const Device& device,
                                                 const Family& family, const Problem& problem,
                                                 const TimingOptions& timing, std::uint64_t seed,
                                                 PhaseCallback on_phase) {
  return std::make_unique<GpuRunner>(db, device, family, problem, timing, seed,
                                     std::move(on_phase));
}

std::unique_ptr<CandidateRunner> make_replay_runner(const Recording& recording, double delay_ms) {
  return std::make_unique<ReplayRunner>(recording, delay_ms);
}

}  // namespace ktune
