// Host tests of the C API (include/ktune/ktune.h) without a GPU: statuses with their messages,
// every pointer checked, no exception crossing, and no driver reported as such.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

#include "ktune/ktune.h"
#include "platform/driver.hpp"

namespace {

TEST(CApi, EveryStatusHasAName) {
  for (int s = KTUNE_OK; s <= KTUNE_ERROR_OUT_OF_MEMORY; ++s)
    EXPECT_STRNE(ktune_status_name(s), "unknown status") << s;
  // Any int a C caller passes is answered (under UBSan too: no enum holds an unknown value).
  EXPECT_STREQ(ktune_status_name(99), "unknown status");
  EXPECT_STREQ(ktune_status_name(-1), "unknown status");
  EXPECT_NE(std::string(ktune_version()).find('.'), std::string::npos);
}

TEST(CApi, NullArgumentsAreRefusedWithAMessage) {
  EXPECT_EQ(ktune_sgemm(nullptr, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, 1, 1, 1, 1.0f, nullptr, 1,
                        nullptr, 1, 0.0f, nullptr, 1, nullptr),
            KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("runtime: NULL"), std::string::npos);
  EXPECT_EQ(ktune_gemm_ex(nullptr, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_T, 1, 1, 1, 1.0f,
                          KTUNE_DTYPE_BF16, nullptr, 1, nullptr, 1, 0.0f, KTUNE_DTYPE_BF16, nullptr,
                          1, nullptr),
            KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("runtime: NULL"), std::string::npos);
  EXPECT_EQ(ktune_gemm_strided_batched_ex(nullptr, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_T, 1, 1, 1,
                                          1.0f, KTUNE_DTYPE_TF32, nullptr, 1, 1, nullptr, 1, 1,
                                          0.0f, KTUNE_DTYPE_F32, nullptr, 1, 1, 2, nullptr),
            KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("runtime: NULL"), std::string::npos);
  EXPECT_EQ(ktune_runtime_create(nullptr, nullptr), KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("out: NULL"), std::string::npos);
  EXPECT_EQ(ktune_launch(nullptr, "transpose", nullptr, 0, nullptr, 0, nullptr),
            KTUNE_ERROR_INVALID_ARGUMENT);
  uint64_t count = 0;
  EXPECT_EQ(ktune_compile_count(nullptr, &count), KTUNE_ERROR_INVALID_ARGUMENT);
  char text[8];
  EXPECT_EQ(ktune_explain(nullptr, "gemm", "x", text, sizeof text, nullptr),
            KTUNE_ERROR_INVALID_ARGUMENT);
  ktune_runtime_destroy(nullptr);  // accepted
}

TEST(CApi, TheLastErrorBelongsToTheCallingThread) {
  ktune_copy_f32(nullptr, nullptr, nullptr, 0, nullptr);
  const std::string here = ktune_last_error();
  std::string there = "unset";
  std::thread([&] { there = ktune_last_error(); }).join();
  EXPECT_FALSE(here.empty());
  EXPECT_EQ(there, "");
}

TEST(CApi, OptionsOfAnUnknownSizeAreRefusedBeforeAnythingStarts) {
  ktune_runtime_options o;
  std::memset(&o, 0, sizeof o);  // size 0: a caller that forgot to set it
  ktune_runtime* rt = nullptr;
  EXPECT_EQ(ktune_runtime_create(&o, &rt), KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(ktune_last_error()).find("sizeof(ktune_runtime_options)"),
            std::string::npos);
}

// Tune-on-miss (the tuner is in libktune.so and in this test program): it needs a database, and a
// budget that is not negative; both refused before a driver is looked for, nothing created.
TEST(CApi, TuneOnMissOptionsAreCheckedBeforeAnythingStarts) {
  ktune_runtime_options o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.no_database = 1;
  o.tune_on_miss = 1;
  ktune_runtime* rt = nullptr;
  EXPECT_EQ(ktune_runtime_create(&o, &rt), KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(ktune_last_error()).find("tune_on_miss needs a database"),
            std::string::npos)
      << ktune_last_error();
  o.no_database = 0;
  o.tune_max_seconds = -1;
  EXPECT_EQ(ktune_runtime_create(&o, &rt), KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("max_seconds"), std::string::npos)
      << ktune_last_error();
  // Background tuning takes tune_on_miss.
  o.tune_max_seconds = 0;
  o.tune_on_miss = 0;
  o.tune_in_background = 1;
  EXPECT_EQ(ktune_runtime_create(&o, &rt), KTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(ktune_last_error()).find("tune_in_background takes tune_on_miss"),
            std::string::npos)
      << ktune_last_error();
  o.tune_in_background = 0;
  o.tune_on_miss = 1;
  // A caller built against the struct before these fields (its size ends at family_files) never
  // tunes, whatever lies past its struct.
  o.tune_max_seconds = 0;
  o.no_database = 1;
  o.size = offsetof(ktune_runtime_options, tune_on_miss);
  const ktune_status s = ktune_runtime_create(&o, &rt);
  EXPECT_NE(s, KTUNE_ERROR_INVALID_ARGUMENT) << ktune_last_error();
  if (rt) ktune_runtime_destroy(rt);
}

TEST(CApi, WithoutADriverTheRuntimeSaysSo) {
  std::string why;
  if (ktune::detail::driver_available(&why)) GTEST_SKIP() << "this machine has a CUDA driver";
  ktune_runtime_options o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.no_database = 1;
  ktune_runtime* rt = nullptr;
  const ktune_status s = ktune_runtime_create(&o, &rt);
  EXPECT_TRUE(s == KTUNE_ERROR_NO_DRIVER || s == KTUNE_ERROR_NO_DEVICE) << ktune_status_name(s);
  EXPECT_EQ(rt, nullptr);
  EXPECT_NE(std::string(ktune_last_error()).find("libcuda"), std::string::npos)
      << ktune_last_error();
}

}  // namespace
