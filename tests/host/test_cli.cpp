// Host tests: the ktune command's parsing, exit codes and messages; ktune check for sm_90.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util.hpp"
#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/version.hpp"
#include "platform/driver.hpp"
#include "run_cli.hpp"
#include "synthetic_recording.hpp"
#include "temp_dir.hpp"

namespace ktune {
namespace {

using testing::run_cli;

TEST(Cli, HelpExitsZeroAndDescribesCommands) {
  auto r = run_cli({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"tune", "query", "check", "bench", "explain", "devices", "Exit codes"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  auto t = run_cli({"tune", "elementwise", "--help"});
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("--n"), std::string::npos);
}

struct BadArgs {
  std::vector<std::string> args;
  std::string names;  // what the message must mention
};

TEST(Cli, BadArgumentsExitTwoNamingTheArgument) {
  const std::vector<BadArgs> cases = {
      {{}, "a command is required"},
      {{"frobnicate"}, "frobnicate"},
      {{"tune", "elementwise", "--n", "4096x"}, "--n"},
      {{"tune", "elementwise", "--n", "-1"}, "--n"},
      {{"tune", "elementwise", "--n", "1e99"}, "--n"},
      {{"tune", "elementwise", "--n", "99999999999999999999"}, "--n"},
      {{"tune", "elementwise", "--op", "mul"}, "--op"},
      {{"tune", "elementwise", "--dtype", "f16"}, "--dtype"},
      {{"tune", "elementwise", "--align", "3"}, "--align"},
      {{"tune", "elementwise", "--dtype", "f64", "--align", "4"}, "align"},
      {{"tune", "elementwise", "--max-evals", "-5"}, "--max-evals"},
      {{"tune", "elementwise", "--strategy", "magic"}, "--strategy"},
      {{"tune", "fft"}, "fft"},
      {{"tune", "gemm", "--shape", "4096x"}, "--shape"},
      {{"tune", "gemm", "--shape", "4096x4096x-1"}, "--shape"},
      {{"tune", "gemm", "--shape", "0x8x8"}, "m must be"},
      {{"tune", "gemm", "--dtype", "f64", "--align", "4"}, "align"},
      {{"tune", "gemm", "--op", "nx"}, "--op"},
      {{"tune", "gemm", "--shape", "8x8x8", "--max-evals", "x"}, "--max-evals"},
      {{"bench", "gemm", "--dtype", "f8"}, "--dtype"},
      {{"tune", "gemm_tc", "--out", "f16"}, "out must be f32 or the input dtype"},
      {{"tune", "gemm_tc", "--dtype", "tf32", "--out", "bf16"}, "out must be f32 for tf32"},
      {{"bench", "gemm", "--dtype", "f32", "--batch", "4"}, "--batch"},
      {{"bench", "gemm", "--dtype", "bf16", "--batch", "0"}, "--batch"},
      {{"tune", "gemm_tc", "--batch", "0"}, "batch must be in"},
      {{"tune", "gemm_tc", "--dtype", "tf32", "--align", "8"}, "align must be 4 elements of tf32"},
      {{"tune", "gemm_tc_skinny", "--m", "64", "--n", "64"}, "m or n must be at most 16"},
      {{"tune", "gemm_tc_skinny", "--m", "8", "--batch", "2"}, "batch must be 1"},
      {{"bench", "gemm", "--dtype", "tf32", "--shape", "64x64x64", "--op", "nt"}, "op must be tn"},
      {{"bench", "gemm", "--dtype", "bf16", "--tc-family", "gemm_tc_skinny"}, "needs --shape"},
      {{"bench", "gemm", "--dtype", "bf16", "--tc-family", "gemm_tc_skinny", "--shape", "64x64x64"},
       "m or n must be at most 16"},
      {{"bench", "gemm", "--dtype", "tf32", "--shape", "64x5x64", "--op", "nt"}, "op must be tn"},
      {{"bench", "gemm", "--shape", "8x8x8:nx"}, "the op after ':' must be"},
      {{"bench", "gemm", "--shape", "8x8x8", "8x8:nt"}, "--shape"},
      {{"bench", "gemm", "--shape", "8x8x8:tt", "0x8x8:nt"}, "--shape"},
      {{"bench", "gemm", "--dtype", "tf32", "--shape", "64x64x64:tn", "64x64x64:nt"},
       "op must be tn"},
      {{"check", "--arch", "sm_9x"}, "--arch"},
      {{"check", "--family", "fft"}, "fft"},
      {{"bench", "fft"}, "fft"},
      {{"bench", "elementwise", "--n", "0"}, "--n"},
      {{"bench", "gemm", "--random-shapes", "0"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "-4"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "4x"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "4", "--stages", "bogus"}, "--stages"},
      {{"bench", "gemm", "--random-shapes", "4", "--stages", "presets,bogus"}, "--stages"},
      {{"bench", "gemm", "--random-shapes", "4", "--seed", "-1"}, "--seed"},
      {{"bench", "gemm", "--random-shapes", "4", "--shape", "8x8x8"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "4", "--op", "nt"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "4", "--dtype", "bf16", "--batch", "2"}, "--batch"},
      {{"bench", "gemm", "--seed", "4"}, "--random-shapes"},
      {{"bench", "gemm", "--stages", "tuned"}, "--random-shapes"},
      {{"bench", "gemm", "--shard", "1/2"}, "--random-shapes"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "0/2"}, "--shard"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "3/2"}, "--shard"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "1/5"}, "--shard"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "1/x"}, "--shard"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "1/2/3"}, "--shard"},
      {{"bench", "gemm", "--random-shapes", "4", "--shard", "2"}, "--shard"},
      {{"explain", "elementwise", "n=1;op=copy"}, "dtype"},
      {{"explain", "fft", "n=1"}, "fft"},
      {{"query", "--family", "fft"}, "fft"},
      {{"tune", "elementwise", "--device", "x"}, "--device"},
      {{"tune", "elementwise", "--device", "-1"}, "--device"},
      {{"tune", "elementwise", "--device", "0,"}, "--device"},
      {{"tune", "elementwise", "--device", "0,0"}, "--device"},
      {{"tune", "elementwise", "--device", "al"}, "--device"},
      {{"tune", "gemm", "--only", "FOO=1"}, "no parameter FOO"},
      {{"tune", "gemm", "--only", "MMA=9"}, "MMA takes"},
      {{"tune", "gemm", "--only", "MMA=1,x"}, "not an integer"},
      {{"tune", "gemm", "--only", "MMA"}, "NAME=VALUE"},
  };
  for (const auto& c : cases) {
    auto r = run_cli(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << joined << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
  }
}

