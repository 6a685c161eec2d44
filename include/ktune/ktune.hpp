// Public API of the ktune runtime: tuned kernels launched on the caller's stream and pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ktune/error.hpp"

// The same declaration as in cuda.h / cuda_runtime.h: a cudaStream_t, a CUstream, or a stream
// from PyTorch (torch.cuda.current_stream().cuda_stream) or CuPy can be passed as is.
typedef struct CUstream_st* CUstream;

namespace ktune {

struct Options {
  // Tuning database to read from. Empty: $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db
  // (else ~/.cache/ktune/tuning.db). A missing file is not an error: built-in defaults are used.
  std::string database;
  // CUDA device ordinal. The device's primary context is used, as the CUDA runtime does.
  int device = 0;
  // false: never open a database, use built-in defaults only.
  bool use_database = true;
};

// Which step of the lookup chain chose the configuration for a problem.
enum class LookupStep { kCache, kExact, kNearest, kSameArch, kDefault };
std::string_view to_string(LookupStep step) noexcept;

struct Choice {
  LookupStep step = LookupStep::kDefault;
  std::string family;
  std::string problem;             // the problem asked for, as a key
  std::string tuned_problem;       // the problem whose result was used (differs for kNearest)
  std::string config;              // parameters, "NAME=value,..."
  std::optional<double> measured;  // figure measured for tuned_problem, in `unit`
  std::string unit;
  std::string device;  // device the result was measured on
};

// Where the default database lives: $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db.
std::string default_database_path();

class Runtime {
 public:
  explicit Runtime(Options options = {});
  ~Runtime();
  Runtime(Runtime&&) noexcept;
  Runtime& operator=(Runtime&&) noexcept;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // --- elementwise: any n including 0, any alignment of the pointers ---
  void copy(float* dst, const float* src, std::size_t n, CUstream stream = nullptr);
  void copy(double* dst, const double* src, std::size_t n, CUstream stream = nullptr);
  // c[i] = a[i] + b[i]
  void add(float* c, const float* a, const float* b, std::size_t n, CUstream stream = nullptr);
  void add(double* c, const double* a, const double* b, std::size_t n, CUstream stream = nullptr);
  // Split complex copy: (re_out, im_out)[i] = (re_in, im_in)[i]
  void complex_copy(float* re_out, float* im_out, const float* re_in, const float* im_in,
                    std::size_t n, CUstream stream = nullptr);
  void complex_copy(double* re_out, double* im_out, const double* re_in, const double* im_in,
                    std::size_t n, CUstream stream = nullptr);

  // Which configuration a problem gets and why. `problem` is a key as `ktune query` prints it,
  // e.g. family "elementwise", problem "dtype=f32;op=copy;align=16;n=1048576".
  Choice explain(const std::string& family, const std::string& problem);

  // Number of NVRTC compilations this Runtime ran (0 on a warm start with cached binaries).
  std::uint64_t compile_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
