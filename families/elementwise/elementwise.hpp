// Host side of the elementwise family: problem construction and the launch shared by runtime and
// tuner.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "platform/device.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Kernel;
class Workload;

enum class ElementwiseOp { kCopy = 0, kAdd = 1, kComplexCopy = 2 };

// Same layout as ktune::ElementwiseArgs<T> in elementwise.cuh (passed by value to the kernels).
struct ElementwisePointers {
  void* out0 = nullptr;
  void* out1 = nullptr;
  const void* in0 = nullptr;
  const void* in1 = nullptr;
};

struct ElementwiseCall {
  ElementwisePointers ptr;
  std::uint64_t n = 0;
};

// Largest power of two (<= 16) that divides every non-null pointer of the call.
int alignment_of(const ElementwiseCall& call);

// dtype "f32" or "f64"; align in bytes (4, 8 or 16), as alignment_of() reports it.
Problem elementwise_problem(ElementwiseOp op, const std::string& dtype, std::uint64_t n, int align);

// Launch geometry of one call: fixed by the configuration, n and the pointers' alignment, so the
// runtime computes it once per problem.
struct ElementwisePlan {
  unsigned grid = 1, block = 1;
  int vector_flag = 0;
};
ElementwisePlan elementwise_plan(const Kernel& kernel, const Config& config,
                                 const DeviceLimits& limits, int element_bytes, std::uint64_t n,
                                 int align);
void elementwise_launch(const Kernel& kernel, const ElementwisePlan& plan,
                        const ElementwiseCall& call, CUstream stream);
// Launches the compiled candidate of `config` for `call` on `stream` (nothing for n = 0).
void elementwise_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                        int element_bytes, const ElementwiseCall& call, CUstream stream);

// The buffers of an elementwise workload (made by the family), for benchmarks that run other
// implementations on the same verified data. Throws Error(kInternal) for another family's workload.
ElementwiseCall elementwise_workload_call(const Workload& workload);

}  // namespace ktune
