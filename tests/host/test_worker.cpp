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
#include "tuner/evaluator.hpp"
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

// The timed runs a candidate gets: every repeat for a run that fits the budget, fewer for a long
// one, never fewer than min_repeats (nor more than repeats), and every repeat without a budget.
TEST(Timing, ALongRunIsTimedAsOftenAsTheBudgetHoldsAndNoLessThanTheLeast) {
  TimingOptions o;
  o.repeats = 20;
  o.min_repeats = 5;
  o.budget_ms = 200;
  EXPECT_EQ(repeats_within(0.05, o), 20);
  EXPECT_EQ(repeats_within(10.0, o), 20);  // 20 runs of 10 ms: the budget exactly
  EXPECT_EQ(repeats_within(12.5, o), 16);  // 16 x 12.5 = 200
  EXPECT_EQ(repeats_within(13.0, o), 16);  // rounded up: 15.4 -> 16
  EXPECT_EQ(repeats_within(40.0, o), 5);
  EXPECT_EQ(repeats_within(72.0, o), 5);  // 3 would fit: at least 5
  EXPECT_EQ(repeats_within(1e6, o), 5);
  EXPECT_EQ(repeats_within(0.0, o), 20);  // no reading of the run: all of them
  o.repeats = 3;                          // fewer repeats than the least: the repeats
  EXPECT_EQ(repeats_within(72.0, o), 3);
  o.repeats = 0;  // one run at least
  EXPECT_EQ(repeats_within(72.0, o), 1);
  o.repeats = 20;
  o.budget_ms = 0;  // off: always the repeats
  EXPECT_EQ(repeats_within(72.0, o), 20);
  // The tuner's default holds a budget; a plain TimingOptions (the benchmarks') holds none.
  EXPECT_GT(TuneOptions{}.timing.budget_ms, 0);
  EXPECT_EQ(TimingOptions{}.budget_ms, 0);
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
  auto runner = make_worker_runner(h200_like(), family, problem, "", options.worker, options.timing,
                                   options.seed);
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
