// Loads libcuda.so.1 at run time and resolves the driver API through cuGetProcAddress.
#include "platform/driver.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

namespace ktune::detail {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  DriverApi api;
  std::optional<Error> failure;
};

Loaded load() {
  Loaded out;
  // RTLD_NODELETE: the driver stays mapped for the life of the process (the CUDA runtime and
  // other libraries in the process may hold it too).
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) {
    const char* why = dlerror();
    out.failure = Error(ErrorCode::kNoDriver,
                        "no CUDA driver: libcuda.so.1 could not be loaded (is the NVIDIA driver "
                        "installed?)",
                        why ? why : "");
    return out;
  }
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get_proc) {
    out.failure = Error(ErrorCode::kNoDriver,
                        "CUDA driver too old: cuGetProcAddress_v2 not found in libcuda.so.1 "
                        "(need a driver for CUDA 12.5 or newer)");
    return out;
  }
  std::string missing;
  auto resolve = [&](const char* name, void** slot) {
    // Each pointer must have the ABI that cuda.h declares for the name. cuGetProcAddress with
    // CUDA_VERSION returns the newest ABI, which differs where cuda.h keeps an older one without
    // a _vN macro: cuCtxSynchronize(void) and cuCtxGetDevice(CUdevice*) gained a CUcontext
    // argument in their _v2 of CUDA 13.0.
    int version = CUDA_VERSION;
    if (std::string_view(name) == "cuCtxSynchronize" || std::string_view(name) == "cuCtxGetDevice")
      version = 2000;
    CUdriverProcAddressQueryResult status{};
    CUresult r = get_proc(name, slot, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !*slot) {
      *slot = nullptr;
      missing += missing.empty() ? name : std::string(", ") + name;
    }
  };
#define KTUNE_DRIVER_FN(name) resolve(#name, reinterpret_cast<void**>(&out.api.name));
#include "platform/driver_functions.inc"
#undef KTUNE_DRIVER_FN
  if (!missing.empty()) {
    out.failure = Error(ErrorCode::kNoDriver, "CUDA driver too old for this build of ktune (CUDA " +
                                                  std::to_string(CUDA_VERSION / 1000) + "." +
                                                  std::to_string(CUDA_VERSION % 1000 / 10) +
                                                  "): missing " + missing);
    return out;
  }
  CUresult r = out.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.failure =
        Error(r == CUDA_ERROR_NO_DEVICE ? ErrorCode::kNoDevice : ErrorCode::kNoDriver,
              std::string("no CUDA device: cuInit failed with ") + (name ? name : "unknown error"))
            .with_cuda_result(r);
    return out;
  }
  out.api.cuDriverGetVersion(&out.api.driver_version);
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (l.failure) throw *l.failure;
  return l.api;
}

bool driver_available(std::string* why) {
  const Loaded& l = loaded();
  if (l.failure) {
    if (why) *why = l.failure->what();
    return false;
  }
  int count = 0;
  if (l.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    if (why) *why = "no CUDA device: the driver reports 0 devices";
    return false;
  }
  return true;
}

std::string result_name(CUresult r) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  if (!l.failure && l.api.cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUresult " + std::to_string(static_cast<int>(r));
}

namespace {
// Per device: its scratch pool; whether a Runtime is preparing the stream-ordered allocator, whose
// first allocation in a process takes the driver 7 to 10 ms on an H200, whatever its size and
// pool (a cuMemAlloc takes 0.1 ms); and the plain allocations made meanwhile, which their calls
// freed and which wait for their streams.
struct Scratch {
  std::mutex mutex;
  std::map<CUdevice, CUmemoryPool> pools;  // for the life of the process
  std::set<CUdevice> preparing;
  std::set<CUdeviceptr> plain;
  std::map<CUdevice, std::vector<std::pair<CUdeviceptr, CUevent>>> held;
};
Scratch& scratch() {
  // Never destroyed: a Runtime that ends during the process's exit (one held by a static) still
  // finds it.
  static Scratch* s = new Scratch;
  return *s;
}

CUdevice current_device() {
  CUdevice device = 0;
  check(driver().cuCtxGetDevice(&device), "cuCtxGetDevice");
  return device;
}

// The device's pool, made at its first use; under s.mutex.
CUmemoryPool pool_of(Scratch& s, CUdevice device) {
  auto it = s.pools.find(device);
  if (it == s.pools.end()) {
    const DriverApi& d = driver();
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = device;
    CUmemoryPool pool = nullptr;
    check(d.cuMemPoolCreate(&pool, &props), "cuMemPoolCreate (scratch)");
    cuuint64_t keep = cuuint64_t(1) << 30;
    check(d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
          "cuMemPoolSetAttribute (scratch)");
    it = s.pools.emplace(device, pool).first;
  }
  return it->second;
}
}  // namespace