TEST(Cli, DatabaseProblemsExitFourNamingTheFile) {
  testing::TempDir dir;
  std::string junk = dir.file("junk.db");
  std::ofstream(junk) << std::string(4096, 'j');
  auto r = run_cli({"query", "--db", junk});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find(junk), std::string::npos) << r.err;
  // A missing database is not an error for a reading command: the shipped results answer, the
  // note names the file, and nothing is created.
  auto missing = run_cli({"query", "--db", dir.file("missing.db")});
  EXPECT_EQ(missing.exit_code, 0) << missing.err;
  EXPECT_NE(missing.err.find("missing.db"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("shipped results"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.db")));
}

// --list-shapes prints the draw without a GPU: the same seed the same shapes, a shard the rows of
// its part of the whole draw, numbered as there.
TEST(Cli, RandomShapesListTheDrawAndAShardIsItsPart) {
  const auto whole = run_cli(
      {"bench", "gemm", "--random-shapes", "8", "--seed", "5", "--dtype", "f32", "--list-shapes"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  auto rows = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("f32 ", 0) == 0) out.push_back(line);
    return out;
  };
  const std::vector<std::string> all = rows(whole.out);
  ASSERT_EQ(all.size(), 8u) << whole.out;
  EXPECT_EQ(rows(run_cli({"bench", "gemm", "--random-shapes", "8", "--seed", "5", "--dtype", "f32",
                          "--list-shapes"})
                     .out),
            all);
  const auto part = run_cli({"bench", "gemm", "--random-shapes", "8", "--seed", "5", "--dtype",
                             "f32", "--list-shapes", "--shard", "2/2"});
  ASSERT_EQ(part.exit_code, 0) << part.err;
  EXPECT_NE(part.out.find("shard 2/2: shapes 5 to 8"), std::string::npos) << part.out;
  EXPECT_EQ(rows(part.out), std::vector<std::string>(all.begin() + 4, all.end()));
  const auto other = run_cli(
      {"bench", "gemm", "--random-shapes", "8", "--seed", "6", "--dtype", "f32", "--list-shapes"});
  EXPECT_NE(rows(other.out), all);
}

TEST(Cli, NoDriverExitsThreeWithAClearMessage) {
  if (detail::driver_available())
    GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"devices"},
                                             {"tune", "elementwise", "--n", "1M"},
                                             {"tune"},
                                             {"tune", "--device", "all"},
                                             {"tune", "gemm", "--device", "0,1"},
                                             {"tune", "gemm", "--grid"},
                                             {"tune", "gemm", "--grid", "huge-k"},
                                             {"bench", "runtime"}}) {
    testing::TempDir dir;
    auto r = run_cli(args, "KTUNE_DB=" + dir.file("t.db"));
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("no CUDA"), std::string::npos) << r.err;
    // Nothing was created: without a GPU there was nothing to store.
    EXPECT_FALSE(std::filesystem::exists(dir.file("t.db"))) << args[0];
  }
}

