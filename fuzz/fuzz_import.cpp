// libFuzzer target: JSON import (ktune-results, and the Kernel Tuner cache and T4 converter). Every
// document is either parsed and checked entry by entry or rejected with ktune::Error naming the
// entry and field; nothing else may happen.
#include <cstddef>
#include <cstdint>
#include <string>

#include "db/exchange.hpp"
#include "ktune/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ktune::parse_results(text, "fuzz input");
  } catch (const ktune::Error&) {
    // Rejected with a clear message: the expected answer to bad input.
  }
  // The same text as a Kernel Tuner cache file for a GEMM problem on an H100.
  static const ktune::KernelTunerImport kt = [] {
    ktune::KernelTunerImport o;
    o.family = "gemm";
    o.problem = "align=4;dtype=f32;k=256;m=256;n=256;op=nn";
    o.cc_major = 9, o.cc_minor = 0, o.sm_count = 132;
    o.rename = {{"block_size_x", "BM"}};
    return o;
  }();
  try {
    (void)ktune::parse_kerneltuner(text, "fuzz input", kt);
  } catch (const ktune::Error&) {
  }
  // With the GPU named, as T4 results need (--gpu).
  static const ktune::KernelTunerImport named = [] {
    ktune::KernelTunerImport o = kt;
    o.device_name = "NVIDIA H100 80GB HBM3";
    return o;
  }();
  try {
    (void)ktune::parse_kerneltuner(text, "fuzz input", named);
  } catch (const ktune::Error&) {
  }
  return 0;
}
