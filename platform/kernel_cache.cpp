// Loading CUBINs as modules, launching, and the two-level compile cache (memory, a BinaryStore).
#include "platform/kernel_cache.hpp"

#include <chrono>
#include <sstream>

#include "core/util.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"

namespace ktune {

using detail::check;
using detail::driver;

namespace {

std::string resources_to_text(const std::vector<FunctionResources>& resources) {
  std::ostringstream out;
  for (const auto& r : resources)
    out << r.mangled_name << ' ' << r.registers << ' ' << r.barriers << ' ' << r.smem_static << ' '
        << r.stack_frame << ' ' << r.spill_stores << ' ' << r.spill_loads << '\n';
  return out.str();
}

std::vector<FunctionResources> resources_from_text(const std::string& text) {
  std::vector<FunctionResources> out;
  std::istringstream in(text);
  FunctionResources r;
  while (in >> r.mangled_name >> r.registers >> r.barriers >> r.smem_static >> r.stack_frame >>
         r.spill_stores >> r.spill_loads)
    out.push_back(r);
  return out;
}

}  // namespace

CachedBinary to_cached_binary(const CompileResult& compiled) {
  return CachedBinary{compiled.cubin, compiled.lowered_names,
                      resources_to_text(compiled.resources)};
}

bool from_cached_binary(CachedBinary binary, CompileResult& out) {
  out.cubin = std::move(binary.cubin);
  out.lowered_names = std::move(binary.lowered_names);
  out.resources = resources_from_text(binary.resources_json);
  out.compile_ms = 0;  // nothing was compiled
  return out.resources.size() == out.lowered_names.size() && !out.cubin.empty();
}

Kernel::Kernel(const CompileResult& compiled, const Device& device)
    : resources_(compiled.resources),
      occupancy_block_(compiled.lowered_names.size()),
      dynamic_smem_allowed_(compiled.lowered_names.size()) {
  device.make_current();
  const auto& d = driver();
  check(d.cuModuleLoadData(&module_, compiled.cubin.data()), "cuModuleLoadData");
  for (const auto& name : compiled.lowered_names) {
    CUfunction f = nullptr;
    CUresult r = d.cuModuleGetFunction(&f, module_, name.c_str());
    if (r != CUDA_SUCCESS) {
      d.cuModuleUnload(module_);
      module_ = nullptr;
      check(r, ("cuModuleGetFunction(" + name + ")").c_str());
    }
    functions_.push_back(f);
  }
  // One architecture per module: its first function tells it.
  if (!functions_.empty() &&
      d.cuFuncGetAttribute(&binary_version_, CU_FUNC_ATTRIBUTE_BINARY_VERSION, functions_[0]) !=
          CUDA_SUCCESS)
    binary_version_ = 0;  // unknown: launch_dependent falls back to an ordinary launch
  for (auto& a : occupancy_block_) a = 0;
  for (auto& a : dynamic_smem_allowed_) a = 48 * 1024;
}

Kernel::~Kernel() {
  if (module_) driver().cuModuleUnload(module_);
}

int Kernel::occupancy_block_size(std::size_t i) const {
  int cached = occupancy_block_.at(i).load();
  if (cached) return cached;
  int min_grid = 0, block = 0;
  check(
      driver().cuOccupancyMaxPotentialBlockSize(&min_grid, &block, functions_.at(i), nullptr, 0, 0),
      "cuOccupancyMaxPotentialBlockSize");
  occupancy_block_[i] = block;
  return block;
}

int Kernel::registers(std::size_t i) const {
  int v = 0;
  check(driver().cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS, functions_.at(i)),
        "cuFuncGetAttribute(NUM_REGS)");
  return v;
}

int Kernel::max_threads_per_block(std::size_t i) const {
  int v = 0;
  check(driver().cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, functions_.at(i)),
        "cuFuncGetAttribute(MAX_THREADS_PER_BLOCK)");
  return v;
}

int Kernel::max_active_blocks(std::size_t i, int block, std::size_t dynamic_smem) const {
  int blocks = 0;
  check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, functions_.at(i), block,
                                                             dynamic_smem),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor");
  return blocks;
}

