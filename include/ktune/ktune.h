/* ktune's C API (C99): the runtime's entry points for C, and for languages that call C (Python
 * through ctypes, the `ktune` package in python/).
 *
 * Every function returns a ktune_status; on anything but KTUNE_OK, ktune_last_error() holds the
 * message for the calling thread (valid until its next ktune call). No C++ exception crosses
 * this interface. Every call leaves the calling thread's current CUDA context as it found it.
 * Device pointers and streams are the CUDA driver's (a CUDA runtime cudaStream_t is the same
 * handle); a null stream is the legacy default stream.
 *
 *   ktune_runtime* rt = NULL;
 *   if (ktune_runtime_create(NULL, &rt) != KTUNE_OK) { puts(ktune_last_error()); return 1; }
 *   ktune_sgemm(rt, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, m, n, k, 1.0f, a, k, b, n, 0.0f,
 *               c, n, NULL);
 *   ktune_runtime_destroy(rt);
 */
#ifndef KTUNE_KTUNE_H_
#define KTUNE_KTUNE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KTUNE_C_EXPORT __attribute__((visibility("default")))
#else
#define KTUNE_C_EXPORT
#endif

/* The version of this interface: bumped when a function or a struct changes. */
#define KTUNE_C_API_VERSION 1

typedef enum ktune_status {
  KTUNE_OK = 0,
  KTUNE_ERROR_INVALID_ARGUMENT = 1, /* a caller's argument is wrong; the message names it */
  KTUNE_ERROR_NO_DRIVER = 2,        /* libcuda.so.1 could not be loaded */
  KTUNE_ERROR_NO_DEVICE = 3,        /* the driver is there but no (such) CUDA device */
  KTUNE_ERROR_CUDA = 4,             /* a CUDA driver call failed */
  KTUNE_ERROR_COMPILE = 5,          /* NVRTC rejected a source */
  KTUNE_ERROR_DATABASE = 6,         /* the tuning database could not be used */
  KTUNE_ERROR_IO = 7,               /* a file could not be written */
  KTUNE_ERROR_UNSUPPORTED = 8,      /* a valid request this build or device cannot serve */
  KTUNE_ERROR_INTERNAL = 9,         /* a bug in ktune */
  KTUNE_ERROR_OUT_OF_MEMORY = 10    /* host memory ran out */
} ktune_status;

/* Layouts and ops. Parameters that take them (and statuses, and argument kinds) are plain ints, so
 * that any value a caller passes is checked, not undefined: an unknown one is refused. */
typedef enum ktune_layout { KTUNE_COL_MAJOR = 0, KTUNE_ROW_MAJOR = 1 } ktune_layout;
typedef enum ktune_op { KTUNE_OP_N = 0, KTUNE_OP_T = 1 } ktune_op;
/* Element types of ktune_gemm_ex (ktune::DataType). */
typedef enum ktune_dtype {
  KTUNE_DTYPE_F32 = 0,
  KTUNE_DTYPE_F64 = 1,
  KTUNE_DTYPE_BF16 = 2,
  KTUNE_DTYPE_F16 = 3,
  /* float arrays multiplied as TF32 on the tensor cores (10 bits of mantissa), C float. */
  KTUNE_DTYPE_TF32 = 4
} ktune_dtype;

/* CUDA driver handles without including cuda.h. */
typedef struct CUstream_st* ktune_stream;

typedef struct ktune_runtime ktune_runtime;

/* Options of a runtime. Zero it, set `size` to sizeof(ktune_runtime_options) (so that a later
 * ktune can tell which fields a caller knows), then set what differs from the defaults. */