// The any-shape benchmark makes its database in $TMPDIR (or at --keep-db) only once it has a GPU.
TEST(Cli, BenchRandomShapesWithoutADriverExitsThreeAndCreatesNothing) {
  if (detail::driver_available())
    GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  testing::TempDir dir;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"bench", "gemm", "--random-shapes", "4", "--seed", "1"},
           {"bench", "gemm", "--random-shapes", "4", "--keep-db", dir.file("kept.db")}}) {
    auto r = run_cli(args, "TMPDIR=" + dir.path().string() + " KTUNE_DB=" + dir.file("t.db"));
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("no CUDA"), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << args.back();
  }
  // A --keep-db file that exists is refused before the GPU is looked for: the run's database
  // must start with the shipped presets alone.
  std::ofstream(dir.file("old.db")) << "x";
  auto r = run_cli({"bench", "gemm", "--random-shapes", "4", "--keep-db", dir.file("old.db")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--keep-db"), std::string::npos) << r.err;
}

// explain --strict-fp32 answers as a runtime with Options::strict_fp32: the shipped winner of an
// f32 product of 12 columns is the 3xTF32 kernel, which it passes over for an FMA one. Nothing
// is created where the database is missing.
TEST(Cli, ExplainStrictFp32HoldsF32SkinnyProductsToTheFmaKernels) {
  testing::TempDir dir;
  const std::string db = dir.file("none.db");
  auto config_of = [](const std::string& out) {
    const auto at = out.find("config");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  for (bool strict : {false, true}) {
    std::vector<std::string> args = {
        "explain", "gemm_skinny", "align=4;dtype=f32;k=4096;m=12;n=4096;op=nn",
        "--arch",  "sm_90",       "--db",
        db};
    if (strict) args.push_back("--strict-fp32");
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(config_of(r.out).find(strict ? "MMA=0" : "MMA=1"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

// Every family's kernels compile for sm_90: a sample of 24 a check problem, drawn anew for each
// commit (the seed is the version text's hash, which names the commit; printed on failure), as
// the whole check takes about 15 minutes on CI's 2 cores. KTUNE_FULL_CHECKS=1 compiles every one.
TEST(Cli, CheckCompilesEveryFamilyForSm90) {
  std::vector<std::string> args = {"check", "--arch", "sm_90", "--quiet"};
  const char* full = std::getenv("KTUNE_FULL_CHECKS");
  const bool sampled = !(full && std::string(full) == "1");
  std::string seed;
  if (sampled) {
    Hasher h;
    h.add(version_text());
    seed = std::to_string(std::stoull(h.hex().substr(0, 15), nullptr, 16));
    args.insert(args.end(), {"--sample", "24", "--seed", seed});
  }
  auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << "ktune check --arch sm_90" << (sampled ? " --sample 24 --seed " : "")
                            << seed << "\n"
                            << r.out << r.err;
  EXPECT_NE(r.out.find("all kernels compile"), std::string::npos) << r.out;
  for (const char* family : {"elementwise", "histogram", "gemm ", "gemm_skinny", "gemm_tc ",
                             "gemm_tc80", "gemm_tc_skinny"})
    EXPECT_NE(r.out.find(std::string("\n") + family), std::string::npos) << family << r.out;
  EXPECT_EQ(r.out.find("sampled: at most 24 kernels") != std::string::npos, sampled) << r.out;
}

// --sample's draw: at most N kernels a problem, the same for a seed and another for another seed,
// the default configuration's kernel always among them; refused with --exhaustive.
TEST(Cli, CheckSampleIsOneDrawASeedAndKeepsTheDefaultKernel) {
  auto kernels = [](const std::string& seed) {
    auto r = run_cli(
        {"check", "--family", "histogram", "--sample", "3", "--seed", seed, "-v", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("histogram  ktune::", 0) == 0) lines.push_back(line);
    return lines;
  };
  const std::vector<std::string> a = kernels("5"), b = kernels("5"), c = kernels("6");
  const Family& histogram = find_family("histogram");
  const std::size_t problems = histogram.check_problems().size();
  EXPECT_EQ(a.size(), 3 * problems);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (const Problem& p : histogram.check_problems()) {
    const DeviceLimits limits = DeviceLimits::for_arch(9, 0);
    for (const std::string& name :
         histogram.name_expressions(histogram.default_config(p, limits), p))
      EXPECT_TRUE(std::any_of(a.begin(), a.end(),
                              [&](const std::string& line) {
                                return line.find(" " + name + " ") != std::string::npos;
                              }))
          << p.key() << ": " << name;
  }
  auto both = run_cli({"check", "--sample", "3", "--exhaustive"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

// The tensor-core GEMM's fallback for GPUs without wgmma (gemm_tc80: mma.sync, cp.async) compiles
// for the A100 (sm_80) and the L40 (sm_89), its covering subset on every check problem, no spills.
TEST(Cli, CheckCompilesTheTensorCoreFallbackForSm80AndSm89) {
  for (const char* arch : {"sm_80", "sm_89"}) {
    auto r = run_cli({"check", "--family", "gemm_tc80", "--arch", arch, "--verbose", "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << arch << r.out << r.err;
    EXPECT_NE(r.out.find(std::string("compiled for ") + arch), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("all kernels compile"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ktune::tc80::gemm_tc80<2, 0, 0, 0, 0, 128, 128, 2, 2, 3, 8>"),
              std::string::npos)
        << r.out;  // the default for tf32
    EXPECT_EQ(r.out.find(" spills"), std::string::npos) << arch << r.out;
  }
  // gemm_tc has no kernels there (wgmma): said, not a failure.
  auto wgmma = run_cli({"check", "--family", "gemm_tc", "--arch", "sm_80", "--quiet"});
  EXPECT_EQ(wgmma.exit_code, 0) << wgmma.out << wgmma.err;
  EXPECT_NE(wgmma.out.find("gemm_tc: no kernels for sm_80: needs sm_90"), std::string::npos)
      << wgmma.out;
}

// The run is a replay of a synthetic recording (standing in for GPU measurements), paced at 2 ms
// per candidate so that its rows spread over a time axis.
TEST(Cli, ReportPlotsARunAsSvg) {
  testing::TempDir dir;
  std::int64_t recorded = 0;
  {
    Database db(dir.file("rec.db"));
    recorded = testing::record_synthetic(db, "align=16;dtype=f32;n=1048576;op=copy");
  }
  auto tuned = run_cli({"tune", "--db", dir.file("run.db"), "--replay-from", dir.file("rec.db"),
                        "--replay", std::to_string(recorded), "--replay-delay-ms", "2",
                        "--strategy", "random", "--max-evals", "60"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.err;
  ASSERT_NE(tuned.out.find("run 1,"), std::string::npos) << tuned.out;
  const std::string svg_path = dir.file("run.svg");
  auto r = run_cli({"report", "1", "--db", dir.file("run.db"), "-o", svg_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("60 ("), std::string::npos) << r.out;  // evaluations with status counts
  EXPECT_NE(r.out.find("within 3% of it"), std::string::npos) << r.out;
  std::ifstream in(svg_path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<') - std::count(svg.begin(), svg.end(), '>'), 0);
  // Two best-so-far lines (evaluations, wall time) and one dot per ok candidate in each panel.
  std::size_t lines = 0, dots = 0;
  for (std::size_t p = 0; (p = svg.find("<polyline", p)) != std::string::npos; ++p) ++lines;
  for (std::size_t p = 0; (p = svg.find("<circle", p)) != std::string::npos; ++p) ++dots;
  EXPECT_EQ(lines, 2u);
  EXPECT_GT(dots, 2u * 50);
  EXPECT_EQ(dots % 2, 0u);
  EXPECT_NE(svg.find("seconds since the run started"), std::string::npos);

  auto missing = run_cli({"report", "99", "--db", dir.file("run.db")});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("no run 99"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace ktune
