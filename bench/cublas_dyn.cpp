#define KTUNE_CUBLAS_DYN_NO_NAMES
#include "bench/cublas_dyn.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <mutex>
#include <stdexcept>

namespace ktune::cublas_dyn {
namespace {

std::string soname(Library lib) {
  return std::string(lib == Library::kCublas ? "libcublas.so." : "libcublasLt.so.") +
         std::to_string(CUBLAS_VER_MAJOR);
}

void* open(Library lib) {
  const std::string name = soname(lib);
  // As a linked library would be found (this executable's run path, LD_LIBRARY_PATH, the cache).
  if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  std::string why = dlerror();
  // Else beside libnvrtc, which ktune links: the toolkit's library folder.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
    std::string dir = info.dli_fname;
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    if (!dir.empty())
      if (void* h = dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  }
  throw std::runtime_error(name + " could not be loaded (the cuBLAS anchor of ktune bench needs " +
                           "the CUDA toolkit's cuBLAS): " + why);
}

}  // namespace

void* library(Library lib) {
  static std::mutex mutex;
  static void* handles[2] = {nullptr, nullptr};
  std::lock_guard lock(mutex);
  void*& h = handles[lib == Library::kCublas ? 0 : 1];
  if (!h) h = open(lib);
  return h;
}

void* symbol(Library lib, const char* name) {
  void* h = library(lib);
  dlerror();
  void* s = dlsym(h, name);
  if (!s) {
    const char* why = dlerror();
    throw std::runtime_error(soname(lib) + " has no function " + name +
                             (why ? std::string(": ") + why : std::string()));
  }
  return s;
}

std::vector<Function> functions() {
  std::vector<Function> out;
#define KTUNE_CUBLAS_ENTRY(lib, fn) out.push_back({Library::lib, #fn});
  KTUNE_CUBLAS_FUNCTIONS(KTUNE_CUBLAS_ENTRY)
#undef KTUNE_CUBLAS_ENTRY
  return out;
}

}  // namespace ktune::cublas_dyn