typedef struct ktune_runtime_options {
  size_t size;
  const char* database; /* NULL or "": $KTUNE_DB, else ~/.cache/ktune/tuning.db */
  int device;           /* CUDA device ordinal */
  int no_database;      /* nonzero: built-in defaults only, no database opened */
  const char* family_files; /* NULL, or family files separated by ':' */
  /* Nonzero: a problem the database has no exact result for is tuned at its first call (within
   * the budget below, into the database; later calls and processes use the result). Needs a
   * database (no_database 0) and a libktune built with the tuner (KTUNE_ERROR_UNSUPPORTED
   * otherwise). The call that misses waits for the tuning. */
  int tune_on_miss;
  unsigned tune_max_evals;  /* candidates per missed problem; 0: 32 */
  double tune_max_seconds;  /* wall time per missed problem, compiles included; 0: 10 */
  /* Nonzero (with tune_on_miss): the call that misses is answered at once, as without
   * tune_on_miss, and a thread of the runtime tunes the problem; later calls run the tuned kernel
   * once it is stored. No call waits (ktune_runtime_destroy waits for the run in progress). */
  int tune_in_background;
  /* Nonzero: float GEMM computes every product and sum in FP32 on the FMA units, as cuBLAS's
   * default math. 0: a product with m or n of 9 to 16 may run on the tensor cores as 3xTF32
   * where that was faster (about 2^-21 of |a b| lost per product where FP32 rounds to 2^-24;
   * within FP32 GEMM's error bound). Options::strict_fp32. */
  int strict_fp32;
} ktune_runtime_options;

/* The message of the last failed call on this thread ("" if none), and a status's name. */
KTUNE_C_EXPORT const char* ktune_last_error(void);
KTUNE_C_EXPORT const char* ktune_status_name(int status);
/* ktune's version, e.g. "0.1.0 (git abc1234)". */
KTUNE_C_EXPORT const char* ktune_version(void);

/* options may be NULL (all defaults). *out is set only on KTUNE_OK. */
KTUNE_C_EXPORT ktune_status ktune_runtime_create(const ktune_runtime_options* options,
                                                 ktune_runtime** out);
/* NULL is accepted. Waits for nothing: synchronize the streams first. */
KTUNE_C_EXPORT void ktune_runtime_destroy(ktune_runtime* runtime);

