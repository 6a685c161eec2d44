// ktune::Runtime: looks up, compiles once, caches and launches tuned kernels on the caller's
// stream.
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include "db/database.hpp"
#include "ktune/ktune.hpp"
#include "runtime/device.hpp"
#include "runtime/kernel_cache.hpp"
#include "runtime/lookup.hpp"
#include "templates/elementwise.hpp"
#include "templates/family.hpp"

namespace ktune {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kNoDriver:
      return "no CUDA driver";
    case ErrorCode::kNoDevice:
      return "no CUDA device";
    case ErrorCode::kCuda:
      return "CUDA error";
    case ErrorCode::kCompile:
      return "compile error";
    case ErrorCode::kDatabase:
      return "database error";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kInternal:
      return "internal error";
  }
  return "error";
}

std::string default_database_path() { return database_default_path(); }

struct Runtime::Impl {
  struct Entry {
    LookupResult choice;
    std::shared_ptr<const Kernel> kernel;
  };

  Options options;
  std::unique_ptr<Device> device;
  std::unique_ptr<Database> db;
  std::unique_ptr<KernelCache> kernels;
  std::mutex mutex;  // guards `entries` only; never held across a compile or a launch
  std::unordered_map<std::string, Entry> entries;

  explicit Impl(Options o) : options(std::move(o)) {
    device = std::make_unique<Device>(options.device);
    if (options.use_database)
      db = open_database(options.database.empty() ? database_default_path() : options.database);
    kernels = std::make_unique<KernelCache>(*device, db.get());
  }

  // A database that cannot be created (read-only location) is no error: defaults serve. One that
  // exists but is corrupt or foreign is: the user pointed us at it.
  static std::unique_ptr<Database> open_database(const std::string& path) {
    try {
      return std::make_unique<Database>(path, Database::Mode::kReadWrite);
    } catch (const Error&) {
      if (!std::filesystem::exists(path)) return nullptr;
      return std::make_unique<Database>(path, Database::Mode::kReadOnly);
    }
  }

  Entry resolve(const Family& family, const Problem& problem) {
    const std::string key = family.name() + "|" + problem.key();
    {
      std::lock_guard lock(mutex);
      auto it = entries.find(key);
      if (it != entries.end()) return it->second;
    }
    Entry e;
    e.choice = lookup_config(db.get(), device->info(), family, problem);
    e.kernel =
        kernels->get(family.compile_request(e.choice.config, problem, device->limits().arch()));
    std::lock_guard lock(mutex);
    return entries.emplace(key, e).first->second;
  }

  template <typename T>
  void elementwise(ElementwiseOp op, const char* what, ElementwisePointers ptr, std::size_t n,
                   CUstream stream) {
    if (n == 0) return;
    auto require = [&](const void* p, const char* arg) {
      if (!p) throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": " + arg + " is null");
    };
    if (op == ElementwiseOp::kCopy) {
      require(ptr.out0, "dst");
      require(ptr.in0, "src");
    } else if (op == ElementwiseOp::kAdd) {
      require(ptr.out0, "c");
      require(ptr.in0, "a");
      require(ptr.in1, "b");
    } else {
      require(ptr.out0, "re_out");
      require(ptr.out1, "im_out");
      require(ptr.in0, "re_in");
      require(ptr.in1, "im_in");
    }
    ElementwiseCall call{ptr, n};
    if (alignment_of(call) < static_cast<int>(sizeof(T)))
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(what) + ": a pointer is not aligned to its element size");
    device->make_current();
    const Family& family = find_family("elementwise");
    Problem problem =
        elementwise_problem(op, sizeof(T) == 4 ? "f32" : "f64", n, alignment_of(call));
    Entry e = resolve(family, problem);
    elementwise_launch(*e.kernel, e.choice.config, device->limits(), sizeof(T), call, stream);
  }
};

Runtime::Runtime(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Runtime::~Runtime() = default;
Runtime::Runtime(Runtime&&) noexcept = default;
Runtime& Runtime::operator=(Runtime&&) noexcept = default;

void Runtime::copy(float* dst, const float* src, std::size_t n, CUstream stream) {
  impl_->elementwise<float>(ElementwiseOp::kCopy, "copy", {dst, nullptr, src, nullptr}, n, stream);
}
void Runtime::copy(double* dst, const double* src, std::size_t n, CUstream stream) {
  impl_->elementwise<double>(ElementwiseOp::kCopy, "copy", {dst, nullptr, src, nullptr}, n, stream);
}
void Runtime::add(float* c, const float* a, const float* b, std::size_t n, CUstream stream) {
  impl_->elementwise<float>(ElementwiseOp::kAdd, "add", {c, nullptr, a, b}, n, stream);
}
void Runtime::add(double* c, const double* a, const double* b, std::size_t n, CUstream stream) {
  impl_->elementwise<double>(ElementwiseOp::kAdd, "add", {c, nullptr, a, b}, n, stream);
}
void Runtime::complex_copy(float* re_out, float* im_out, const float* re_in, const float* im_in,
                           std::size_t n, CUstream stream) {
  impl_->elementwise<float>(ElementwiseOp::kComplexCopy, "complex_copy",
                            {re_out, im_out, re_in, im_in}, n, stream);
}
void Runtime::complex_copy(double* re_out, double* im_out, const double* re_in, const double* im_in,
                           std::size_t n, CUstream stream) {
  impl_->elementwise<double>(ElementwiseOp::kComplexCopy, "complex_copy",
                             {re_out, im_out, re_in, im_in}, n, stream);
}

Choice Runtime::explain(const std::string& family_name, const std::string& problem_key) {
  const Family& family = find_family(family_name);
  Problem problem = Problem::parse(family_name, problem_key);
  family.validate(problem);
  {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->entries.find(family.name() + "|" + problem.key());
    if (it != impl_->entries.end()) {
      Choice c = to_choice(it->second.choice, family, problem);
      c.step = LookupStep::kCache;
      return c;
    }
  }
  return to_choice(lookup_config(impl_->db.get(), impl_->device->info(), family, problem), family,
                   problem);
}

std::uint64_t Runtime::compile_count() const { return impl_->kernels->compile_count(); }

}  // namespace ktune
