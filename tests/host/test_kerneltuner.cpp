// ktune db import-kerneltuner: a Kernel Tuner cache file (the JSON tune_kernel(..., cache=FILE)
// appends to) imported as results of the example transpose family, through the command, into a
// real SQLite database; bad caches refused whole with the key and field named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "db/database.hpp"
#include "run_cli.hpp"
#include "temp_dir.hpp"

namespace {

using ktune::testing::run_cli;

const std::string kFamily =
    std::string(KTUNE_SOURCE_DIR) + "/examples/transpose/transpose.family.toml";
const std::string kProblem = "cols=4096;dtype=f32;rows=2048";

// A cache as Kernel Tuner writes it, with its own parameter names for TILE and ROWS.
std::string cache(const std::string& entries) {
  return R"({
  "device_name": "NVIDIA H100 80GB HBM3",
  "kernel_name": "transpose",
  "problem_size": [4096, 2048],
  "tune_params_keys": ["block_size_x", "rows_per_thread", "PAD"],
  "tune_params": {"block_size_x": [16, 32], "rows_per_thread": [1, 2, 4, 8, 32], "PAD": [0, 1]},
  "objective": "time",
  "cache": {)" +
         entries + "}}";
}

const std::string kGood = R"(
    "32,8,1": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1, "time": 0.0251,
               "times": [0.030, 0.025, 0.024, 0.026, 0.025], "compile_time": 412.5,
               "timestamp": "2026-11-20 10:00:00.000000+00:00"},
    "32,4,0": {"block_size_x": 32, "rows_per_thread": 4, "PAD": 0, "time": 0.031},
    "16,32,0": {"block_size_x": 16, "rows_per_thread": 32, "PAD": 0, "time": "InvalidConfig"},
    "16,2,1": {"block_size_x": 16, "rows_per_thread": 2, "PAD": 1,
               "time": "CompilationFailedConfig"})";

// The command for `file` into `db` on an H100 (132 SMs), then `extra`.
std::vector<std::string> command(const std::string& file, const std::string& db,
                                 const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "db",        "import-kerneltuner", file,     "--family-file", kFamily, "--family",
      "transpose", "--problem",          kProblem, "--sms",         "132",   "--db",
      db};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The renames this cache needs and the compute capability.
const std::vector<std::string> kUsual = {
    "--cc", "9.0", "--rename", "block_size_x=TILE", "--rename", "rows_per_thread=ROWS"};

struct Imported {
  ktune::testing::CliResult r;
  std::string db;
};

Imported import(ktune::testing::TempDir& dir, const std::string& text) {
  const std::string file = dir.file("cache.json");
  std::ofstream(file) << text;
  return {run_cli(command(file, dir.file("t.db"), kUsual)), dir.file("t.db")};
}

TEST(KernelTunerImport, EveryConfigurationOfTheCacheBecomesAResult) {
  ktune::testing::TempDir dir;
  auto [r, db_path] = import(dir, cache(kGood));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("4 configurations; 3 added"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 Kernel Tuner failure"), std::string::npos) << r.out;
  ktune::Database db(db_path, ktune::Database::Mode::kReadOnly);
  std::map<std::string, ktune::ResultRecord> rows;
  for (const auto& row : db.results({}))
    if (row.family == "transpose") rows[row.config] = row;
  ASSERT_EQ(rows.size(), 3u);
  const auto& best = rows.at("PAD=1,ROWS=8,TILE=32");
  EXPECT_EQ(best.status, "ok");
  EXPECT_EQ(best.problem, kProblem);
  EXPECT_EQ(best.device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(best.device.sm_count, 132);
  EXPECT_DOUBLE_EQ(best.time_median_ms, 0.025);  // the median of "times", not Kernel Tuner's mean
  EXPECT_DOUBLE_EQ(best.time_min_ms, 0.024);
  EXPECT_DOUBLE_EQ(best.time_max_ms, 0.030);
  EXPECT_EQ(best.repeats, 5);
  // 2 * rows * cols * 4 bytes in 0.025 ms, in GB/s.
  EXPECT_NEAR(best.metric, 2.0 * 2048 * 4096 * 4 / 0.025e-3 / 1e9, 1e-6);
  EXPECT_EQ(best.unit, "GB/s");
  EXPECT_EQ(best.origin, "imported");
  EXPECT_EQ(best.source.rfind("kerneltuner:", 0), 0u) << best.source;
  const auto& single = rows.at("PAD=0,ROWS=4,TILE=32");
  EXPECT_EQ(single.repeats, 1);
  EXPECT_DOUBLE_EQ(single.time_median_ms, 0.031);
  EXPECT_EQ(rows.at("PAD=1,ROWS=2,TILE=16").status, "compile_error");
  // The lookup on that GPU answers with the fastest.
  auto q = run_cli({"explain", "transpose", kProblem, "--family-file", kFamily, "--db", db_path,
                    "--gpu", "NVIDIA H100 80GB HBM3"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("PAD=1,ROWS=8,TILE=32"), std::string::npos) << q.out;
}

// Kernel Tuner's T4 output (store_output_file) of the same tuning: configurations, their invalidity
// and runtimes, the "time" measurement; it does not name the GPU, so --gpu is needed.
std::string t4(const std::string& results, const std::string& unit = "milliseconds") {
  return R"({"schema_version": "1.0.0", "metadata": {"timeunit": ")" + unit +
         R"("}, "results": [)" + results + "]}";
}

