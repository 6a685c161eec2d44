// Elementwise family descriptor: parameters, constraints, names, launch geometry, workload.
#include "families/elementwise/elementwise.hpp"

#include <algorithm>
#include <limits>

#include "families/family.hpp"
#include "families/file_family.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {

constexpr std::uint64_t kGuard = 64;  // poisoned elements before and after each output

const char* op_name(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::kCopy:
      return "copy";
    case ElementwiseOp::kAdd:
      return "add";
    case ElementwiseOp::kComplexCopy:
      return "complex_copy";
  }
  return "?";
}

ElementwiseOp parse_op(const std::string& s) {
  if (s == "copy") return ElementwiseOp::kCopy;
  if (s == "add") return ElementwiseOp::kAdd;
  if (s == "complex_copy") return ElementwiseOp::kComplexCopy;
  throw Error(ErrorCode::kInvalidArgument,
              "elementwise: unknown op '" + s + "' (copy, add, complex_copy)");
}

int dtype_bytes(const std::string& dtype) {
  if (dtype == "f32") return 4;
  if (dtype == "f64") return 8;
  throw Error(ErrorCode::kInvalidArgument, "elementwise: unknown dtype '" + dtype + "' (f32, f64)");
}

const char* cuda_type(int bytes) { return bytes == 4 ? "float" : "double"; }

int reads_of(ElementwiseOp op) { return op == ElementwiseOp::kCopy ? 1 : 2; }
int writes_of(ElementwiseOp op) { return op == ElementwiseOp::kComplexCopy ? 2 : 1; }

std::int64_t get(const Config& c, const char* name) { return config_value(c, name, "elementwise"); }

class ElementwiseWorkload;

// The family's data (axes, parameters, constraints, kernel name, metric, problems) is its family
// file, elementwise.family.toml; this class adds what data cannot say: the launch (the occupancy
// API for BLOCK=0), the workload with its guard-poisoned outputs and bitwise check, the default
// configuration, the rules on a problem's alignment, and the register check of a compiled kernel.
class ElementwiseFamily final : public BuiltinFileFamily {
 public:
  ElementwiseFamily() : BuiltinFileFamily("elementwise") {}

  void validate(const Problem& p) const override {
    BuiltinFileFamily::validate(p);
    const std::int64_t align = p.size("align");
    if (align != 4 && align != 8 && align != 16)
      throw Error(ErrorCode::kInvalidArgument, "elementwise: align must be 4, 8 or 16 bytes");
    if (align < dtype_bytes(p.attr("dtype")))
      throw Error(ErrorCode::kInvalidArgument, "elementwise: align " + std::to_string(align) +
                                                   " is below the element size of " +
                                                   p.attr("dtype"));
  }

  std::string reject_compiled(const Config& c, const Problem&, const DeviceLimits& limits,
                              const FunctionResources& res) const override {
    const std::int64_t block = get(c, "BLOCK");
    if (block == 0 || res.registers <= 0) return {};  // the occupancy API sizes the block
    // Registers are allocated per warp in units of 256 (8 per thread).
    const std::int64_t per_warp = (res.registers * 32 + 255) / 256 * 256;
    if ((block + 31) / 32 * per_warp > limits.regs_per_block)
      return std::to_string(res.registers) + " registers per thread do not fit " +
             std::to_string(block) + " threads in one block";
    return {};
  }

  int block_threads(const Config& c, const Problem&) const override {
    return static_cast<int>(get(c, "BLOCK"));
  }

