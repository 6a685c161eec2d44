// Device identity, limits and the primary context, read through the run-time loaded driver.
#include "platform/device.hpp"

#include <cstdio>
#include <system_error>

#include "platform/driver.hpp"

namespace ktune {

using detail::check;
using detail::driver;

DeviceLimits DeviceLimits::for_arch(int cc_major, int cc_minor) {
  DeviceLimits l;
  l.cc_major = cc_major;
  l.cc_minor = cc_minor;
  // Per-architecture figures from the CUDA programming guide's compute capability table.
  if (cc_major == 9) {
    l.smem_per_block_optin = 227 * 1024;
    l.smem_per_sm = 228 * 1024;
    l.max_threads_per_sm = 2048;
    l.l2_bytes = 50 * 1024 * 1024;
  } else if (cc_major == 8 && cc_minor == 0) {
    l.smem_per_block_optin = 163 * 1024;
    l.smem_per_sm = 164 * 1024;
    l.max_threads_per_sm = 2048;
    l.sm_count = 108;
    l.l2_bytes = 40 * 1024 * 1024;
  } else if (cc_major == 8) {
    l.smem_per_block_optin = 99 * 1024;
    l.smem_per_sm = 100 * 1024;
    l.max_threads_per_sm = 1536;
    l.max_blocks_per_sm = cc_minor == 9 ? 24 : 16;
    l.sm_count = 84;
    l.l2_bytes = 6 * 1024 * 1024;
  } else if (cc_major >= 10) {
    l.smem_per_block_optin = 227 * 1024;
    l.smem_per_sm = 228 * 1024;
  } else {
    l.smem_per_block_optin = 96 * 1024;
    l.smem_per_sm = 96 * 1024;
    l.sm_count = 80;
    l.l2_bytes = 6 * 1024 * 1024;
  }
  return l;
}

std::string DeviceInfo::identity() const {
  return name + " | " + limits.arch() + " | " + std::to_string(limits.sm_count) + " SMs";
}

int device_count() {
  int n = 0;
  check(driver().cuDeviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

Device::Device(int ordinal) {
  const auto& d = driver();
  int count = device_count();
  if (count == 0) throw Error(ErrorCode::kNoDevice, "no CUDA device: the driver reports 0 devices");
  if (ordinal < 0 || ordinal >= count)
    throw Error(ErrorCode::kInvalidArgument, "device: ordinal " + std::to_string(ordinal) +
                                                 " out of range (this machine has " +
                                                 std::to_string(count) + " CUDA device(s))");
  check(d.cuDeviceGet(&device_, ordinal), "cuDeviceGet");
  info_.ordinal = ordinal;
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  info_.name = name;
  CUuuid uuid{};
  if (d.cuDeviceGetUuid(&uuid, device_) == CUDA_SUCCESS) {
    char buf[64];
    const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
    std::snprintf(buf, sizeof(buf),
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                  b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                  b[14], b[15]);
    info_.uuid = buf;
  }
  info_.driver_version = d.driver_version;
  check(d.cuDeviceTotalMem(&info_.total_memory, device_), "cuDeviceTotalMem");
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    check(d.cuDeviceGetAttribute(&v, a, device_), "cuDeviceGetAttribute");
    return v;
  };
  DeviceLimits& l = info_.limits;
  l.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  l.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  l.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  l.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  l.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  l.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  l.regs_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  l.regs_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  l.smem_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  l.smem_per_block_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  l.smem_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  l.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info_.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // The clock rates take the driver 0.5 and 0.3 ms each on an H200 (it asks the GPU): read on
  // another thread, which info() waits for, and here where no thread can be started.
  auto clocks = [this, api = &d] {
    CUresult r =
        api->cuDeviceGetAttribute(&info_.clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, device_);
    if (r == CUDA_SUCCESS)
      r = api->cuDeviceGetAttribute(&info_.memory_clock_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
                                    device_);
    return r;
  };
  try {
    clocks_ = std::async(std::launch::async, clocks);
  } catch (const std::system_error&) {
    check(clocks(), "cuDeviceGetAttribute");
  }
  check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  // Always bind here: if the primary context was released to zero and retained again, its handle
  // can be the same while this thread's binding still points at the destroyed instance.
  check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

const DeviceInfo& Device::info() const {
  std::call_once(clocks_once_, [this] {
    if (clocks_.valid()) check(clocks_.get(), "cuDeviceGetAttribute");
  });
  return info_;
}

Device::~Device() {
  if (context_) driver().cuDevicePrimaryCtxRelease(device_);
}

void Device::make_current() const {
  const auto& d = driver();
  CUcontext current = nullptr;
  if (d.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context_) return;
  check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
}

ContextRestorer::ContextRestorer() {
  if (!detail::driver_available()) return;
  known_ = driver().cuCtxGetCurrent(&previous_) == CUDA_SUCCESS;
}

ContextRestorer::~ContextRestorer() {
  if (!known_) return;
  const auto& d = driver();
  CUcontext now = nullptr;
  if (d.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now != previous_) d.cuCtxSetCurrent(previous_);
}

ContextScope::ContextScope(const Device& device) {
  const auto& d = driver();
  check(d.cuCtxGetCurrent(&previous_), "cuCtxGetCurrent");
  if (previous_ == device.context()) return;
  check(d.cuCtxSetCurrent(device.context()), "cuCtxSetCurrent");
  switched_ = true;
}

ContextScope::~ContextScope() {
  if (switched_) driver().cuCtxSetCurrent(previous_);  // nothing to do if it fails: no throw
}

namespace detail {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  CUresult r = driver().cuMemAlloc(&ptr_, bytes);
  if (r != CUDA_SUCCESS) {
    ptr_ = 0;
    check(r, ("cuMemAlloc of " + std::to_string(bytes) + " bytes").c_str());
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

Stream::Stream() {
  check(driver().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
}
Stream::~Stream() {
  if (stream_) driver().cuStreamDestroy(stream_);
}
void Stream::synchronize() const {
  check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

Event::Event() { check(driver().cuEventCreate(&event_, CU_EVENT_DEFAULT), "cuEventCreate"); }
Event::~Event() {
  if (event_) driver().cuEventDestroy(event_);
}
void Event::record(CUstream s) const { check(driver().cuEventRecord(event_, s), "cuEventRecord"); }
float Event::since(const Event& start) const {
  check(driver().cuEventSynchronize(event_), "cuEventSynchronize");
  float ms = 0;
  check(driver().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace detail
}  // namespace ktune
