// The C API (include/ktune/ktune.h): each function runs its C++ counterpart inside one guard that
// turns every exception into a status and a thread-local message.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/util.hpp"
#include "ktune/error.hpp"
#include "ktune/ktune.h"
#include "ktune/ktune.hpp"
#include "ktune/version.hpp"
#include "runtime/miss_tuner_hook.hpp"

namespace ktune::detail {
MissTunerFactory c_api_miss_tuner = nullptr;
}  // namespace ktune::detail

struct ktune_runtime {
  ktune::Runtime runtime;
};

namespace {

thread_local std::string last_error;

ktune_status status_of(ktune::ErrorCode code) {
  switch (code) {
    case ktune::ErrorCode::kInvalidArgument:
      return KTUNE_ERROR_INVALID_ARGUMENT;
    case ktune::ErrorCode::kNoDriver:
      return KTUNE_ERROR_NO_DRIVER;
    case ktune::ErrorCode::kNoDevice:
      return KTUNE_ERROR_NO_DEVICE;
    case ktune::ErrorCode::kCuda:
      return KTUNE_ERROR_CUDA;
    case ktune::ErrorCode::kCompile:
      return KTUNE_ERROR_COMPILE;
    case ktune::ErrorCode::kDatabase:
      return KTUNE_ERROR_DATABASE;
    case ktune::ErrorCode::kIo:
      return KTUNE_ERROR_IO;
    case ktune::ErrorCode::kUnsupported:
      return KTUNE_ERROR_UNSUPPORTED;
    default:
      return KTUNE_ERROR_INTERNAL;
  }
}

ktune_status fail(ktune_status status, const char* message) {
  try {
    last_error = message;
  } catch (...) {
    last_error.clear();  // no memory for the message: the status still says what happened
  }
  return status;
}

// Runs `body`; no exception leaves.
template <typename F>
ktune_status guarded(F&& body) {
  try {
    body();
    return KTUNE_OK;
  } catch (const ktune::Error& e) {
    return fail(status_of(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(KTUNE_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(KTUNE_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(KTUNE_ERROR_INTERNAL, "an unknown exception");
  }
}

ktune::Runtime& runtime_of(ktune_runtime* rt) {
  if (!rt) throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "runtime: NULL");
  return rt->runtime;
}

ktune::Layout layout_of(int l) {
  if (l != KTUNE_COL_MAJOR && l != KTUNE_ROW_MAJOR)
    throw ktune::Error(
        ktune::ErrorCode::kInvalidArgument,
        "layout: " + std::to_string(l) + " is neither KTUNE_COL_MAJOR nor KTUNE_ROW_MAJOR");
  return l == KTUNE_ROW_MAJOR ? ktune::Layout::kRowMajor : ktune::Layout::kColMajor;
}

ktune::Op op_of(int o, const char* what) {
  if (o != KTUNE_OP_N && o != KTUNE_OP_T)
    throw ktune::Error(
        ktune::ErrorCode::kInvalidArgument,
        std::string(what) + ": " + std::to_string(o) + " is neither KTUNE_OP_N nor KTUNE_OP_T");
  return o == KTUNE_OP_T ? ktune::Op::kT : ktune::Op::kN;
}

CUstream stream_of(ktune_stream s) { return reinterpret_cast<CUstream>(s); }

ktune::DataType dtype_of(int t, const char* what) {
  switch (t) {
    case KTUNE_DTYPE_F32:
      return ktune::DataType::kF32;
    case KTUNE_DTYPE_F64:
      return ktune::DataType::kF64;
    case KTUNE_DTYPE_BF16:
      return ktune::DataType::kBF16;
    case KTUNE_DTYPE_F16:
      return ktune::DataType::kF16;
    case KTUNE_DTYPE_TF32:
      return ktune::DataType::kTF32;
  }
  throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                     std::string(what) + ": " + std::to_string(t) + " is not a KTUNE_DTYPE_*");
}

}  // namespace

extern "C" {

const char* ktune_last_error(void) { return last_error.c_str(); }

const char* ktune_status_name(int status) {
  switch (status) {
    case KTUNE_OK:
      return "ok";
    case KTUNE_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case KTUNE_ERROR_NO_DRIVER:
      return "no CUDA driver";
    case KTUNE_ERROR_NO_DEVICE:
      return "no CUDA device";
    case KTUNE_ERROR_CUDA:
      return "CUDA error";
    case KTUNE_ERROR_COMPILE:
      return "compile error";
    case KTUNE_ERROR_DATABASE:
      return "database error";
    case KTUNE_ERROR_IO:
      return "I/O error";
    case KTUNE_ERROR_UNSUPPORTED:
      return "unsupported";
    case KTUNE_ERROR_INTERNAL:
      return "internal error";
    case KTUNE_ERROR_OUT_OF_MEMORY:
      return "out of memory";
  }
  return "unknown status";
}

const char* ktune_version(void) { return ktune::version_text(); }

ktune_status ktune_runtime_create(const ktune_runtime_options* options, ktune_runtime** out) {
  return guarded([&] {
    if (!out) throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "out: NULL");
    ktune::Options o;
    if (options) {
      // Fields past what the caller's struct holds keep their defaults.
      const std::size_t size = options->size;
      if (size < offsetof(ktune_runtime_options, database) + sizeof(const char*))
        throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                           "options: size is " + std::to_string(size) +
                               "; set it to sizeof(ktune_runtime_options)");
      if (options->database) o.database = options->database;
      if (size >= offsetof(ktune_runtime_options, device) + sizeof(int)) o.device = options->device;
      if (size >= offsetof(ktune_runtime_options, no_database) + sizeof(int))
        o.use_database = options->no_database == 0;
      if (size >= offsetof(ktune_runtime_options, family_files) + sizeof(const char*))
        o.family_files = ktune::split_paths(options->family_files);
      if (size >= offsetof(ktune_runtime_options, tune_max_seconds) + sizeof(double) &&
          options->tune_on_miss) {
        if (!o.use_database)
          throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                             "options: tune_on_miss needs a database (no_database is set)");
        if (!ktune::detail::c_api_miss_tuner)
          throw ktune::Error(ktune::ErrorCode::kUnsupported,
                             "options: tune_on_miss: this ktune library was built without the "
                             "tuner (libktune.so has it)");
        o.tune_on_miss =
            ktune::detail::c_api_miss_tuner(options->tune_max_evals, options->tune_max_seconds);
      }
      if (size >= offsetof(ktune_runtime_options, tune_in_background) + sizeof(int) &&
          options->tune_in_background) {
        if (!o.tune_on_miss)
          throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                             "options: tune_in_background takes tune_on_miss");
        o.tune_in_background = true;
      }
      if (size >= offsetof(ktune_runtime_options, strict_fp32) + sizeof(int))
        o.strict_fp32 = options->strict_fp32 != 0;
    }
    *out = new ktune_runtime{ktune::Runtime(std::move(o))};
  });
}