void Kernel::allow_dynamic_smem(std::size_t i, int bytes) const {
  if (dynamic_smem_allowed_.at(i).load() >= bytes) return;
  check(driver().cuFuncSetAttribute(functions_.at(i),
                                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
        "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  dynamic_smem_allowed_[i] = bytes;
}

void Kernel::launch(std::size_t i, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned smem, CUstream stream, void** args) const {
  if (smem > 48 * 1024) allow_dynamic_smem(i, static_cast<int>(smem));
  check(driver().cuLaunchKernel(functions_.at(i), gx, gy, gz, bx, by, bz, smem, stream, args,
                                nullptr),
        "cuLaunchKernel");
}

namespace {

// cuLaunchKernelEx with launch attributes.
void launch_ex(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
               unsigned bz, unsigned smem, CUstream stream, void** args, CUlaunchAttribute* attrs,
               unsigned num_attrs, const char* what) {
  CUlaunchConfig config{};
  config.gridDimX = gx;
  config.gridDimY = gy;
  config.gridDimZ = gz;
  config.blockDimX = bx;
  config.blockDimY = by;
  config.blockDimZ = bz;
  config.sharedMemBytes = smem;
  config.hStream = stream;
  config.attrs = attrs;
  config.numAttrs = num_attrs;
  check(driver().cuLaunchKernelEx(&config, f, args, nullptr), what);
}

}  // namespace

void Kernel::launch_dependent(std::size_t i, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, CUstream stream,
                              void** args) const {
  if (binary_version_ < 90) return launch(i, gx, gy, gz, bx, by, bz, smem, stream, args);
  if (smem > 48 * 1024) allow_dynamic_smem(i, static_cast<int>(smem));
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  launch_ex(functions_.at(i), gx, gy, gz, bx, by, bz, smem, stream, args, &attr, 1,
            "cuLaunchKernelEx (programmatic dependent launch)");
}

void Kernel::launch_cluster(std::size_t i, unsigned grid_x, unsigned block_x, unsigned cluster_x,
                            unsigned smem, CUstream stream, void** args) const {
  if (smem > 48 * 1024) allow_dynamic_smem(i, static_cast<int>(smem));
  CUlaunchAttribute attrs[2]{};
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = cluster_x;
  attrs[0].value.clusterDim.y = 1;
  attrs[0].value.clusterDim.z = 1;
  // Spread the clusters over the SMs: under the default policy the GEMM's split-K clusters
  // (2026-11-25, H200) landed 0 to 3 blocks per SM, a second wave on some, in grids sized to one.
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
  attrs[1].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING;
  launch_ex(functions_.at(i), grid_x, 1, 1, block_x, 1, 1, smem, stream, args, attrs, 2,
            "cuLaunchKernelEx (cluster)");
}

KernelCache::KernelCache(const Device& device, BinaryStore* store)
    : device_(device), store_(store) {}

std::shared_ptr<const Kernel> KernelCache::find_loaded(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = loaded_.find(key);
  return it == loaded_.end() ? nullptr : it->second;
}

std::shared_ptr<const Kernel> KernelCache::load(const std::string& key,
                                                const CompileResult& compiled) {
  auto kernel = std::make_shared<const Kernel>(compiled, device_);
  std::lock_guard lock(mutex_);
  auto [it, inserted] = loaded_.emplace(key, kernel);
  return it->second;  // another thread may have loaded it first; keep one
}

bool KernelCache::find_binary(const std::string& key, CompileResult& out) {
  if (!store_) return false;
  std::optional<CachedBinary> b;
  {
    std::lock_guard lock(store_mutex_);
    b = store_->find_binary(key);
  }
  return b && from_cached_binary(std::move(*b), out);
}

void KernelCache::store_binary(const std::string& key, const CompileRequest& request,
                               const CompileResult& compiled) {
  if (!store_) return;
  const CachedBinary binary = to_cached_binary(compiled);
  std::lock_guard lock(store_mutex_);
  if (store_->accepts_binaries()) store_->put_binary(key, request.arch, binary);
}

std::shared_ptr<const Kernel> KernelCache::get(const CompileRequest& request, GetTimes* times) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = times ? Clock::now() : Clock::time_point{};
  std::string key = compile_cache_key(request);
  if (auto k = find_loaded(key)) {
    if (times) *times = GetTimes{ms_between(t0, Clock::now())};
    return k;
  }
  const auto t1 = times ? Clock::now() : Clock::time_point{};
  CompileResult compiled;
  if (!find_binary(key, compiled)) {
    compiled = compile(request);
    count_compile();
    store_binary(key, request, compiled);
  }
  const auto t2 = times ? Clock::now() : Clock::time_point{};
  auto kernel = load(key, compiled);
  if (times)
    *times = GetTimes{ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, Clock::now())};
  return kernel;
}

}  // namespace ktune
