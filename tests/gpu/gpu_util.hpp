// Shared pieces of the GPU tests: skipping without a device, host <-> device copies.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "platform/device.hpp"
#include "platform/driver.hpp"

// Skips without a GPU; otherwise holds device 0's primary context for the whole test, so that
// buffers made before (or outliving) a Runtime stay valid.
#define KTUNE_REQUIRE_GPU()                                  \
  std::string ktune_why_no_gpu;                              \
  if (!::ktune::detail::driver_available(&ktune_why_no_gpu)) \
    GTEST_SKIP() << "no GPU: " << ktune_why_no_gpu;          \
  ::ktune::Device ktune_held_device(0)

namespace ktune::testing {

template <typename T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template <typename T>
void upload(CUdeviceptr dst, const std::vector<T>& v) {
  if (!v.empty())
    detail::check(detail::driver().cuMemcpyHtoD(dst, v.data(), v.size() * sizeof(T)),
                  "cuMemcpyHtoD");
}

template <typename T>
std::vector<T> download(CUdeviceptr src, std::size_t n) {
  std::vector<T> v(n);
  if (n) detail::check(detail::driver().cuMemcpyDtoH(v.data(), src, n * sizeof(T)), "cuMemcpyDtoH");
  return v;
}

inline void synchronize() {
  detail::check(detail::driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

}  // namespace ktune::testing