  Config default_config(const Problem& p, const DeviceLimits&) const override {
    // A grid-stride loop over 8 blocks per SM with 16-byte accesses: correct for any n and any
    // alignment (the kernel falls back to scalar accesses), and near the memory roofline.
    return {{"BLOCK", 256},
            {"GRID", 8},
            {"STRIDE", 1},
            {"UNROLL", 4},
            {"VEC", 16 / dtype_bytes(p.attr("dtype"))},
            {"CACHE", 0}};
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override;
};

class ElementwiseWorkload final : public Workload {
 public:
  ElementwiseWorkload(const ElementwiseFamily& family, const Problem& p, const Device& device,
                      KernelCache& cache)
      : device_(device),
        op_(parse_op(p.attr("op"))),
        bytes_(dtype_bytes(p.attr("dtype"))),
        n_(static_cast<std::uint64_t>(p.size("n"))),
        align_(static_cast<int>(p.size("align"))),
        work_(*family.work_of(p, device.limits())) {
    const std::uint64_t alloc = (n_ + 2 * kGuard) * bytes_ + 16;
    const std::uint64_t offset = kGuard * bytes_ + (align_ == 16 ? 0 : align_);
    for (int i = 0; i < reads_of(op_); ++i) inputs_.emplace_back(alloc);
    for (int i = 0; i < writes_of(op_); ++i) outputs_.emplace_back(alloc);
    result_ = detail::DeviceBuffer(2 * sizeof(std::uint64_t));
    call_.n = n_;
    call_.ptr.in0 = reinterpret_cast<const void*>(inputs_[0].get() + offset);
    call_.ptr.in1 =
        inputs_.size() > 1 ? reinterpret_cast<const void*>(inputs_[1].get() + offset) : nullptr;
    call_.ptr.out0 = reinterpret_cast<void*>(outputs_[0].get() + offset);
    call_.ptr.out1 =
        outputs_.size() > 1 ? reinterpret_cast<void*>(outputs_[1].get() + offset) : nullptr;
    // Helper kernels: the random fill and the bitwise check.
    CompileRequest r = family.compile_request(family.default_config(p, device.limits()), p,
                                              device.limits().arch());
    const std::string type = cuda_type(bytes_);
    r.name_expressions = {
        "ktune::fill_random<" + type + ">",
        "ktune::elementwise_check<" + std::to_string(static_cast<int>(op_)) + ", " + type + ">"};
    helpers_ = cache.get(r);
  }

  void prepare(std::uint64_t seed, CUstream stream) override {
    const auto& d = driver();
    std::uint64_t count = inputs_.empty() ? 0 : inputs_[0].size() / bytes_;
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      CUdeviceptr p = inputs_[i].get();
      std::uint64_t s = seed * 2 + i;
      void* args[] = {&p, &count, &s};
      helpers_->launch(0, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, args);
    }
    for (auto& o : outputs_)
      check(d.cuMemsetD8Async(o.get(), 0xFF, o.size(), stream), "cuMemsetD8Async");
  }

  void run(const Kernel& kernel, const Config& config, CUstream stream) override {
    elementwise_launch(kernel, config, device_.limits(), bytes_, call_, stream);
  }

  std::string verify(CUstream stream) override {
    const auto& d = driver();
    check(d.cuMemsetD8Async(result_.get(), 0, 8, stream), "cuMemsetD8Async");
    check(d.cuMemsetD8Async(result_.get() + 8, 0xFF, 8, stream), "cuMemsetD8Async");
    ElementwisePointers args = call_.ptr;
    std::uint64_t n = n_, guard = kGuard;
    CUdeviceptr result = result_.get();
    void* params[] = {&args, &n, &guard, &result};
    helpers_->launch(1, device_.limits().sm_count * 8, 1, 1, 256, 1, 1, 0, stream, params);
    std::uint64_t host[2] = {0, 0};
    check(d.cuMemcpyDtoHAsync(host, result_.get(), sizeof(host), stream), "cuMemcpyDtoHAsync");
    check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (host[0] == 0) return {};
    const long long first = static_cast<long long>(host[1]) - static_cast<long long>(kGuard);
    std::string where = first < 0 || first >= static_cast<long long>(n_)
                            ? "a write outside the output at index " + std::to_string(first)
                            : "first at index " + std::to_string(first);
    return std::to_string(host[0]) + " wrong element(s), " + where;
  }

  double work() const override { return work_; }
  const ElementwiseCall& call() const { return call_; }
  std::size_t bytes() const override {
    std::size_t b = 0;
    for (const auto& x : inputs_) b += x.size();
    for (const auto& x : outputs_) b += x.size();
    return b;
  }

