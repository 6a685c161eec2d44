// Host side of the histogram family: argument checks, problems, the launch shared by runtime and
// tuner, the host reference of the tuning inputs, and the workload accessors the bench uses.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "families/histogram/histogram_math.cuh"
#include "platform/device.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Kernel;
class Workload;

enum class HistogramDtype { kU8 = 0, kU16 = 1, kI32 = 2, kF32 = 3 };

constexpr int kHistogramMaxBins = 4096;

const char* histogram_dtype_name(HistogramDtype dtype);  // "u8", "u16", "i32", "f32"
// Throws Error(kInvalidArgument) naming the dtype and the known ones.
HistogramDtype parse_histogram_dtype(const std::string& name);
int histogram_sample_bytes(HistogramDtype dtype);
const char* histogram_input_name(HistogramInput input);  // "uniform", "skewed", "constant"

// One histogram to compute: samples, where the counts go, how samples map to bins.
struct HistogramCall {
  HistogramDtype dtype = HistogramDtype::kU8;
  const void* samples = nullptr;
  std::uint64_t n = 0;
  std::uint32_t* counts = nullptr;
  HistogramArgs args{};
  bool accumulate = false;
};

// The calls of Runtime::histogram and Runtime::histogram_even, checked without touching a GPU.
// Throw Error(kInvalidArgument) naming the API function and the argument.
HistogramCall histogram_bytes_call(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                                   bool accumulate);
// Integer samples (u8, u16, i32): lower and upper are sample values.
HistogramCall histogram_even_call(HistogramDtype dtype, const void* samples, std::size_t n,
                                  int bins, std::int64_t lower, std::int64_t upper,
                                  std::uint32_t* counts, bool accumulate);
HistogramCall histogram_even_call(const float* samples, std::size_t n, int bins, float lower,
                                  float upper, std::uint32_t* counts, bool accumulate);

// Alignment class of a sample pointer: its lowest set address bit, at most 16.
int histogram_alignment(const void* samples);

// dtype, n samples, bins, align (1, 2, 4, 8 or 16 bytes, at least the sample size).
Problem histogram_problem(HistogramDtype dtype, std::uint64_t n, int bins, int align);
Problem histogram_problem(const HistogramCall& call);

// Zeroes the counts unless the call accumulates (all that a call with n = 0 does).
void histogram_clear(const HistogramCall& call, CUstream stream);
// histogram_clear, then launches the compiled candidate of `config`
// for the call (nothing more for n = 0) on `stream`.
void histogram_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                      const HistogramCall& call, CUstream stream);

// --- Tuning inputs ---
// The bins of the tuning problems: 256 bins of bytes by value; for other bin counts and types a
// range that most, not all, samples fall into.
HistogramArgs histogram_workload_args(HistogramDtype dtype, int bins);
// The generator of one input class, seeded.
HistogramData histogram_input_data(HistogramDtype dtype, HistogramInput input, std::uint64_t seed,
                                   const HistogramArgs& args);
// Exact counts (modulo 2^32) of samples [first, first + n) of the generated input, computed on
// `threads` host threads (0: one per hardware thread).
std::vector<std::uint32_t> histogram_reference(HistogramDtype dtype, const HistogramData& data,
                                               std::uint64_t first, std::uint64_t n,
                                               const HistogramArgs& args, unsigned threads = 0);

// --- A histogram workload's buffers, for benchmarks that run other implementations on the same
// verified inputs. Throw Error(kInternal) for another family's workload. ---
HistogramCall histogram_workload_call(const Workload& workload, HistogramInput input);
// Poisons the counts of one input class (0xFFFFFFFF, guards included), so a verification after
// the next run cannot pass on an earlier run's result.
void histogram_workload_poison(Workload& workload, HistogramInput input, CUstream stream);
// "" when the counts of one input class are exact and the guards intact, else the first error.
std::string histogram_workload_verify(Workload& workload, HistogramInput input, CUstream stream);

}  // namespace ktune