/* C = alpha * op(A) * op(B) + beta * C with BLAS semantics, as Runtime::gemm. */
KTUNE_C_EXPORT ktune_status ktune_sgemm(ktune_runtime* rt, int layout, int op_a, int op_b,
                                        int64_t m, int64_t n, int64_t k,
                                        float alpha, const float* a, int64_t lda, const float* b,
                                        int64_t ldb, float beta, float* c, int64_t ldc,
                                        ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_dgemm(ktune_runtime* rt, int layout, int op_a, int op_b,
                                        int64_t m, int64_t n, int64_t k,
                                        double alpha, const double* a, int64_t lda,
                                        const double* b, int64_t ldb, double beta, double* c,
                                        int64_t ldc, ktune_stream stream);

/* A and B of ab_type (KTUNE_DTYPE_BF16, _F16, or _TF32: float arrays) on the tensor cores, C of
 * c_type (KTUNE_DTYPE_F32, or ab_type for the 16-bit types), as Runtime::gemm_ex: sm_80 or later
 * (else KTUNE_UNSUPPORTED), any op; operands not aligned to 16 bytes are copied into aligned
 * scratch first, TF32 operands that are not k-contiguous transposed into scratch first. */
KTUNE_C_EXPORT ktune_status ktune_gemm_ex(ktune_runtime* rt, int layout, int op_a, int op_b,
                                          int64_t m, int64_t n, int64_t k, float alpha,
                                          int ab_type, const void* a, int64_t lda, const void* b,
                                          int64_t ldb, float beta, int c_type, void* c,
                                          int64_t ldc, ktune_stream stream);

/* `batch` products as ktune_gemm_ex in one launch (cublasGemmStridedBatchedEx): matrix i of A, B
 * and C starts stride_a, stride_b, stride_c elements after matrix i - 1 (Runtime::
 * gemm_strided_batched_ex). */
KTUNE_C_EXPORT ktune_status ktune_gemm_strided_batched_ex(
    ktune_runtime* rt, int layout, int op_a, int op_b, int64_t m, int64_t n, int64_t k, float alpha,
    int ab_type, const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb,
    int64_t stride_b, float beta, int c_type, void* c, int64_t ldc, int64_t stride_c, int64_t batch,
    ktune_stream stream);

/* dst[i] = src[i]; c[i] = a[i] + b[i]; any n including 0, any alignment. */
KTUNE_C_EXPORT ktune_status ktune_copy_f32(ktune_runtime* rt, float* dst, const float* src,
                                           size_t n, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_copy_f64(ktune_runtime* rt, double* dst, const double* src,
                                           size_t n, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_add_f32(ktune_runtime* rt, float* c, const float* a,
                                          const float* b, size_t n, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_add_f64(ktune_runtime* rt, double* c, const double* a,
                                          const double* b, size_t n, ktune_stream stream);

/* 256 bins of bytes; and `bins` equal bins over [lower, upper), as Runtime::histogram_even.
 * accumulate nonzero: counts are added to, else overwritten. */
KTUNE_C_EXPORT ktune_status ktune_histogram_u8(ktune_runtime* rt, const uint8_t* data, size_t n,
                                               uint32_t* counts, int accumulate,
                                               ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_histogram_even_u8(ktune_runtime* rt, const uint8_t* samples,
                                                    size_t n, int bins, uint8_t lower,
                                                    uint8_t upper, uint32_t* counts,
                                                    int accumulate, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_histogram_even_u16(ktune_runtime* rt, const uint16_t* samples,
                                                     size_t n, int bins, uint16_t lower,
                                                     uint16_t upper, uint32_t* counts,
                                                     int accumulate, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_histogram_even_i32(ktune_runtime* rt, const int32_t* samples,
                                                     size_t n, int bins, int32_t lower,
                                                     int32_t upper, uint32_t* counts,
                                                     int accumulate, ktune_stream stream);
KTUNE_C_EXPORT ktune_status ktune_histogram_even_f32(ktune_runtime* rt, const float* samples,
                                                     size_t n, int bins, float lower, float upper,
                                                     uint32_t* counts, int accumulate,
                                                     ktune_stream stream);

/* One axis of a problem: an integer, or a word (text != NULL, e.g. dtype = "f32"). */
typedef struct ktune_axis {
  const char* name;
  int64_t integer;
  const char* text;
} ktune_axis;

/* One kernel argument, in the family file's order: a device pointer for a buffer, a number for a
 * scalar (converted to the declared type and range-checked). */
typedef enum ktune_arg_kind {
  KTUNE_ARG_POINTER = 0,
  KTUNE_ARG_INT = 1,
  KTUNE_ARG_UINT = 2,
  KTUNE_ARG_REAL = 3
} ktune_arg_kind;
typedef struct ktune_arg {
  int kind; /* a ktune_arg_kind */
  const void* pointer;
  int64_t integer;
  uint64_t uinteger;
  double real;
} ktune_arg;

/* Runs the kernel of a family of a family file for a problem, as Runtime::launch. */
KTUNE_C_EXPORT ktune_status ktune_launch(ktune_runtime* rt, const char* family,
                                         const ktune_axis* axes, size_t axis_count,
                                         const ktune_arg* args, size_t arg_count,
                                         ktune_stream stream);

/* Which configuration a problem gets and why, as `ktune explain` says it: one line
 * "step=exact config=... tuned_problem=... measured=... unit=... [predicted_ms=...] device=..."
 * (step is cache, exact, predicted, nearest, same-arch or default). Writes at most `size` bytes
 * with the terminating zero; *needed (if not NULL) gets the length the full text needs. A text
 * cut short still ends in a zero and the call returns KTUNE_OK: compare *needed with size. */
KTUNE_C_EXPORT ktune_status ktune_explain(ktune_runtime* rt, const char* family,
                                          const char* problem, char* text, size_t size,
                                          size_t* needed);

/* NVRTC compiles this runtime has run (0 on a warm start with cached binaries). */
KTUNE_C_EXPORT ktune_status ktune_compile_count(ktune_runtime* rt, uint64_t* count);

/* Returns once the problems queued for tuning in the background (tune_in_background) are tuned
 * and their kernels in use; at once without any. */
KTUNE_C_EXPORT ktune_status ktune_wait_for_tuning(ktune_runtime* rt);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KTUNE_KTUNE_H_ */
