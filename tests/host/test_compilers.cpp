// Host tests: NVRTC in child processes (tuner/compilers.hpp). The children are the real ktune
// executable (`ktune __compiler`) running real NVRTC; children that die or hang are small shell
// commands standing in for an NVRTC that crashes or never ends on a source.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "db/database.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
#include "synthetic_compiled_runner.hpp"
#include "temp_dir.hpp"
#include "tests/ktune_cli.hpp"
#include "tuner/channel.hpp"
#include "tuner/compilers.hpp"
#include "tuner/runner.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

std::vector<std::string> compiler_command() { return {testing::ktune_cli(), "__compiler"}; }

CompileRequest scale_request(int n) {
  CompileRequest r;
  r.source_name = "demo.cu";
  r.source = R"(
#include "demo_common.cuh"
namespace demo {
template <int N> __global__ void scale(float* p) {
  __shared__ float tile[N];
  tile[threadIdx.x % N] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = tile[(threadIdx.x + 1) % N] * DEMO_FACTOR;
}
}
)";
  // A macro, not a namespace-scope constant: such a constant's symbol in the CUBIN is named with
  // a number of the compiling process's, so its CUBIN differs from process to process.
  r.headers = {{"demo_common.cuh", "#define DEMO_FACTOR 3.0f"}};
  r.name_expressions = {"demo::scale<" + std::to_string(n) + ">", "demo::scale<32>"};
  r.options = {"-DKTUNE_TEST_OPTION=1"};
  r.arch = "sm_90";
  return r;
}

// What a child compiles is what this process compiles: the same CUBIN, names, ptxas figures.
TEST(Compilers, AChildCompilesWhatThisProcessCompiles) {
  Compilers compilers(compiler_command(), 2);
  EXPECT_EQ(compilers.size(), 2u);
  const CompileRequest request = scale_request(64);
  const CompileResult here = compile(request);
  const CompileResult there = compilers.compile(request);
  EXPECT_EQ(there.cubin, here.cubin);
  EXPECT_EQ(there.lowered_names, here.lowered_names);
  ASSERT_EQ(there.resources.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(there.resources[i].mangled_name, here.resources[i].mangled_name);
    EXPECT_EQ(there.resources[i].registers, here.resources[i].registers);
    EXPECT_EQ(there.resources[i].smem_static, here.resources[i].smem_static);
  }
  EXPECT_EQ(there.resources[0].smem_static, 64 * 4);
  // The log as ptxas wrote it (its compile times differ from run to run).
  EXPECT_NE(there.log.find("Compiling entry function '" + here.lowered_names[0] + "' for 'sm_90'"),
            std::string::npos)
      << there.log;
  EXPECT_GT(there.compile_ms, 0);
  EXPECT_EQ(compilers.restarts(), 0);
}

// Several threads at once, each its own request: each gets its own kernel back.
TEST(Compilers, ThreadsCompileAtOnceEachGettingItsOwnKernel) {
  Compilers compilers(compiler_command(), 2);
  std::vector<std::future<CompileResult>> results;
  const std::vector<int> sizes = {64, 128, 256, 512, 1024, 96};
  for (const int n : sizes)
    results.push_back(std::async(std::launch::async,
                                 [&compilers, n] { return compilers.compile(scale_request(n)); }));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const CompileResult c = results[i].get();
    ASSERT_EQ(c.resources.size(), 2u);
    EXPECT_EQ(c.resources[0].smem_static, sizes[i] * 4) << "request " << i;
  }
  EXPECT_EQ(compilers.restarts(), 0);
}

// NVRTC's refusal comes back as this process's compile() gives it: kCompile, the log and the
// options in the details; the child serves the next request.
TEST(Compilers, ACompileErrorComesBackWithTheLogAndTheChildServesOn) {
  Compilers compilers(compiler_command(), 1);
  CompileRequest broken;
  broken.source_name = "broken.cu";
  broken.source = "__global__ void k() { this_is_not_declared = 1; }";
  broken.name_expressions = {"k"};
  try {
    compilers.compile(broken);
    FAIL() << "compiled a broken source";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompile);
    EXPECT_NE(std::string(e.what()).find("broken.cu"), std::string::npos) << e.what();
    EXPECT_NE(e.details().find("this_is_not_declared"), std::string::npos) << e.details();
    EXPECT_NE(e.details().find("--gpu-architecture=sm_90"), std::string::npos) << e.details();
  }
  EXPECT_FALSE(compilers.compile(scale_request(64)).cubin.empty());
  EXPECT_EQ(compilers.restarts(), 0);
}

