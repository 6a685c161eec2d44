// A runner that stands in for the GPU in host tests of the tuning loop's compiles (real NVRTC):
// it keeps each candidate's binary and times it with a synthetic objective. It tests the loop,
// not the kernels.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "platform/device.hpp"
#include "tuner/runner.hpp"

namespace ktune::testing {

class SyntheticCompiledRunner final : public CandidateRunner {
 public:
  SyntheticCompiledRunner() {
    info_.name = "NVIDIA H100 80GB HBM3";
    info_.limits = DeviceLimits::for_arch(9, 0);
    info_.limits.sm_count = 132;
  }
  const DeviceInfo& device() const override { return info_; }
  bool compiles() const override { return true; }
  Measurement measure(std::size_t, const Config& config, const CompileResult* compiled,
                      const std::string& key, ResultRecord&) override {
    Measurement m;
    // What the GPU runner would load: a module with one function per name expression.
    if (!compiled || compiled->cubin.empty() || compiled->lowered_names.empty() || key.empty()) {
      m.status = status::kLaunchError;
      m.message = "no binary";
      return m;
    }
    binaries.push_back(compiled->cubin);
    measured.push_back(to_string(config));
    m.status = status::kOk;
    const double ms =
        1.0 + static_cast<double>(std::hash<std::string>{}(to_string(config)) % 97) / 97;
    m.timing.min_ms = m.timing.median_ms = m.timing.max_ms = ms;
    m.timing.repeats = 1;
    m.metric = 1.0 / ms;
    return m;
  }
  std::vector<std::vector<char>> binaries;
  std::vector<std::string> measured;  // configurations, in the order measured

 private:
  DeviceInfo info_;
};

}  // namespace ktune::testing
