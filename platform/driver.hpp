// The CUDA driver API, loaded at run time with dlopen so that binaries start without a driver.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>

#include "ktune/error.hpp"

namespace ktune::detail {

// Function pointers resolved through cuGetProcAddress for the CUDA version of our headers.
struct DriverApi {
#define KTUNE_DRIVER_FN(name) decltype(&::name) name = nullptr;
#include "platform/driver_functions.inc"
#undef KTUNE_DRIVER_FN
  int driver_version = 0;
};

// Loads libcuda.so.1 and calls cuInit once. Throws Error(kNoDriver) when the library is missing,
// Error(kNoDevice) when cuInit reports no device. Thread-safe; the result is cached (including
// the failure, so a machine without a driver is asked once).
const DriverApi& driver();

// True when a driver and at least one device are present; never throws.
bool driver_available(std::string* why = nullptr);

// Throws Error(kCuda) naming the call when r != CUDA_SUCCESS.
void check(CUresult r, const char* what);
std::string result_name(CUresult r);

// Stream-ordered scratch memory (split-K partial sums), freed with scratch_free, from a pool per
// device that keeps up to 1 GiB reserved between calls. The default pool hands memory back at
// every synchronization, so each call mapped it afresh while the GPU waited on the host.
// Uses the calling thread's current context.
CUdeviceptr scratch_alloc(std::size_t bytes, CUstream stream);
// Frees scratch memory in `stream`'s order (never waits for the GPU).
CUresult scratch_free(CUdeviceptr ptr, CUstream stream);
// The stream-ordered allocator's first allocation in a process takes the driver 7 to 10 ms (H200),
// whatever its size: a Runtime makes it on a thread of its own. scratch_prepare_begin (with the
// device's context current) makes the device's allocations plain ones (cuMemAlloc, 0.1 ms) until
// scratch_prepare(context), run on that thread, has made the first pooled one; it returns false
// where the device is being prepared already. Plain allocations freed meanwhile wait for their
// streams and are freed by scratch_prepare, or by scratch_release_held (the current context's
// device), which a Runtime calls as it ends.
bool scratch_prepare_begin();
void scratch_prepare(CUcontext context);
void scratch_release_held();

// Errors after which the CUDA context is unusable (the process must start afresh).
bool is_sticky_error(CUresult r);

}  // namespace ktune::detail