CUdeviceptr scratch_alloc(std::size_t bytes, CUstream stream) {
  const DriverApi& d = driver();
  const CUdevice device = current_device();
  Scratch& s = scratch();
  CUmemoryPool pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.preparing.count(device)) {
      CUdeviceptr ptr = 0;
      check(d.cuMemAlloc(&ptr, bytes), "cuMemAlloc (scratch, while the pool is prepared)");
      s.plain.insert(ptr);
      return ptr;
    }
    pool = pool_of(s, device);
  }
  CUdeviceptr ptr = 0;
  check(d.cuMemAllocFromPoolAsync(&ptr, bytes, pool, stream), "cuMemAllocFromPoolAsync (scratch)");
  return ptr;
}

CUresult scratch_free(CUdeviceptr ptr, CUstream stream) {
  const DriverApi& d = driver();
  Scratch& s = scratch();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.plain.erase(ptr)) {  // held until its stream is past this call's kernels
      CUevent done = nullptr;
      CUresult r = d.cuEventCreate(&done, CU_EVENT_DISABLE_TIMING);
      if (r == CUDA_SUCCESS) r = d.cuEventRecord(done, stream);
      CUdevice device = 0;
      if (r == CUDA_SUCCESS) r = d.cuCtxGetDevice(&device);
      if (r != CUDA_SUCCESS) {
        if (done) d.cuEventDestroy(done);
        return r;
      }
      s.held[device].emplace_back(ptr, done);
      return CUDA_SUCCESS;
    }
  }
  return d.cuMemFreeAsync(ptr, stream);
}

bool scratch_prepare_begin() {
  Scratch& s = scratch();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.preparing.insert(current_device()).second;
}

void scratch_prepare(CUcontext context) {
  const DriverApi& d = driver();
  Scratch& s = scratch();
  CUdevice device = 0;
  bool known = false;
  try {
    check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
    device = current_device();
    known = true;
    CUmemoryPool pool = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      pool = pool_of(s, device);
    }
    CUstream stream = nullptr;
    check(d.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    CUdeviceptr ptr = 0;
    CUresult r = d.cuMemAllocFromPoolAsync(&ptr, 4096, pool, stream);
    if (r == CUDA_SUCCESS) d.cuMemFreeAsync(ptr, stream);
    d.cuStreamSynchronize(stream);
    d.cuStreamDestroy(stream);
  } catch (const Error&) {
    // the calls meet the error themselves, through the pool
  }
  if (!known) return;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.preparing.erase(device);
  }
  scratch_release_held();
}

void scratch_release_held() {
  const DriverApi& d = driver();
  CUdevice device = 0;
  if (d.cuCtxGetDevice(&device) != CUDA_SUCCESS) return;
  std::vector<std::pair<CUdeviceptr, CUevent>> held;
  {
    Scratch& s = scratch();
    std::lock_guard<std::mutex> lock(s.mutex);
    held.swap(s.held[device]);
  }
  for (auto [ptr, done] : held) {
    d.cuEventSynchronize(done);
    d.cuMemFree(ptr);
    d.cuEventDestroy(done);
  }
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  std::string message = std::string(what) + " failed: " + result_name(r);
  const Loaded& l = loaded();
  const char* text = nullptr;
  if (!l.failure && l.api.cuGetErrorString(r, &text) == CUDA_SUCCESS && text)
    message += std::string(" (") + text + ")";
  throw Error(ErrorCode::kCuda, message).with_cuda_result(r);
}

bool is_sticky_error(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

}  // namespace ktune::detail
