// Loads libcuda.so.1 at run time and resolves the driver API through cuGetProcAddress.
#include "platform/driver.hpp"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <optional>
#include <string_view>

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

CUdeviceptr scratch_alloc(std::size_t bytes, CUstream stream) {
  const DriverApi& d = driver();
  CUdevice device = 0;
  check(d.cuCtxGetDevice(&device), "cuCtxGetDevice");
  static std::mutex mutex;
  static std::map<CUdevice, CUmemoryPool> pools;  // for the life of the process
  CUmemoryPool pool = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = pools.find(device);
    if (it == pools.end()) {
      CUmemPoolProps props{};
      props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
      props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      props.location.id = device;
      check(d.cuMemPoolCreate(&pool, &props), "cuMemPoolCreate (scratch)");
      cuuint64_t keep = cuuint64_t(1) << 30;
      check(d.cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
            "cuMemPoolSetAttribute (scratch)");
      it = pools.emplace(device, pool).first;
    }
    pool = it->second;
  }
  CUdeviceptr ptr = 0;
  check(d.cuMemAllocFromPoolAsync(&ptr, bytes, pool, stream), "cuMemAllocFromPoolAsync (scratch)");
  return ptr;
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