void ktune_runtime_destroy(ktune_runtime* runtime) {
  try {
    delete runtime;
  } catch (...) {
    // A destructor that throws would end the process; nothing more can be done here.
  }
}

ktune_status ktune_sgemm(ktune_runtime* rt, int layout, int op_a, int op_b, int64_t m, int64_t n,
                         int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                         int64_t ldb, float beta, float* c, int64_t ldc, ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).gemm(layout_of(layout), op_of(op_a, "op_a"), op_of(op_b, "op_b"), m, n, k, alpha,
                        a, lda, b, ldb, beta, c, ldc, stream_of(stream));
  });
}

ktune_status ktune_dgemm(ktune_runtime* rt, int layout, int op_a, int op_b, int64_t m, int64_t n,
                         int64_t k, double alpha, const double* a, int64_t lda, const double* b,
                         int64_t ldb, double beta, double* c, int64_t ldc, ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).gemm(layout_of(layout), op_of(op_a, "op_a"), op_of(op_b, "op_b"), m, n, k, alpha,
                        a, lda, b, ldb, beta, c, ldc, stream_of(stream));
  });
}

ktune_status ktune_gemm_ex(ktune_runtime* rt, int layout, int op_a, int op_b, int64_t m, int64_t n,
                           int64_t k, float alpha, int ab_type, const void* a, int64_t lda,
                           const void* b, int64_t ldb, float beta, int c_type, void* c, int64_t ldc,
                           ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).gemm_ex(layout_of(layout), op_of(op_a, "op_a"), op_of(op_b, "op_b"), m, n, k,
                           alpha, dtype_of(ab_type, "ab_type"), a, lda, b, ldb, beta,
                           dtype_of(c_type, "c_type"), c, ldc, stream_of(stream));
  });
}

