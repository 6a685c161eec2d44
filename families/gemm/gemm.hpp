// Host side of the GEMM family: BLAS argument checks, problem keys, and the shared launch.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platform/device.hpp"
#include "platform/nvrtc.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Device;
class Family;
class Kernel;
class KernelCache;
class Workload;

// One column-major GEMM: C(m x n) = alpha * op(A) * op(B) + beta * C. Row-major calls are turned
// into this form by the transpose identity before they get here.
struct GemmCall {
  int element_bytes = 4;  // 4: f32, 8: f64
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  double alpha = 1, beta = 0;
  const void* a = nullptr;
  std::int64_t lda = 1;
  const void* b = nullptr;
  std::int64_t ldb = 1;
  void* c = nullptr;
  std::int64_t ldc = 1;
  // The split-K partial sums' scratch filled with 0xFF (NaN) before the kernel: a workload's
  // verifying run, so that a candidate that leaves some of its partial sums unwritten reads NaN
  // there, not what the candidate before it wrote for the same inputs. Never in the runtime.
  bool poison_scratch = false;
};

// BLAS-style argument check (like XERBLA / CUBLAS_STATUS_INVALID_VALUE): throws
// Error(kInvalidArgument) naming the first wrong argument. `row_major` as passed by the caller,
// before the transpose identity; dims as the caller passed them.
void validate_gemm_args(const char* function, bool row_major, bool trans_a, bool trans_b,
                        std::int64_t m, std::int64_t n, std::int64_t k, bool alpha_zero,
                        const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
                        const void* c, std::int64_t ldc);

// Largest v in {1, 2, 4} (elements, at most 16 bytes) dividing both operand pointers' alignment
// and their leading dimensions: the widest global load the kernels may use.
int gemm_alignment(const GemmCall& call);

// dtype "f32" / "f64"; op "nn", "nt", "tn", "tt" (op(A) then op(B)).
Problem gemm_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                     std::int64_t n, std::int64_t k, int align);

// Launches the compiled candidate for a call with m, n, k > 0 and alpha != 0 (split-K workspace
// is allocated and freed on the stream).
void gemm_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                 const GemmCall& call, CUstream stream);

// The skinny path (gemm_skinny.cuh): calls with n or m at most 16 go to the gemm_skinny family,
// whose problems have the gemm family's axes and keys.
bool gemm_is_skinny(std::int64_t m, std::int64_t n);
Problem gemm_skinny_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                            std::int64_t n, std::int64_t k, int align);
// The problem Runtime::gemm runs a call as: gemm_skinny's where m or n is at most 16, else the
// gemm family's (its `family` field names which).
Problem gemm_call_problem(const std::string& dtype, bool trans_a, bool trans_b, std::int64_t m,
                          std::int64_t n, std::int64_t k, int align);
const Family& gemm_skinny_family();
void gemm_skinny_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                        const GemmCall& call, CUstream stream);

// A verified GEMM workload (random A and B, C poisoned, a double-accumulation reference) whose
// candidates run through `launch`: the gemm family's and gemm_skinny's. `p` is checked by the
// caller.
using GemmLauncher = void (*)(const Kernel&, const Config&, const DeviceLimits&, const GemmCall&,
                              CUstream);
std::unique_ptr<Workload> make_gemm_workload(const Problem& p, const Device& device,
                                             KernelCache& cache, GemmLauncher launch);
const Family& gemm_family();

// C = beta * C with `kernel` compiled from gemm_scale_name() (k == 0 or alpha == 0 in BLAS).
std::string gemm_scale_name(int element_bytes);
void gemm_scale_launch(const Kernel& kernel, const DeviceLimits& limits, const GemmCall& call,
                       CUstream stream);

// The benchmark suite (ktune bench gemm, ktune tune gemm --suite): shapes M x N x K with ops.
struct GemmShape {
  std::int64_t m, n, k;
  bool trans_a, trans_b;
};
std::vector<GemmShape> gemm_suite();

// The shape grid the shipped presets are tuned on beside the suite (ktune tune gemm --grid;
// docs/GEMM.md, "The preset grid"): squares 256 to 16384, tall and wide, small k (16 to 256),
// huge k (to 2^20), odd sizes, m or n from 1 to 16, the four ops spread over them. The same
// shapes for f32 and f64. `kind` is the part of the space a shape stands for: square, general,
// tall-wide, small-k, huge-k or skinny (m or n <= 16: the skinny kernels, family gemm_skinny).
struct GemmGridShape {
  GemmShape shape;
  const char* kind;
};
std::vector<GemmGridShape> gemm_grid();

// What `ktune tune gemm --grid CLASS` takes: all, tiled (every kind but skinny), small (the tiled
// shapes, narrowed by gemm_smallest_tiles_apply on the GPU), or one kind by name.
inline constexpr const char* kGemmGridClasses[] = {
    "all", "tiled", "small", "square", "general", "tall-wide", "small-k", "huge-k", "skinny"};
