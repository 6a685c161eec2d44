// Public API of the ktune runtime: tuned kernels launched on the caller's stream and pointers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/error.hpp"
#include "ktune/launch.hpp"

// The same declaration as in cuda.h / cuda_runtime.h: a cudaStream_t, a CUstream, or a stream
// from PyTorch (torch.cuda.current_stream().cuda_stream) or CuPy can be passed as is.
typedef struct CUstream_st* CUstream;
// The 16-bit types of cuda_bf16.h and cuda_fp16.h, declared as those headers declare them: the
// typed tensor-core gemm() calls take pointers to them without this header including CUDA's.
struct __nv_bfloat16;
struct __half;

namespace ktune {

class MissTuner;

struct Options {
  // Tuning database to read from. Empty: $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db
  // (else ~/.cache/ktune/tuning.db). A missing file is created (with the shipped results); where
  // it cannot be, the shipped results are used from memory. A file this process can read but not
  // write is used read-only. A file that is not a ktune database (damaged, another
  // application's, a FIFO) is left untouched: the runtime warns and answers from the shipped
  // results and the built-in defaults, as without a database.
  std::string database;
  // CUDA device ordinal. The device's primary context is used, as the CUDA runtime does.
  int device = 0;
  // false: never open a database, use built-in defaults only.
  bool use_database = true;
  // Tunes a problem the database has no exact result for, at its first call, and stores the
  // result (see MissTuner; ktune/tune_on_miss.hpp makes one). Null: never tune, the lookup chain
  // answers. Needs a writable database.
  std::shared_ptr<MissTuner> tune_on_miss;
  // With tune_on_miss: the call that misses is answered at once by the lookup chain, as without
  // tune_on_miss, and the problem is tuned by a thread of the runtime's own, one problem at a time;
  // once stored, later calls run the tuned kernel. No call waits for a tuning run (but the
  // runtime's destructor waits for the one in progress: at most its budget). wait_for_tuning()
  // returns once every queued problem is tuned. A failed tuning run is reported through
  // on_warning and not tried again by this runtime.
  bool tune_in_background = false;
  // Receives what the runtime warns about (a database it cannot use, a network filesystem, a
  // failed tuning run in the background: then called from the runtime's tuning thread).
  // Empty: printed to stderr, prefixed "ktune: warning: ".
  std::function<void(const std::string&)> on_warning;
  // Family files (NAME.family.toml) whose kernels launch() may run, besides those of
  // $KTUNE_FAMILY_PATH and $KTUNE_FAMILY_FILES. A file that cannot be read throws at construction.
  std::vector<std::string> family_files;
  // Problems nobody tuned are answered by the family's model ranking the tuned winners (the
  // `predicted` step, GEMM). false: by the nearest tuned problem's winner as it is, the chain
  // before the model (for comparing the two: `ktune bench gemm --random-shapes`).
  bool predict = true;
  // gemm() of float arrays runs on the tensor cores as TF32 (10 bits of mantissa, fp32
  // accumulation: gemm_ex with kTF32) on GPUs that have them (sm_80 and later), as PyTorch's
  // allow_tf32 and cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32; false: FP32 (see strict_fp32).
  bool allow_tf32 = false;
  // gemm() of float arrays computes every product and sum in FP32 on the FMA units, as cuBLAS's
  // default math (and PyTorch's float32_matmul_precision "highest"). false: a product with m or n
  // of 9 to 16 may run on the tensor cores as 3xTF32 where that was faster (each operand split
  // in two TF32 parts, three products; about 2^-21 of |a b| lost per product where FP32 rounds to
  // 2^-24; within FP32 GEMM's error bound, which every tuned candidate is verified against).
  // Excludes allow_tf32 (Error kInvalidArgument).
  bool strict_fp32 = false;
};

// Tunes one problem at its first call (Options::tune_on_miss). The runtime does not depend on
// the tuner: the tuner library (target ktune::tuner) implements this interface.
class MissTuner {
 public:
  virtual ~MissTuner() = default;
  // Tunes `problem` (a key, as `ktune explain` shows it) of `family` on CUDA device `device` into
  // the database at `database`, returning once the results are stored. Called with no lock of the
  // runtime held, at most one at a time per Runtime; what it throws reaches the call that missed.
  virtual void tune(int device, const std::string& database, const std::string& family,
                    const std::string& problem) = 0;
};

// Which step of the lookup chain chose the configuration for a problem.
// kPredicted: no result for this problem; of the winners of every tuned problem of this GPU (or
// of its architecture), adapted to it, the one the family's model predicts fastest.
enum class LookupStep { kCache, kExact, kNearest, kSameArch, kDefault, kPredicted };

// GEMM storage order (BLAS is column-major) and operand transposition.
enum class Layout { kColMajor, kRowMajor };
enum class Op { kN, kT };
// Element types of gemm_ex: float, double, __nv_bfloat16, __half; kTF32: float arrays multiplied
// as TF32 (10 bits of mantissa) on the tensor cores, as cuBLAS's CUBLAS_COMPUTE_32F_FAST_TF32.
enum class DataType { kF32, kF64, kBF16, kF16, kTF32 };
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
  // kPredicted: the model's time for this problem, and the candidates it ranked, fastest first
  // (at most 8; each a configuration with the problem and figure it was measured at).
  std::optional<double> predicted_ms;
  struct Candidate {
    std::string config, tuned_problem, device;
    double measured_ms = 0, predicted_ms = 0;
    int measurements = 1;  // how many of the kernel's measurements the prediction weighed
  };
  std::vector<Candidate> candidates;
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