ktune_status ktune_gemm_strided_batched_ex(ktune_runtime* rt, int layout, int op_a, int op_b,
                                           int64_t m, int64_t n, int64_t k, float alpha,
                                           int ab_type, const void* a, int64_t lda,
                                           int64_t stride_a, const void* b, int64_t ldb,
                                           int64_t stride_b, float beta, int c_type, void* c,
                                           int64_t ldc, int64_t stride_c, int64_t batch,
                                           ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).gemm_strided_batched_ex(
        layout_of(layout), op_of(op_a, "op_a"), op_of(op_b, "op_b"), m, n, k, alpha,
        dtype_of(ab_type, "ab_type"), a, lda, stride_a, b, ldb, stride_b, beta,
        dtype_of(c_type, "c_type"), c, ldc, stride_c, batch, stream_of(stream));
  });
}

ktune_status ktune_copy_f32(ktune_runtime* rt, float* dst, const float* src, size_t n,
                            ktune_stream stream) {
  return guarded([&] { runtime_of(rt).copy(dst, src, n, stream_of(stream)); });
}

ktune_status ktune_copy_f64(ktune_runtime* rt, double* dst, const double* src, size_t n,
                            ktune_stream stream) {
  return guarded([&] { runtime_of(rt).copy(dst, src, n, stream_of(stream)); });
}

ktune_status ktune_add_f32(ktune_runtime* rt, float* c, const float* a, const float* b, size_t n,
                           ktune_stream stream) {
  return guarded([&] { runtime_of(rt).add(c, a, b, n, stream_of(stream)); });
}

ktune_status ktune_add_f64(ktune_runtime* rt, double* c, const double* a, const double* b, size_t n,
                           ktune_stream stream) {
  return guarded([&] { runtime_of(rt).add(c, a, b, n, stream_of(stream)); });
}

ktune_status ktune_histogram_u8(ktune_runtime* rt, const uint8_t* data, size_t n, uint32_t* counts,
                                int accumulate, ktune_stream stream) {
  return guarded(
      [&] { runtime_of(rt).histogram(data, n, counts, accumulate != 0, stream_of(stream)); });
}

ktune_status ktune_histogram_even_u8(ktune_runtime* rt, const uint8_t* samples, size_t n, int bins,
                                     uint8_t lower, uint8_t upper, uint32_t* counts, int accumulate,
                                     ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).histogram_even(samples, n, bins, lower, upper, counts, accumulate != 0,
                                  stream_of(stream));
  });
}

ktune_status ktune_histogram_even_u16(ktune_runtime* rt, const uint16_t* samples, size_t n,
                                      int bins, uint16_t lower, uint16_t upper, uint32_t* counts,
                                      int accumulate, ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).histogram_even(samples, n, bins, lower, upper, counts, accumulate != 0,
                                  stream_of(stream));
  });
}

