// Host tests: without a CUDA driver, every entry point says so clearly instead of crashing.
#include <gtest/gtest.h>

#include "ktune/ktune.hpp"
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

}  // namespace
}  // namespace ktune