 private:
  const Device& device_;
  ElementwiseOp op_;
  int bytes_;
  std::uint64_t n_;
  int align_;
  double work_;  // bytes moved per run (the family file's metric)
  std::vector<detail::DeviceBuffer> inputs_, outputs_;
  detail::DeviceBuffer result_;
  ElementwiseCall call_;
  std::shared_ptr<const Kernel> helpers_;
};

std::unique_ptr<Workload> ElementwiseFamily::make_workload(const Problem& p, const Device& device,
                                                           KernelCache& cache) const {
  return std::make_unique<ElementwiseWorkload>(*this, p, device, cache);
}

}  // namespace

const Family& elementwise_family() {
  static const ElementwiseFamily instance;
  return instance;
}

ElementwiseCall elementwise_workload_call(const Workload& workload) {
  const auto* w = dynamic_cast<const ElementwiseWorkload*>(&workload);
  if (!w)
    throw Error(ErrorCode::kInternal, "elementwise_workload_call: not an elementwise workload");
  return w->call();
}

int alignment_of(const ElementwiseCall& call) {
  std::uintptr_t bits = 16;
  for (const void* p : {static_cast<const void*>(call.ptr.out0),
                        static_cast<const void*>(call.ptr.out1), call.ptr.in0, call.ptr.in1})
    if (p) bits |= reinterpret_cast<std::uintptr_t>(p);
  return static_cast<int>(bits & (~bits + 1));  // lowest set bit, at most 16
}

Problem elementwise_problem(ElementwiseOp op, const std::string& dtype, std::uint64_t n,
                            int align) {
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw Error(ErrorCode::kInvalidArgument, "elementwise: n is too large");
  Problem p;
  p.family = "elementwise";
  p.attrs = {{"op", op_name(op)}, {"dtype", dtype}};
  p.sizes = {{"n", static_cast<std::int64_t>(n)}, {"align", align}};
  return p;
}

ElementwisePlan elementwise_plan(const Kernel& kernel, const Config& config,
                                 const DeviceLimits& limits, int element_bytes, std::uint64_t n,
                                 int align) {
  const int vec = static_cast<int>(get(config, "VEC"));
  const int unroll = static_cast<int>(get(config, "UNROLL"));
  const int grid_per_sm = static_cast<int>(get(config, "GRID"));
  int block = static_cast<int>(get(config, "BLOCK"));
  if (block == 0) block = kernel.occupancy_block_size(0);
  const bool vector_ok = vec > 1 && align >= vec * element_bytes;
  const std::uint64_t units = vector_ok ? n / vec : n;
  // Blocks that give every thread at least one full step of UNROLL accesses.
  const std::uint64_t needed = std::max<std::uint64_t>(
      1, (units + std::uint64_t(block) * unroll - 1) / (std::uint64_t(block) * unroll));
  std::uint64_t grid = grid_per_sm == 0 ? needed
                                        : std::min<std::uint64_t>(
                                              needed, std::uint64_t(grid_per_sm) * limits.sm_count);
  grid = std::min<std::uint64_t>(grid,
                                 0x7fffffffull);  // the kernels loop over whatever the grid leaves
  return {static_cast<unsigned>(grid), static_cast<unsigned>(block), vector_ok ? 1 : 0};
}

void elementwise_launch(const Kernel& kernel, const ElementwisePlan& plan,
                        const ElementwiseCall& call, CUstream stream) {
  if (call.n == 0) return;
  ElementwisePointers args = call.ptr;
  std::uint64_t n = call.n;
  int vector_flag = plan.vector_flag;
  void* params[] = {&args, &n, &vector_flag};
  kernel.launch(0, plan.grid, 1, 1, plan.block, 1, 1, 0, stream, params);
}

void elementwise_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                        int element_bytes, const ElementwiseCall& call, CUstream stream) {
  if (call.n == 0) return;
  elementwise_launch(
      kernel, elementwise_plan(kernel, config, limits, element_bytes, call.n, alignment_of(call)),
      call, stream);
}

}  // namespace ktune
