// Loaded kernels and the compile cache: memory -> a BinaryStore (the database) -> NVRTC.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/nvrtc.hpp"

namespace ktune {

class Device;

// A compiled module as a store keeps it.
struct CachedBinary {
  std::vector<char> cubin;
  std::vector<std::string> lowered_names;
  std::string resources_json;
};

// Where KernelCache keeps CUBINs between processes: the results database implements it (db/),
// so that the platform layer knows nothing of databases.
class BinaryStore {
 public:
  virtual ~BinaryStore() = default;
  virtual std::optional<CachedBinary> find_binary(const std::string& key) = 0;
  virtual void put_binary(const std::string& key, const std::string& arch,
                          const CachedBinary& binary) = 0;
  virtual bool accepts_binaries() const = 0;  // false: put_binary is not to be called
};

// A compile result as a store keeps it, and back: false when the stored form is unreadable (a
// resource list that does not match the names, no code), which the caller compiles again.
CachedBinary to_cached_binary(const CompileResult& compiled);
bool from_cached_binary(CachedBinary binary, CompileResult& out);

// A loaded CUBIN and the kernels looked up in it, one per name expression.
class Kernel {
 public:
  Kernel(const CompileResult& compiled, const Device& device);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  CUfunction function(std::size_t i = 0) const { return functions_.at(i); }
  const FunctionResources& resources(std::size_t i = 0) const { return resources_.at(i); }
  std::size_t size() const { return functions_.size(); }

  // The occupancy API's block size for function i (cached; smem_per_thread bytes of dynamic
  // shared memory per thread, 0 for none).
  int occupancy_block_size(std::size_t i = 0) const;
  // Blocks of `block` threads that fit on one SM at once.
  int max_active_blocks(std::size_t i, int block, std::size_t dynamic_smem) const;
  // What the driver says of the loaded function i: its registers per thread, and the largest
  // block it can be launched with (registers and shared memory permitting).
  int registers(std::size_t i = 0) const;
  int max_threads_per_block(std::size_t i = 0) const;
  // Raises the dynamic shared memory limit of function i to at least `bytes` (once).
  void allow_dynamic_smem(std::size_t i, int bytes) const;

  void launch(std::size_t i, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
              unsigned block_y, unsigned block_z, unsigned dynamic_smem, CUstream stream,
              void** args) const;
  // Launch as a programmatic dependent of the kernel before it in the stream (PDL, compute
  // capability 9.0+): the launch and the first blocks' start overlap that kernel's last blocks,
  // so function i must run griddepcontrol.wait before it touches memory that kernel writes (it
  // returns once that kernel has finished and its writes are visible). Where the module was built
  // for an earlier architecture, an ordinary launch.
  void launch_dependent(std::size_t i, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                        unsigned block_x, unsigned block_y, unsigned block_z, unsigned dynamic_smem,
                        CUstream stream, void** args) const;
  // Launch with a thread-block cluster of cluster_x blocks (compute capability 9.0+).
  void launch_cluster(std::size_t i, unsigned grid_x, unsigned block_x, unsigned cluster_x,
                      unsigned dynamic_smem, CUstream stream, void** args) const;

 private:
  CUmodule module_ = nullptr;
  std::vector<CUfunction> functions_;
  std::vector<FunctionResources> resources_;
  mutable std::vector<std::atomic<int>> occupancy_block_;
  mutable std::vector<std::atomic<int>> dynamic_smem_allowed_;
  int binary_version_ = 0;  // of the module: 90 for sm_90
};

// Compiles and loads kernels once per process; CUBINs persist in the binary store
// (when there is a store that accepts them), so a warm start compiles nothing. Thread-safe.
class KernelCache {
 public:
  KernelCache(const Device& device, BinaryStore* store);

  // Where get()'s time went, for a caller that asks (`ktune bench runtime`'s first calls).
  struct GetTimes {
    double key_ms = 0;     // the request's cache key: its source and options hashed
    double binary_ms = 0;  // the binary: read from the store, or compiled (and stored)
    double load_ms = 0;    // the module loaded and its functions found; 0 when loaded before
  };
  std::shared_ptr<const Kernel> get(const CompileRequest& request, GetTimes* times = nullptr);

  // The pieces of get(), for the tuner's pipeline: compile on worker threads, load on the GPU one.
  std::shared_ptr<const Kernel> find_loaded(const std::string& key);
  std::shared_ptr<const Kernel> load(const std::string& key, const CompileResult& compiled);
  // A binary from the store, if present and readable.
  bool find_binary(const std::string& key, CompileResult& out);
  void store_binary(const std::string& key, const CompileRequest& request,
                    const CompileResult& compiled);

  std::uint64_t compile_count() const { return compiles_.load(); }
  void count_compile() { ++compiles_; }

 private:
  const Device& device_;
  BinaryStore* store_;
  // Serializes the store's calls: a Database is one SQLite connection, on which two threads'
  // transactions cannot nest (threads of a runtime that compiled at once failed with "cannot
  // start a transaction within a transaction"). Never held across a compile.
  std::mutex store_mutex_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const Kernel>> loaded_;
  std::atomic<std::uint64_t> compiles_{0};
};

}  // namespace ktune