// Whether CLASS takes a grid shape of `kind`.
bool gemm_grid_class_takes(std::string_view grid_class, std::string_view kind);

// Whether GEMM's space holds the smallest block tiles (32 x 32 to 64 x 32, two warps) for an
// m x n output on a GPU of `sm_count` SMs: where 64 x 64 tiles number fewer than four waves.
// `ktune tune gemm --grid small` is the tiled grid shapes where this holds.
bool gemm_smallest_tiles_apply(std::int64_t m, std::int64_t n, int sm_count);

// The any-shape benchmark's draw (ktune bench gemm --random-shapes; docs/GEMM.md, "Random shapes
// for the any-shape benchmark", gives the distribution): n shapes from std::mt19937_64 seeded
// with `seed`, turned into shapes with integer arithmetic only, so that a seed gives the same
// shapes with any compiler, standard library and CPU. A shape whose A, B and C would need more
// than 3 GiB of `element_bytes` elements has its largest dimension scaled down to fit.
struct RandomGemmShape {
  GemmShape shape;
  std::string kind;     // the class it was drawn from: general, skinny, matvec, huge-k, small-k
  bool capped = false;  // its largest dimension was scaled down to the memory cap
};
std::vector<RandomGemmShape> gemm_random_shapes(std::size_t n, std::uint64_t seed,
                                                int element_bytes);
// The GEMM workloads' reference (gemm_reference.cuh): an m x n output in 64 x 64 tiles, a block
// each, and where they are fewer than four blocks an SM, k split over gridDim.z so that they fill
// the GPU, each split at least 256 deep (k_per_split a multiple of 16; one split: all of k).
struct GemmReferenceSplit {
  int splits = 1;
  int k_per_split = 0;
};
GemmReferenceSplit gemm_reference_split_plan(std::int64_t m, std::int64_t n, std::int64_t k,
                                             int sm_count);
// The compile request of gemm_reference_split<T, ta, tb> ("float" or "double") for `arch`.
CompileRequest gemm_reference_request(const std::string& type, bool ta, bool tb,
                                      const std::string& arch);

// The memory cap of gemm_random_shapes: A, B and C together, in bytes.
inline constexpr std::int64_t kRandomGemmMaxBytes = std::int64_t(3) << 30;

// The verdict of a GEMM workload's comparison kernel, in `result` (16 bytes: the count of wrong
// elements, then the smallest wrong index, atomicMin): cleared before the kernel runs, then read
// as "" or what is wrong, C(row, col) for C of leading dimension ldc and m rows (rows past m are
// guard rows). The gemm, gemm_skinny and gemm_tc workloads share it.
void gemm_clear_verdict(CUdeviceptr result, CUstream stream);
std::string gemm_read_verdict(CUdeviceptr result, std::int64_t ldc, std::int64_t m,
                              CUstream stream);

// The call of a GEMM workload (its verified buffers), for benchmarks running other
// implementations on the same data; throws Error(kInternal) for another family's workload.
GemmCall gemm_workload_call(const Workload& workload);

// A GEMM workload's reference, kept for the inputs it was made from. The tuner prepares every
// candidate of a run from one seed, so the reference (a double-accumulation GEMM of the whole
// problem) is made once per run instead of once per candidate: a 100-evaluation tune of
// 16258 x 13353 x 8352 nt f32 on an H100 took 58.3 s instead of 103.7 (docs/GEMM.md, "The
// reference once a run, measured"). prepare() fills A and B again every time (the same seed,
// the same values: whatever a candidate wrote into them is undone) and calls prepared(seed);
// verify() calls verify(). Where a kept reference says a candidate is wrong, it is made again and
// the candidate compared again: a candidate's stray writes past its own buffers may have reached
// the reference, and a right candidate after it must not be recorded wrong.
class KeptReference {
 public:
  void prepared(std::uint64_t seed) { inputs_ = seed, have_inputs_ = true; }
  // `make()` makes the reference of the prepared inputs; `compare()` returns "" where C matches
  // it, else what is wrong.
  template <typename Make, typename Compare>
  std::string verify(Make&& make, Compare&& compare) {
    const bool kept = have_inputs_ && made_ && made_for_ == inputs_;
    if (!kept) remake(make);
    std::string wrong = compare();
    if (!wrong.empty() && kept) {
      remake(make);
      wrong = compare();
    }
    return wrong;
  }
  // How many times the reference was made (tests).
  std::size_t made() const { return made_count_; }

 private:
  template <typename Make>
  void remake(Make& make) {
    made_ = false;  // until make() returns: one that throws leaves nothing kept
    make();
    ++made_count_;
    made_ = have_inputs_, made_for_ = inputs_;
  }
  std::uint64_t inputs_ = 0, made_for_ = 0;
  bool have_inputs_ = false, made_ = false;
  std::size_t made_count_ = 0;
};

// How many times a gemm or gemm_skinny workload made its reference (KeptReference::made); throws
// Error(kInternal) for another family's workload.
std::size_t gemm_workload_references(const Workload& workload);

}  // namespace ktune