ktune_status ktune_histogram_even_i32(ktune_runtime* rt, const int32_t* samples, size_t n, int bins,
                                      int32_t lower, int32_t upper, uint32_t* counts,
                                      int accumulate, ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).histogram_even(samples, n, bins, lower, upper, counts, accumulate != 0,
                                  stream_of(stream));
  });
}

ktune_status ktune_histogram_even_f32(ktune_runtime* rt, const float* samples, size_t n, int bins,
                                      float lower, float upper, uint32_t* counts, int accumulate,
                                      ktune_stream stream) {
  return guarded([&] {
    runtime_of(rt).histogram_even(samples, n, bins, lower, upper, counts, accumulate != 0,
                                  stream_of(stream));
  });
}

ktune_status ktune_launch(ktune_runtime* rt, const char* family, const ktune_axis* axes,
                          size_t axis_count, const ktune_arg* args, size_t arg_count,
                          ktune_stream stream) {
  return guarded([&] {
    ktune::Runtime& r = runtime_of(rt);
    if (!family) throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "family: NULL");
    if (axis_count && !axes)
      throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "axes: NULL with a nonzero count");
    if (arg_count && !args)
      throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "args: NULL with a nonzero count");
    ktune::ProblemSpec spec;
    for (std::size_t i = 0; i < axis_count; ++i) {
      if (!axes[i].name)
        throw ktune::Error(ktune::ErrorCode::kInvalidArgument,
                           "axes[" + std::to_string(i) + "]: no name");
      if (axes[i].text)
        spec.set(axes[i].name, std::string(axes[i].text));
      else
        spec.set(axes[i].name, axes[i].integer);
    }
    std::vector<ktune::Arg> list;
    list.reserve(arg_count);
    for (std::size_t i = 0; i < arg_count; ++i) {
      switch (args[i].kind) {
        case KTUNE_ARG_POINTER:
          list.emplace_back(args[i].pointer);
          break;
        case KTUNE_ARG_INT:
          list.emplace_back(args[i].integer);
          break;
        case KTUNE_ARG_UINT:
          list.emplace_back(args[i].uinteger);
          break;
        case KTUNE_ARG_REAL:
          list.emplace_back(args[i].real);
          break;
        default:
          throw ktune::Error(
              ktune::ErrorCode::kInvalidArgument,
              "args[" + std::to_string(i) + "]: unknown kind " + std::to_string(args[i].kind));
      }
    }
    r.launch(family, spec, list, stream_of(stream));
  });
}

ktune_status ktune_explain(ktune_runtime* rt, const char* family, const char* problem, char* text,
                           size_t size, size_t* needed) {
  return guarded([&] {
    ktune::Runtime& r = runtime_of(rt);
    if (!family || !problem)
      throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "family and problem: not NULL");
    if (size && !text)
      throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "text: NULL with a nonzero size");
    const ktune::Choice c = r.explain(family, problem);
    std::string line = "step=" + std::string(ktune::to_string(c.step)) + " config=" + c.config +
                       " tuned_problem=" + c.tuned_problem;
    if (c.measured) line += " measured=" + std::to_string(*c.measured) + " unit=" + c.unit;
    if (c.predicted_ms) line += " predicted_ms=" + std::to_string(*c.predicted_ms);
    if (!c.device.empty()) line += " device=" + c.device;
    if (needed) *needed = line.size() + 1;
    if (size) {
      const std::size_t n = std::min(size - 1, line.size());
      std::memcpy(text, line.data(), n);
      text[n] = '\0';
    }
  });
}

ktune_status ktune_wait_for_tuning(ktune_runtime* rt) {
  return guarded([&] { runtime_of(rt).wait_for_tuning(); });
}

ktune_status ktune_compile_count(ktune_runtime* rt, uint64_t* count) {
  return guarded([&] {
    if (!count) throw ktune::Error(ktune::ErrorCode::kInvalidArgument, "count: NULL");
    *count = runtime_of(rt).compile_count();
  });
}

}  // extern "C"