const std::string kGoodT4 = R"(
  {"timestamp": "2026-11-20 10:00:00.000000+00:00",
   "configuration": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1},
   "times": {"compilation": 412.5, "benchmark": 3.1, "framework": 0.2, "search_algorithm": 0.01,
             "validation": 0, "runtimes": [0.030, 0.025, 0.024, 0.026, 0.025]},
   "invalidity": "correct", "correctness": 1,
   "measurements": [{"name": "time", "value": 0.0251, "unit": "ms"}], "objectives": ["time"]},
  {"configuration": {"block_size_x": 32, "rows_per_thread": 4, "PAD": 0},
   "times": {"compilation": 400, "runtimes": []}, "invalidity": "correct", "correctness": 1,
   "measurements": [{"name": "time", "value": 0.031, "unit": "ms"}], "objectives": ["time"]},
  {"configuration": {"block_size_x": 32, "rows_per_thread": 2, "PAD": 0},
   "times": {"runtimes": [0.05, 0.04, 0.06]}, "invalidity": "correct", "correctness": 1,
   "measurements": [], "objectives": ["time"]},
  {"configuration": {"block_size_x": 16, "rows_per_thread": 32, "PAD": 0},
   "times": {"runtimes": []}, "invalidity": "constraints", "correctness": 1,
   "measurements": [], "objectives": ["time"]},
  {"configuration": {"block_size_x": 16, "rows_per_thread": 2, "PAD": 1},
   "times": {"runtimes": []}, "invalidity": "compile", "correctness": 1, "measurements": [],
   "objectives": ["time"]},
  {"configuration": {"block_size_x": 16, "rows_per_thread": 4, "PAD": 1},
   "times": {"runtimes": []}, "invalidity": "timeout", "correctness": 1, "measurements": [],
   "objectives": ["time"]})";

