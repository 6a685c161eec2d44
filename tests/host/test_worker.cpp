// Host tests of the worker-process machinery: spawning, the protocol and error propagation. Here
// the worker (the real ktune executable) finds no CUDA driver, so these tests cover how a worker
// that cannot serve is reported; the GPU suite (test_tuner_faults_gpu.cpp) covers faults and
// hangs on a real device.
#include <gtest/gtest.h>

#include "families/family.hpp"
#include "ktune/error.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"
#include "tests/ktune_cli.hpp"
#include "tests/test_families.hpp"
#include "tuner/tuner.hpp"
#include "tuner/worker.hpp"

namespace ktune {
namespace {

DeviceInfo h200_like() {
  DeviceInfo info;
  info.name = "test device";
  info.limits = DeviceLimits::for_arch(9, 0);
  return info;
}

Error measure_error(const std::vector<std::string>& command) {
  const Family& family = testing::faults_family();
  const Problem problem = family.default_problems().front();
  TuneOptions options;
  options.worker.command = command;
  options.worker.setup_s = 20;
  CompileResult compiled;
  ResultRecord row;
  try {
    // The worker starts with the runner; its errors may surface there or at the first measure.
    auto runner = make_worker_runner(h200_like(), family, problem, "", options.worker,
                                     options.timing, options.seed);
    runner->measure(0, family.default_config(problem, h200_like().limits), &compiled, "", row);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "measure() did not throw";
  return Error(ErrorCode::kInternal, "");
}

TEST(Worker, WithoutADriverTheWorkersErrorReachesTheTuner) {
  std::string why;
  if (detail::driver_available(&why)) GTEST_SKIP() << "this machine has a CUDA driver";
  const Error e = measure_error({testing::ktune_cli().c_str(), "__worker"});
  EXPECT_EQ(e.code(), ErrorCode::kNoDriver) << e.what();
  EXPECT_NE(std::string(e.what()).find("libcuda"), std::string::npos) << e.what();
}

TEST(Worker, AMissingWorkerExecutableIsNamed) {
  const Error e = measure_error({"/nonexistent/ktune-worker", "__worker"});
  EXPECT_EQ(e.code(), ErrorCode::kInternal);
  EXPECT_NE(std::string(e.what()).find("/nonexistent/ktune-worker"), std::string::npos) << e.what();
}

TEST(Worker, AWorkerThatExitsAtStartIsReported) {
  const Error e = measure_error({"/bin/sh", "-c", "exit 7"});
  EXPECT_NE(std::string(e.what()).find("exit status 7"), std::string::npos) << e.what();
}

TEST(Worker, AWorkerThatNeverAnswersIsKilledAfterTheStartLimit) {
  const Family& family = testing::faults_family();
  const Problem problem = family.default_problems().front();
  TuneOptions options;
  // Reads its socket (descriptor 3, the appended argument) but never answers.
  options.worker.command = {"/bin/sh", "-c", "exec sleep 30", "sh"};
  options.worker.setup_s = 0.5;
  auto runner = make_worker_runner(h200_like(), family, problem, "", options.worker,
                                     options.timing, options.seed);
  CompileResult compiled;
  ResultRecord row;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    runner->measure(0, family.default_config(problem, h200_like().limits), &compiled, "", row);
    ADD_FAILURE() << "measure() did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not start within"), std::string::npos) << e.what();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 10.0);
}

TEST(Worker, TheWorkerRefusesAWrongPeer) {
  // `ktune __worker` on a descriptor that is not a socket from a tuner: it exits, it does not hang.
  const int status =
      std::system((std::string("'") + testing::ktune_cli() + "' __worker 0 </dev/null").c_str());
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_NE(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ktune
