// Test-only family with planted faults (faults.cuh): good candidates among an out-of-bounds
// write, a misaligned vector load, a trap, an endless loop and a refused launch. A tuning run of
// it proves that every failure ends one candidate, is classified, and loses nothing else.
#include <algorithm>

#include "ktune/error.hpp"
#include "runtime/driver.hpp"
#include "runtime/kernel_cache.hpp"
#include "templates/family.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {

constexpr int kKindLaunch = 5;  // FaultKind kFaultLaunch in faults.cuh

std::int64_t get(const Config& c, const char* name) {
  auto it = c.find(name);
  if (it == c.end())
    throw Error(ErrorCode::kInvalidArgument, std::string("faults config: missing ") + name);
  return it->second;
}

class FaultsFamily final : public Family {
 public:
  FaultsFamily() {
    params_ = {
        {"KIND", {0, 1, 2, 3, 4, 5},
         "0 = correct; planted: 1 out-of-bounds write, 2 misaligned load, 3 trap, 4 endless loop, "
         "5 refused launch"},
        {"BLOCK", {128, 256, 512}, "threads per block"},
        {"UNROLL", {1, 2, 4}, "unroll of the copy loop"},
    };
  }
  std::string name() const override { return "faults"; }
  std::string description() const override {
    return "test only: a copy with planted faults, to prove the tuner survives them";
  }
  std::string source_file() const override { return "faults.cuh"; }
  const std::vector<Param>& params() const override { return params_; }
  std::string metric_unit() const override { return "GB/s"; }
  bool test_only() const override { return true; }

  std::vector<Problem> check_problems() const override { return default_problems(); }
  std::vector<Problem> default_problems() const override {
    Problem p;
    p.family = name();
    p.sizes = {{"n", 1 << 22}};
    return {p};
  }
  void validate(const Problem& p) const override {
    if (!p.attrs.empty() || p.sizes.size() != 1 || !p.sizes.count("n") || p.size("n") < 1)
      throw Error(ErrorCode::kInvalidArgument, "faults: a problem is n=<elements>, n >= 1");
  }
  std::string reject(const Config& c, const Problem&, const DeviceLimits&) const override {
    if (get(c, "KIND") != 0 && (get(c, "BLOCK") != 256 || get(c, "UNROLL") != 1))
      return "one variant per planted fault";
    return {};
  }
  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(get(c, "BLOCK"));
  }
  std::vector<std::string> name_expressions(const Config& c, const Problem&) const override {
    return {"ktune::faults_kernel<" + std::to_string(get(c, "KIND")) + ", " +
            std::to_string(get(c, "UNROLL")) + ">"};
  }
  Config default_config(const Problem&, const DeviceLimits&) const override {
    return {{"KIND", 0}, {"BLOCK", 256}, {"UNROLL", 1}};
  }
  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override;

 private:
  std::vector<Param> params_;
};

class FaultsWorkload final : public Workload {
 public:
  FaultsWorkload(const FaultsFamily& family, const Problem& p, const Device& device,
                 KernelCache& cache)
      : device_(device), n_(static_cast<std::uint64_t>(p.size("n"))) {
    family.validate(p);
    in_ = detail::DeviceBuffer(n_ * sizeof(float));
    out_ = detail::DeviceBuffer(n_ * sizeof(float));
    result_ = detail::DeviceBuffer(2 * sizeof(std::uint64_t));
    CompileRequest r = family.compile_request(family.default_config(p, device.limits()), p,
                                              device.limits().arch());
    r.name_expressions = {"ktune::fill_random<float>", "ktune::faults_check"};
    helpers_ = cache.get(r);
  }
  void prepare(std::uint64_t seed, CUstream stream) override {
    CUdeviceptr p = in_.get();
    std::uint64_t n = n_;
    void* args[] = {&p, &n, &seed};
    helpers_->launch(0, device_.limits().sm_count * 4, 1, 1, 256, 1, 1, 0, stream, args);
    check(driver().cuMemsetD8Async(out_.get(), 0xFF, out_.size(), stream), "cuMemsetD8Async");
  }
  void run(const Kernel& kernel, const Config& config, CUstream stream) override {
    CUdeviceptr out = out_.get(), in = in_.get();
    std::uint64_t n = n_;
    void* args[] = {&out, &in, &n};
    const unsigned block = static_cast<unsigned>(get(config, "BLOCK"));
    const unsigned grid = static_cast<unsigned>(
        std::min<std::uint64_t>((n_ + block - 1) / block, device_.limits().sm_count * 16ull));
    // The refused launch asks for more dynamic shared memory than any block may have.
    const unsigned smem = get(config, "KIND") == kKindLaunch ? 16u << 20 : 0;
    kernel.launch(0, grid, 1, 1, block, 1, 1, smem, stream, args);
  }
  std::string verify(CUstream stream) override {
    const auto& d = driver();
    check(d.cuMemsetD8Async(result_.get(), 0, 8, stream), "cuMemsetD8Async");
    check(d.cuMemsetD8Async(result_.get() + 8, 0xFF, 8, stream), "cuMemsetD8Async");
    CUdeviceptr out = out_.get(), in = in_.get(), result = result_.get();
    std::uint64_t n = n_;
    void* args[] = {&out, &in, &n, &result};
    helpers_->launch(1, device_.limits().sm_count * 4, 1, 1, 256, 1, 1, 0, stream, args);
    std::uint64_t host[2] = {0, 0};
    check(d.cuMemcpyDtoHAsync(host, result_.get(), sizeof(host), stream), "cuMemcpyDtoHAsync");
    check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (host[0] == 0) return {};
    return std::to_string(host[0]) + " wrong element(s), first at index " +
           std::to_string(host[1]);
  }
  double work() const override { return 2.0 * n_ * sizeof(float); }
  std::size_t bytes() const override { return in_.size() + out_.size(); }

 private:
  const Device& device_;
  std::uint64_t n_;
  detail::DeviceBuffer in_, out_, result_;
  std::shared_ptr<const Kernel> helpers_;
};

std::unique_ptr<Workload> FaultsFamily::make_workload(const Problem& p, const Device& device,
                                                      KernelCache& cache) const {
  return std::make_unique<FaultsWorkload>(*this, p, device, cache);
}

}  // namespace

const Family& faults_family() {
  static const FaultsFamily instance;
  return instance;
}

}  // namespace ktune
