// Device identity and limits, the primary context, and RAII wrappers for memory, streams, events.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace ktune {

// What the constraints of a family need to know about a device. Filled from the driver, or
// by hand for a target arch (ktune check compiles for sm_90 with no GPU).
struct DeviceLimits {
  int cc_major = 9;
  int cc_minor = 0;
  int sm_count = 132;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int regs_per_block = 65536;
  int regs_per_sm = 65536;
  int smem_per_block = 48 * 1024;         // static limit without opt-in
  int smem_per_block_optin = 227 * 1024;  // with cuFuncSetAttribute
  int smem_per_sm = 228 * 1024;
  std::int64_t l2_bytes = 50 * 1024 * 1024;
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
  // Limits of a compute capability without a device at hand (for ktune check).
  static DeviceLimits for_arch(int cc_major, int cc_minor);
};

// Identity keys results (name + compute capability + SM count); the rest are stored facts.
struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  std::string uuid;
  int driver_version = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::size_t total_memory = 0;
  DeviceLimits limits;
  std::string identity() const;  // "NVIDIA H100 80GB HBM3 | sm_90 | 132 SMs"
};

// Peak DRAM bandwidth in bytes a second from the memory clock (kHz) and bus width (bits), double
// data rate; 0 where either is unknown.
inline double dram_bandwidth(int memory_clock_khz, int memory_bus_bits) {
  return memory_clock_khz > 0 && memory_bus_bits > 0
             ? 2.0 * memory_clock_khz * 1e3 * memory_bus_bits / 8
             : 0.0;
}

int device_count();  // throws Error(kNoDriver/kNoDevice)

// A device with its primary context retained (released in the destructor).
class Device {
 public:
  explicit Device(int ordinal);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The first call waits for the clock rates (read on a thread of their own: 0.88 ms of an H200's
  // 0.94 ms constructor, which a Runtime's construction and first calls need not wait for).
  const DeviceInfo& info() const;
  const DeviceLimits& limits() const { return info_.limits; }
  CUcontext context() const { return context_; }
  // Makes the primary context current on the calling thread (cheap when it already is).
  void make_current() const;

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  mutable DeviceInfo info_;
  mutable std::once_flag clocks_once_;
  mutable std::future<CUresult> clocks_;  // fills info_'s clock rates
};

// Gives the calling thread back, at the end of a scope, the CUDA context it had at the start
// (none included), so that no ktune call leaves a caller's thread switched to another context.
// Without a driver it does nothing.
class ContextRestorer {
 public:
  ContextRestorer();
  ~ContextRestorer();
  ContextRestorer(const ContextRestorer&) = delete;
  ContextRestorer& operator=(const ContextRestorer&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool known_ = false;
};

// Makes `device`'s context current for a scope, then gives the thread back the context it had.
// One driver call when the context is current already (the runtime's hot path).
class ContextScope {
 public:
  explicit ContextScope(const Device& device);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  CUcontext previous_ = nullptr;
  bool switched_ = false;
};

namespace detail {

// Device memory owned by value; freed without throwing.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const { return ptr_; }
  template <typename T>
  T* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(ptr_ + byte_offset);
  }
  std::size_t size() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return event_; }
  void record(CUstream s) const;
  // Milliseconds from `start` to this event (both recorded and completed).
  float since(const Event& start) const;

 private:
  CUevent event_ = nullptr;
};

}  // namespace detail
}  // namespace ktune
