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

// Stream-ordered scratch memory (split-K partial sums), freed with cuMemFreeAsync, from a pool per
// device that keeps up to 1 GiB reserved between calls. The default pool hands memory back at
// every synchronization, so each call mapped it afresh while the GPU waited on the host.
CUdeviceptr scratch_alloc(std::size_t bytes, CUstream stream);

// Errors after which the CUDA context is unusable (the process must start afresh).
bool is_sticky_error(CUresult r);

}  // namespace ktune::detail
