// The skinny kernels' rules (gemm_skinny.cuh for f32 / f64, gemm_tc_skinny.cuh for bf16, fp16 and
// tf32): the call as D(M x N) = X(M x K) Y(K x N) with N <= 16, and which block shapes, vector
// widths and k splits a problem allows. Both families' constraints, defaults and adaptation are
// these, written once; the element sizes tell them apart.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "families/family.hpp"

namespace ktune {
class Kernel;
}

namespace ktune::skinny {

// The call as D(M x N) = X(M x K) Y(K x N), N <= 16: C itself where n is the small side, else
// C^T = op(B)^T op(A)^T. Strides in elements.
struct Geometry {
  bool swapped = false;  // m is the small side: D = C^T
  std::int64_t m = 0, n = 0, k = 0;
  bool x_kcontig = false, y_kcontig = false;
  long long xs_m = 0, xs_k = 0, ys_k = 0, ys_n = 0, ds_m = 0, ds_n = 0;
};
Geometry geometry_of(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::int64_t lda = 0, std::int64_t ldb = 0, std::int64_t ldc = 0);

// Element sizes: X and Y as loaded (in), the sums in registers and shared memory (acc); k per
// split is a multiple of k_quantum elements (the dot kernel's packets stay aligned).
struct Types {
  int in_bytes = 4, acc_bytes = 4;
  std::int64_t k_quantum = 4;
  // The default configuration: bytes per load of an m-contiguous X (VEC), and whether the dot
  // kernel's block narrows to k's packets where k is short (THREADS x VEC >= k).
  int axpy_load_bytes = 4;
  bool threads_fit_k = false;
};

// k per split, and the splits that are not empty.
struct KParts {
  std::int64_t per_split, splits;
};
KParts k_parts(std::int64_t k, std::int64_t split, std::int64_t quantum);

std::int64_t get(const Config& c, const char* name);
// GROUPS, 0 (Y through the L1 cache) where the family has no such parameter.
std::int64_t groups_of(const Config& c);
// MMA = 1 (skinny_dot_mma); false where the family has no such parameter.
bool mma_of(const Config& c);

// The parameters both families search: THREADS, ROWS, VEC (of `vec` values, help `vec_help`),
// KWARPS, UNROLL, SPLITK (help `split_help`); with `extended` (gemm_skinny's f32 / f64 kernels)
// SPLITK up to 512, GROUPS (skinny_dot_staged: Y staged in shared memory) and MMA
// (skinny_dot_mma: f64 on the tensor cores).
std::vector<Param> params(std::vector<std::int64_t> vec, const char* vec_help,
                          const char* split_help, bool extended = false);

// The parameters (THREADS, ROWS, VEC, KWARPS, UNROLL, SPLITK, GROUPS) and their rules for one
// problem (its geometry, alignment class in elements and types).
class Rules {
 public:
  explicit Rules(std::vector<Param> params);
  const std::vector<Param>& params() const { return params_; }

  // Rows of D one block covers, and the blocks of the grid.
  static std::int64_t block_rows(const Config& c, bool x_kcontig);
  static std::int64_t blocks(const Config& c, const Geometry& s);

  std::string reject(const Config& c, const Geometry& s, std::int64_t align, const Types& t,
                     const DeviceLimits& limits) const;
  // A configuration from another problem: its block shape kept where this problem allows it, and
  // k split afresh for this problem's rows and k.
  Config adapt(const Config& config, const Geometry& s, std::int64_t align, const Types& t,
               const DeviceLimits& limits) const;
  // Wide loads; for the dot kernel as many rows per block as half the registers' budget allows;
  // k split to fill the GPU. `tensor_cores` false: the FMA kernels only (MMA 0).
  Config default_config(const Geometry& s, std::int64_t align, const Types& t,
                        const DeviceLimits& limits, bool tensor_cores = true) const;

 private:
  Config fill_split(Config c, const Geometry& s, std::int64_t align, const Types& t,
                    const DeviceLimits& limits) const;
  std::vector<Param> params_;
  bool extended_ = false;  // GROUPS and MMA among the parameters (params' `extended`)
};

// Launches the compiled candidate (function 0, and with k split the reduction, function 1, as its
// programmatic dependent) with `args`, the kernels' parameter struct (its workspace set when k
// is split).
void launch(const Kernel& kernel, const Config& c, const Geometry& s, const KParts& parts,
            void* args, CUstream stream);

}  // namespace ktune::skinny