  // --- gemm: C = alpha * op(A) * op(B) + beta * C, BLAS semantics (like cublasSgemm) ---
  // C is m x n, op(A) m x k, op(B) k x n, stored in `layout` with leading dimensions lda, ldb,
  // ldc (for column-major, lda >= rows of A as stored). Any m, n, k >= 0 and any alignment.
  // m == 0 or n == 0: nothing happens. k == 0 or alpha == 0: C = beta * C, A and B unread.
  // beta == 0: C is written without being read (NaN in C does not survive).
  // Invalid arguments throw Error(kInvalidArgument) naming the argument; nothing is launched.
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
            float beta, float* c, std::int64_t ldc, CUstream stream = nullptr);
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            double alpha, const double* a, std::int64_t lda, const double* b, std::int64_t ldb,
            double beta, double* c, std::int64_t ldc, CUstream stream = nullptr);
  // The tensor cores with the types taken from the pointers: gemm_ex with kBF16 or kF16 A and B,
  // C of their type or float (fp32 accumulation either way).
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const __nv_bfloat16* a, std::int64_t lda, const __nv_bfloat16* b,
            std::int64_t ldb, float beta, __nv_bfloat16* c, std::int64_t ldc,
            CUstream stream = nullptr);
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const __nv_bfloat16* a, std::int64_t lda, const __nv_bfloat16* b,
            std::int64_t ldb, float beta, float* c, std::int64_t ldc, CUstream stream = nullptr);
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const __half* a, std::int64_t lda, const __half* b, std::int64_t ldb,
            float beta, __half* c, std::int64_t ldc, CUstream stream = nullptr);
  void gemm(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
            float alpha, const __half* a, std::int64_t lda, const __half* b, std::int64_t ldb,
            float beta, float* c, std::int64_t ldc, CUstream stream = nullptr);
  // --- gemm_ex: A and B on the tensor cores, as cublasGemmEx ---
  // A and B of ab_type (kBF16 or kF16: __nv_bfloat16 or __half; kTF32: float), fp32
  // accumulation, C of c_type (kF32, or ab_type for the 16-bit types); alpha and beta in float.
  // Family gemm_tc (wgmma, TMA) on sm_90 (H100, H200), gemm_tc80 (mma.sync, cp.async) on sm_80,
  // sm_86, sm_89 and later GPUs; below sm_80 Error(kUnsupported). BLAS semantics as gemm()
  // (any op, any m, n, k, leading dimensions and alignment: an operand whose pointer or leading
  // dimension is not a multiple of 16 bytes is first copied, on the stream, into aligned scratch
  // memory of the device's pool). kTF32 operands are read k-contiguous (column-major op_a = T and
  // op_b = N; row-major op_a = N and op_b = T, a row-major x @ w.T); one stored the other way is
  // first transposed, on the stream, into scratch of the pool.
  void gemm_ex(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, DataType ab_type, const void* a, std::int64_t lda, const void* b,
               std::int64_t ldb, float beta, DataType c_type, void* c, std::int64_t ldc,
               CUstream stream = nullptr);
  // `batch` products as gemm_ex (cublasGemmStridedBatchedEx): matrix i of A, B and C starts
  // stride_a, stride_b and stride_c elements after matrix i - 1 (strides of A and B >= 0, 0
  // repeats one matrix; C's matrices must not overlap: stride_c >= ldc times the columns of C).
  // One launch for the whole batch (two where k is split); batch 0 does nothing.
  void gemm_strided_batched_ex(Layout layout, Op op_a, Op op_b, std::int64_t m, std::int64_t n,
                               std::int64_t k, float alpha, DataType ab_type, const void* a,
                               std::int64_t lda, std::int64_t stride_a, const void* b,
                               std::int64_t ldb, std::int64_t stride_b, float beta, DataType c_type,
                               void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch,
                               CUstream stream = nullptr);

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

  // --- histogram: uint32 counts (modulo 2^32), any n including 0 and n > 2^32, any alignment of
  // the samples (beyond their own size). Counts are overwritten, or added to with accumulate =
  // true; with n = 0 and no accumulation they are zeroed. Arguments are checked before anything
  // is launched: ktune::Error with ErrorCode::kInvalidArgument, naming the argument.
  // 256 bins of bytes: counts[b] = number of i < n with data[i] == b.
  void histogram(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                 bool accumulate = false, CUstream stream = nullptr);
  // `bins` (1 to 4096) equal bins over [lower, upper), as CUB's DeviceHistogram::HistogramEven:
  // a sample s with lower <= s < upper goes to bin floor((s - lower) * bins / (upper - lower)),
  // computed exactly for integer samples; for float samples (int)((s - lower) * scale) with
  // scale = bins / (upper - lower) rounded to float, and a sample just below upper that rounds up
  // to `bins` goes to the last bin. Samples outside [lower, upper) and NaN are not counted.
  // lower < upper is required (finite for float); counts has `bins` entries.
  void histogram_even(const std::uint8_t* samples, std::size_t n, int bins, std::uint8_t lower,
                      std::uint8_t upper, std::uint32_t* counts, bool accumulate = false,
                      CUstream stream = nullptr);
  void histogram_even(const std::uint16_t* samples, std::size_t n, int bins, std::uint16_t lower,
                      std::uint16_t upper, std::uint32_t* counts, bool accumulate = false,
                      CUstream stream = nullptr);
  void histogram_even(const std::int32_t* samples, std::size_t n, int bins, std::int32_t lower,
                      std::int32_t upper, std::uint32_t* counts, bool accumulate = false,
                      CUstream stream = nullptr);
  void histogram_even(const float* samples, std::size_t n, int bins, float lower, float upper,
                      std::uint32_t* counts, bool accumulate = false, CUstream stream = nullptr);

  // --- any family, a family file's included: its kernel for `problem`, chosen by the same
  // lookup chain, compiled once and launched with the geometry the family computes, `args` in
  // the order of its family file (device pointers for buffers, numbers for scalars). Throws
  // Error(kInvalidArgument) naming what is wrong (an unknown axis, a value out of range, a
  // missing or extra argument, a null buffer, a scalar that does not fit its type); nothing is
  // launched then. A built-in family launches through its typed call above (kUnsupported here).
  void launch(const std::string& family, const ProblemSpec& problem, const std::vector<Arg>& args,
              CUstream stream = nullptr);

  // Which configuration a problem gets and why. `problem` is a key as `ktune query` prints it,
  // e.g. family "elementwise", problem "dtype=f32;op=copy;align=16;n=1048576". Choice::candidates
  // lists the predicted step's first `candidates` (0: every one it ranked); for a problem this
  // runtime has answered already (step kCache), those its answer was given with (8 at most).
  Choice explain(const std::string& family, const std::string& problem);
  Choice explain(const std::string& family, const std::string& problem, std::size_t candidates);

  // Returns once the problems queued for tuning in the background (Options::tune_in_background)
  // are tuned and their kernels in use; at once without any.
  void wait_for_tuning();

  // Number of NVRTC compilations this Runtime ran (0 on a warm start with cached binaries).
  std::uint64_t compile_count() const;
  // The database the lookups read: its path, "... (read-only)" when it could not be written, the
  // in-memory shipped results when there is no usable file, or "" without a database.
  std::string database_path() const;

  // Every member function of a moved-from Runtime throws Error(kInvalidArgument).

 private:
  struct Impl;
  Impl& impl() const;  // throws for a moved-from Runtime
  std::unique_ptr<Impl> impl_;
};

}  // namespace ktune