// A child that dies on a request (as NVRTC crashing on a source would) is the request's compile
// error, with how it died; the next request gets a new child.
TEST(Compilers, AChildThatDiesIsTheCompilesErrorAndIsStartedAgain) {
  // Reads the request's first byte from its descriptor, then kills itself with SIGSEGV.
  Compilers compilers({"/bin/sh", "-c", "head -c 1 <&\"$1\" > /dev/null; kill -SEGV $$", "sh"}, 1);
  for (int round = 0; round < 2; ++round) {
    try {
      compilers.compile(scale_request(64));
      FAIL() << "a child that died gave a result";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCompile);
      EXPECT_NE(std::string(e.what()).find("the compiler process died compiling demo.cu"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("Segmentation fault"), std::string::npos) << e.what();
      EXPECT_NE(e.details().find("demo::scale<64>"), std::string::npos) << e.details();
    }
  }
  EXPECT_EQ(compilers.restarts(), 1);  // the second request's child
}

// A child that never answers is killed at the limit, the request's compile error.
TEST(Compilers, AChildPastTheLimitIsKilled) {
  Compilers compilers({"/bin/sh", "-c", "exec sleep 60", "sh"}, 1, 0.3);
  const auto start = std::chrono::steady_clock::now();
  try {
    compilers.compile(scale_request(64));
    FAIL() << "a child that never answered gave a result";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompile);
    EXPECT_NE(
        std::string(e.what()).find("NVRTC did not finish within 0.3 s; compiler process killed"),
        std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

// Abandoned: the children compiling are killed, their callers and every later one get the
// compile error that says so at once (a tuning run at its end does not wait for compiles it no
// longer needs).
TEST(Compilers, AbandonedCompilesEndAtOnceAndLaterOnesAreRefused) {
  Compilers compilers({"/bin/sh", "-c", "exec sleep 60", "sh"}, 2);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<void>> calls;
  for (int i = 0; i < 2; ++i)
    calls.push_back(std::async(std::launch::async, [&] { compilers.compile(scale_request(64)); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // both children busy
  compilers.abandon();
  auto refused = [](std::future<void>& call) {
    try {
      call.get();
      ADD_FAILURE() << "an abandoned compile gave a result";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kCompile);
      EXPECT_NE(std::string(e.what()).find("compile abandoned"), std::string::npos) << e.what();
    }
  };
  for (auto& call : calls) refused(call);
  auto later = std::async(std::launch::async, [&] { compilers.compile(scale_request(64)); });
  refused(later);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_EQ(compilers.restarts(), 0);
}

// Children that have answered nothing yet (warming NVRTC up, or stuck before their loop) are
// killed as the compilers go, not waited for: a tune that ends at once ends at once.
TEST(Compilers, ChildrenThatNeverAnsweredAreNotWaitedFor) {
  const auto start = std::chrono::steady_clock::now();
  { Compilers compilers({"/bin/sh", "-c", "exec sleep 60", "sh"}, 2); }
  // Waited for, each would take the 5 s a child is given to exit.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2);
}

TEST(Compilers, ACommandThatCannotStartIsRefusedAtOnce) {
  try {
    Compilers compilers({"/nonexistent/ktune", "__compiler"}, 2);
    FAIL() << "started children from a missing executable";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("cannot start a compiler process /nonexistent/ktune"),
              std::string::npos)
        << e.what();
  }
}

// A compiler child on a frame that is not a request (a truncated one, one that claims more
// elements than it holds) answers with an error, allocates nothing for the claim and serves on;
// on a descriptor that is no tuner's socket it exits.
TEST(Compilers, AChildRefusesAMalformedRequestAndAWrongPeer) {
  channel::Child child = channel::spawn(compiler_command(), "a compiler process");
  auto ask = [&child](const std::string& payload) {
    EXPECT_TRUE(channel::send_frame(child.fd, 1, payload));
    const auto answer = channel::read_frame(child.fd);
    EXPECT_TRUE(answer.has_value());
    if (!answer) return std::string();
    EXPECT_EQ(answer->first, 11u);  // failed
    channel::Reader r(answer->second, "test");
    EXPECT_EQ(static_cast<ErrorCode>(r.u64()), ErrorCode::kInternal);
    return r.str();
  };
  EXPECT_NE(ask("xy").find("compiler process: truncated message"), std::string::npos);
  channel::Writer huge;  // a source name, a source, then 2^40 headers that are not there
  huge.str("a.cu").str("x").u64(std::uint64_t{1} << 40);
  EXPECT_NE(ask(huge.data()).find("truncated message"), std::string::npos);
  channel::reap(child, std::chrono::seconds(5));

  const auto start = std::chrono::steady_clock::now();
  const int status =
      std::system((std::string("'") + testing::ktune_cli() + "' __compiler 0 </dev/null").c_str());
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
}

// The tuning loop with compiler processes: the same candidates compiled, each binary as this
// process compiles it (SyntheticCompiledRunner stands in for the GPU).
using testing::SyntheticCompiledRunner;

// configuration -> the binary the runner was given for it.
std::map<std::string, std::vector<char>> by_config(const SyntheticCompiledRunner& runner) {
  std::map<std::string, std::vector<char>> out;
  for (std::size_t i = 0; i < runner.measured.size(); ++i)
    out[runner.measured[i]] = runner.binaries[i];
  return out;
}

// A short random tune of a copy on `threads` compile threads, no launch variants.
TuneOptions copy_tune(std::size_t evals, unsigned threads) {
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = evals;
  o.progress = false;
  o.compile_threads = threads;
  o.launch_variants = false;
  return o;
}

const Problem& copy_problem() {
  static const Problem p = Problem::parse("elementwise", "align=16;dtype=f32;n=1048576;op=copy");
  return p;
}

TEST(Compilers, ATuneCompilesInChildrenWhatItWouldCompileHere) {
  const Family& family = find_family("elementwise");
  const Problem& problem = copy_problem();
  TuneOptions o = copy_tune(5, 2);
  o.reuse_binaries = false;

  testing::TempDir dir;
  Database here_db(dir.file("here.db"));
  SyntheticCompiledRunner here;
  const TuneSummary a = tune(here_db, here, family, problem, o);

  o.compiler_command = compiler_command();
  Database there_db(dir.file("there.db"));
  SyntheticCompiledRunner there;
  const TuneSummary b = tune(there_db, there, family, problem, o);

  EXPECT_FALSE(a.compile_processes);
  EXPECT_TRUE(b.compile_processes);
  EXPECT_EQ(b.evaluated, 5u);
  EXPECT_EQ(b.ok, 5u);
  EXPECT_EQ(b.compiled, 5u);
  EXPECT_EQ(by_config(there), by_config(here));
  EXPECT_EQ(b.compiler_restarts, 0);
}

// A tune whose compiler dies on every request: each candidate a compile_error naming the death,
// the children started again, the run completed.
TEST(Compilers, ATuneWhoseCompilerCrashesRecordsEachCandidatesCompileError) {
  const Family& family = find_family("elementwise");
  const Problem& problem = copy_problem();
  TuneOptions o = copy_tune(3, 1);
  o.compiler_command = {"/bin/sh", "-c", "head -c 1 <&\"$1\" > /dev/null; kill -SEGV $$", "sh"};
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  SyntheticCompiledRunner runner;
  const TuneSummary s = tune(db, runner, family, problem, o);
  EXPECT_EQ(s.evaluated, 3u);
  EXPECT_EQ(s.failed_by_status.at(status::kCompileError), 3u);
  EXPECT_EQ(s.compiler_restarts, 2);  // the first child died on the first; two more started
  EXPECT_TRUE(runner.binaries.empty());
  ResultFilter all;
  for (const ResultRecord& r : db.results(all))
    EXPECT_NE(r.message.find("the compiler process died"), std::string::npos) << r.message;
}

// A tune whose compiler processes cannot start stops with the reason and records no candidate.
TEST(Compilers, ATuneWhoseCompilersCannotStartRecordsNothing) {
  const Family& family = find_family("elementwise");
  const Problem& problem = copy_problem();
  TuneOptions o = copy_tune(3, 2);
  o.compiler_command = {"/nonexistent/ktune", "__compiler"};
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  SyntheticCompiledRunner runner;
  EXPECT_THROW(tune(db, runner, family, problem, o), Error);
  ResultFilter all;
  EXPECT_TRUE(db.results(all).empty());
}

}  // namespace
}  // namespace ktune
