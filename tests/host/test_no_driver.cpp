// Host tests: without a CUDA driver, every entry point says so clearly instead of crashing.
#include <gtest/gtest.h>

#include <type_traits>

#include "ktune/ktune.hpp"
// After ktune.hpp: its declarations of __nv_bfloat16 and __half are those of CUDA's headers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "platform/driver.hpp"

namespace ktune {
namespace {

TEST(NoDriver, RuntimeReportsNoDriverOrDevice) {
  std::string why;
  if (detail::driver_available(&why))
    GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  EXPECT_NE(why.find("no CUDA"), std::string::npos) << why;
  try {
    Runtime rt;
    FAIL() << "a Runtime was created without a driver";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::kNoDriver || e.code() == ErrorCode::kNoDevice) << e.what();
    EXPECT_NE(std::string(e.what()).find("no CUDA"), std::string::npos) << e.what();
  }
}

// Options that exclude each other are refused before the device is looked for: the same error
// with a driver or without.
TEST(NoDriver, StrictFp32AndTf32ExcludeEachOther) {
  Options o;
  o.strict_fp32 = true;
  o.allow_tf32 = true;
  try {
    Runtime rt(o);
    FAIL() << "a Runtime took strict_fp32 with allow_tf32";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("exclude each other"), std::string::npos) << e.what();
  }
}

// gemm() takes bf16 and fp16 pointers as CUDA's headers define them (C of their type or float):
// these casts compile only if the overloads exist with those types.
using Bf16Gemm = void (Runtime::*)(Layout, Op, Op, std::int64_t, std::int64_t, std::int64_t, float,
                                   const __nv_bfloat16*, std::int64_t, const __nv_bfloat16*,
                                   std::int64_t, float, __nv_bfloat16*, std::int64_t, CUstream);
using HalfGemm = void (Runtime::*)(Layout, Op, Op, std::int64_t, std::int64_t, std::int64_t, float,
                                   const __half*, std::int64_t, const __half*, std::int64_t, float,
                                   float*, std::int64_t, CUstream);
static_assert(std::is_same_v<decltype(static_cast<Bf16Gemm>(&Runtime::gemm)), Bf16Gemm>);
static_assert(std::is_same_v<decltype(static_cast<HalfGemm>(&Runtime::gemm)), HalfGemm>);

}  // namespace
}  // namespace ktune