TEST(KernelTunerImport, T4ResultsImportAsTheCacheWouldWithTheGpuNamed) {
  ktune::testing::TempDir dir;
  const std::string file = dir.file("t4.json");
  std::ofstream(file) << t4(kGoodT4);
  std::vector<std::string> extra = kUsual;
  // Without --gpu: refused, nothing created.
  auto unnamed = run_cli(command(file, dir.file("t.db"), extra));
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.err.find("does not name the GPU"), std::string::npos) << unnamed.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.db")));
  extra.insert(extra.end(), {"--gpu", "NVIDIA H100 80GB HBM3"});
  auto r = run_cli(command(file, dir.file("t.db"), extra));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("6 configurations; 5 added"), std::string::npos) << r.out;
  ktune::Database db(dir.file("t.db"), ktune::Database::Mode::kReadOnly);
  std::map<std::string, ktune::ResultRecord> rows;
  for (const auto& row : db.results({}))
    if (row.family == "transpose") rows[row.config] = row;
  ASSERT_EQ(rows.size(), 5u);
  const auto& best = rows.at("PAD=1,ROWS=8,TILE=32");
  EXPECT_EQ(best.status, "ok");
  EXPECT_DOUBLE_EQ(best.time_median_ms, 0.025);  // the median of the runtimes
  EXPECT_DOUBLE_EQ(best.time_min_ms, 0.024);
  EXPECT_EQ(best.repeats, 5);
  EXPECT_DOUBLE_EQ(rows.at("PAD=0,ROWS=4,TILE=32").time_median_ms, 0.031);  // the measurement
  EXPECT_DOUBLE_EQ(rows.at("PAD=0,ROWS=2,TILE=32").time_median_ms, 0.05);   // runtimes only
  EXPECT_EQ(rows.at("PAD=1,ROWS=2,TILE=16").status, "compile_error");
  EXPECT_EQ(rows.at("PAD=1,ROWS=4,TILE=16").status, "timeout");
  EXPECT_EQ(best.device.name, "NVIDIA H100 80GB HBM3");
  // Bad T4 files: refused whole, naming the result and field.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {t4(kGoodT4, "seconds"), "metadata.timeunit"},
      {t4(R"({"configuration": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1},
              "times": {}, "invalidity": "odd", "correctness": 1})"),
       "results[0]: invalidity: 'odd'"},
      {t4(R"({"configuration": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1},
              "times": {"runtimes": []}, "invalidity": "correct", "correctness": 1,
              "measurements": []})"),
       "results[0]: neither a time"},
      {t4(R"({"configuration": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1},
              "times": {"runtimes": [0.02]}, "invalidity": "correct", "correctness": 1},
             {"configuration": {"block_size_x": 32, "PAD": 1},
              "times": {"runtimes": [0.02]}, "invalidity": "correct", "correctness": 1})"),
       "results[1]: configuration"},
      {t4(R"({"configuration": {"block_size_x": 16, "rows_per_thread": 32, "PAD": 0},
              "times": {"runtimes": [0.02]}, "invalidity": "correct", "correctness": 1})"),
       "results[0].config"},
  };
  for (const auto& [text, names] : bad) {
    ktune::testing::TempDir d2;
    const std::string f2 = d2.file("t4.json");
    std::ofstream(f2) << text;
    auto b = run_cli(command(f2, d2.file("t.db"), extra));
    EXPECT_EQ(b.exit_code, 2) << text << "\n" << b.err;
    EXPECT_NE(b.err.find(names), std::string::npos) << names << " not in: " << b.err;
    EXPECT_FALSE(std::filesystem::exists(d2.file("t.db")));
  }
}

TEST(KernelTunerImport, BadCachesAreRefusedWholeNamingTheKeyAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // A configuration measured ok that the family refuses (ROWS must divide TILE).
      {cache(R"("16,32,0": {"block_size_x": 16, "rows_per_thread": 32, "PAD": 0, "time": 0.02})"),
       "cache[\"16,32,0\"].config"},
      {cache(R"("32,8,1": {"block_size_x": 32.5, "rows_per_thread": 8, "PAD": 1, "time": 0.02})"),
       "block_size_x"},
      {cache(R"("32,8,1": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1, "time": "Oops"})"),
       "Oops"},
      {cache(R"("32,8,1": {"block_size_x": 32, "PAD": 1, "time": 0.02})"), "rows_per_thread"},
      {cache(R"("32,8,1": {"block_size_x": 32, "rows_per_thread": 8, "PAD": 1, "time": 0})"),
       "time_median_ms"},
      {cache(""), "no configuration"},
      {R"({"format": "ktune-results", "version": 1, "results": []})", "not a Kernel Tuner cache"},
      {"{\"cache\": ", "import-kerneltuner"},
  };
  for (const auto& [text, names] : cases) {
    ktune::testing::TempDir dir;
    auto [r, db_path] = import(dir, text);
    EXPECT_EQ(r.exit_code, 2) << text << "\n" << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << names << " not in: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(db_path)) << "created for: " << text;
  }
  // A parameter that is not the family's, unless renamed; a rename of nothing; a bad --cc.
  ktune::testing::TempDir dir;
  const std::string file = dir.file("cache.json");
  std::ofstream(file) << cache(kGood);
  auto base = [&](const std::vector<std::string>& extra) {
    return run_cli(command(file, dir.file("t.db"), extra));
  };
  auto unknown = base({"--cc", "9.0"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("block_size_x is not one of transpose's (TILE, ROWS, PAD)"),
            std::string::npos)
      << unknown.err;
  auto nothing = base({"--cc", "9.0", "--rename", "block_size_x=TILE", "--rename",
                       "rows_per_thread=ROWS", "--rename", "bogus=PAD"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.err.find("no parameter bogus"), std::string::npos) << nothing.err;
  auto cc = base({"--cc", "nine", "--rename", "block_size_x=TILE"});
  EXPECT_EQ(cc.exit_code, 2);
  EXPECT_NE(cc.err.find("--cc"), std::string::npos) << cc.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("t.db")));
}

}  // namespace
