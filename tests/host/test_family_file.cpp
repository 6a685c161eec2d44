// Family files: the example family read and evaluated, bad files refused with file, line and key,
// the template hash, and the CLI knowing a user's family through --family-file and
// $KTUNE_FAMILY_PATH (NVRTC compiles for sm_90 without a GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/util.hpp"
#include "db/database.hpp"
#include "families/file_family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "run_cli.hpp"
#include "runtime/lookup.hpp"
#include "temp_dir.hpp"
#include "tests/test_families.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

const std::string kExample = std::string(KTUNE_SOURCE_DIR) + "/examples/transpose";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A copy of the example in a folder of its own, with the family file's text changed.
struct Copy {
  TempDir dir;
  std::string path;
  explicit Copy(const std::string& from = "", const std::string& to = "",
                const std::string& name = "transpose.family.toml") {
    fs::copy_file(kExample + "/transpose.cuh", dir.file("transpose.cuh"));
    std::string text = read(kExample + "/transpose.family.toml");
    if (!from.empty()) {
      const auto at = text.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) text.replace(at, from.size(), to);
    }
    path = dir.file(name);
    std::ofstream(path) << text;
  }
};

Problem problem(const Family& f, const std::string& key) { return f.parse_problem(key); }

TEST(FamilyFile, TheExampleIsReadAndItsRulesApply) {
  auto f = load_family_file(kExample + "/transpose.family.toml");
  EXPECT_EQ(f->name(), "transpose");
  EXPECT_EQ(f->metric_unit(), "GB/s");
  ASSERT_EQ(f->params().size(), 3u);
  EXPECT_EQ(f->params()[0].name, "TILE");
  EXPECT_EQ(f->params()[1].values, (std::vector<std::int64_t>{1, 2, 4, 8, 16, 32}));

  const Problem p = problem(*f, "cols=777;dtype=f64;rows=1000");
  const DeviceLimits h100 = DeviceLimits::for_arch(9, 0);
  const Config good{{"TILE", 32}, {"ROWS", 8}, {"PAD", 1}};
  EXPECT_EQ(f->reject(good, p, h100), "");
  EXPECT_EQ(f->name_expressions(good, p), std::vector<std::string>{"transpose<double, 32, 8, 1>"});
  EXPECT_EQ(f->block_threads(good, p), 32 * 4);
  EXPECT_EQ(f->reject({{"TILE", 16}, {"ROWS", 32}, {"PAD", 0}}, p, h100), "ROWS must divide TILE");
  EXPECT_EQ(f->reject({{"TILE", 64}, {"ROWS", 2}, {"PAD", 0}}, p, h100),
            "the block has more threads than the device allows");
  // 64 x 65 doubles: 33,280 bytes fit 48 KiB; the device's limit decides.
  DeviceLimits small = h100;
  small.smem_per_block = 16 * 1024;
  EXPECT_EQ(f->reject({{"TILE", 64}, {"ROWS", 16}, {"PAD", 1}}, p, small),
            "the tile does not fit in static shared memory");
  EXPECT_EQ(f->reject({{"TILE", 64}, {"ROWS", 16}, {"PAD", 1}}, p, h100), "");
  // The default serves every problem; reference names come from the axes alone.
  EXPECT_EQ(f->reject(f->default_config(p, h100), p, h100), "");
  EXPECT_EQ(f->reference_names(p), std::vector<std::string>{"transpose_reference<double>"});
  EXPECT_EQ(f->check_problems().size(), 2u);
  EXPECT_EQ(f->default_problems().front().key(), "cols=8192;dtype=f32;rows=8192");

  // Problems out of the axes' ranges or values, or with extra fields, are refused by name.
  for (const auto& [key, names] : std::vector<std::pair<std::string, std::string>>{
           {"cols=0;dtype=f32;rows=4", "cols must be in [1, 1048576]"},
           {"cols=4;dtype=f16;rows=4", "dtype 'f16' is not one of f32, f64"},
           {"cols=4;dtype=f32", "no rows"},
           {"cols=4;dtype=f32;k=3;rows=4", "not one of the axes"}}) {
    try {
      problem(*f, key);
      ADD_FAILURE() << key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    }
  }
}

struct BadFile {
  std::string from, to;
  std::string says;  // part of the message: file:line, key, what
};

TEST(FamilyFile, ABadFileIsRefusedNamingTheFileTheLineAndTheKey) {
  const std::vector<BadFile> cases = {
      {"name = \"transpose\"", "name = \"transpose", "transpose.family.toml:6:"},
      {"description =", "descripton =", "key 'descripton': unknown key"},
      {"values = [16, 32, 64]", "values = []", "key 'parameter.TILE.values': lists no value"},
      {"rule = \"TILE % ROWS == 0\"", "rule = \"TILE % ROWZ == 0\"",
       "'ROWZ' is not a parameter, problem axis or derived value"},
      {"rule = \"TILE % ROWS == 0\"", "rule = \"TILE % (ROWS == 0\"", "column"},
      {"default = 8192, help = \"rows", "default = 0, help = \"rows",
       "key 'axes.rows': default out of range"},
      {"reference = \"transpose_reference<{T}>\"\n", "", "key 'verify.reference': missing"},
      {"length = \"rows * cols\"\nrole = \"out\"", "length = \"rows * TILE\"\nrole = \"out\"",
       "'TILE' depends on a tuning parameter"},
      {"source = \"transpose.cuh\"", "source = \"nothere.cuh\"", "nothere.cuh: no such file"},
      {"kernel = \"transpose<{T}, {TILE}, {ROWS}, {PAD}>\"",
       "kernel = \"transpose<{T}, {TILE}, {ROWS}, {PAD>\"", "key 'kernel'"},
      {"ROWS = 8\nPAD = 1", "ROWS = 3\nPAD = 1", "key 'default.ROWS': 3 is not one of its values"},
      {"unit = \"GB/s\"", "unit = \"fast\"", "key 'metric.unit'"},
      {"tolerance = \"exact\"", "tolerance = { ulps = -1 }", "must be >= 0"},
      {"device.max_threads_per_block", "device.max_thread_per_block", "device names:"},
      // A non-ASCII character where TOML allows none is refused before toml++ sees it (toml++
      // 3.3 runs into undefined behaviour classifying U+00A1..U+0499 there).
      {"[launch]\n", "[launch]\n\xc2\xa1 = 1\n", "non-ASCII character outside a string"},
      // A quote after a bare value opens no string in TOML: what follows it is outside one (a
      // fuzzer's input reached toml++'s unreachable point so).
      {"[launch]\n", "[launch]\nx = 77k\"\xd1\xba\n", "non-ASCII character outside a string"},
      {"rows = 1000\ncols = 777\ndtype = \"f64\"", "rows = 0\ncols = 777\ndtype = \"f64\"",
       "[[check]] entry 2: transpose: rows must be in"},
  };
  for (const auto& c : cases) {
    Copy copy(c.from, c.to);
    try {
      load_family_file(copy.path);
      ADD_FAILURE() << "accepted with '" << c.to << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      const std::string what = e.what();
      EXPECT_NE(what.find(copy.path), std::string::npos) << what;
      EXPECT_NE(what.find(c.says), std::string::npos) << "with '" << c.to << "': " << what;
    }
  }
}

TEST(FamilyFile, ABufferTypeIsATypeNameOrAnExpression) {
  // type = "f32" is the type itself; type = "dtype" the axis; "f33" neither, refused.
  auto named = load_family_file(Copy("type = \"dtype\"\nlength = \"rows * cols\"\nrole = \"out\"",
                                     "type = \"f32\"\nlength = \"rows * cols\"\nrole = \"out\"")
                                    .path);
  EXPECT_EQ(named->name(), "transpose");
  Copy bad("type = \"dtype\"\nlength = \"rows * cols\"\nrole = \"out\"",
           "type = \"f33\"\nlength = \"rows * cols\"\nrole = \"out\"");
  try {
    load_family_file(bad.path);
    ADD_FAILURE() << "accepted type = \"f33\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument.out.type"), std::string::npos) << e.what();
  }
}

TEST(FamilyFile, NonAsciiTextInStringsAndCommentsIsKept) {
  Copy copy("help = \"side of the square tile one block moves\"",
            "help = \"side of the tile, \xc2\xb5s \xc3\xa9\"  # caf\xc3\xa9 \xe2\x80\x94 ok");
  auto f = load_family_file(copy.path);
  EXPECT_EQ(f->name(), "transpose");
}

TEST(FamilyFile, TheHashCoversTheKernelNotTheReferenceOrComments) {
  const std::string base = load_family_file(Copy().path)->template_hash();
  EXPECT_EQ(load_family_file(Copy("# A user's kernel", "# Edited comment").path)->template_hash(),
            base);
  EXPECT_EQ(load_family_file(Copy("tolerance = \"exact\"", "tolerance = { ulps = 2 }").path)
                ->template_hash(),
            base);
  EXPECT_EQ(load_family_file(Copy("help = \"element type\"", "help = \"the type\"").path)
                ->template_hash(),
            base);
  EXPECT_NE(
      load_family_file(Copy("values = [16, 32, 64]", "values = [16, 32]").path)->template_hash(),
      base);
  EXPECT_NE(load_family_file(Copy("block = [\"TILE\", \"TILE / ROWS\"]",
                                  "block = [\"TILE\", \"TILE / ROWS\", 1]")
                                 .path)
                ->template_hash(),
            base);
  Copy edited;
  std::ofstream(edited.dir.file("transpose.cuh"), std::ios::app) << "// an edit\n";
  EXPECT_NE(load_family_file(edited.path)->template_hash(), base);
}

TEST(FamilyFile, TheCliKnowsAFamilyFromAFlagOrTheFamilyPath) {
  Copy copy;
  // --family-file anywhere on the line.
  auto params = run_cli({"params", "transpose", "--family-file", copy.path});
  EXPECT_EQ(params.exit_code, 0) << params.err;
  for (const char* word : {"TILE", "ROWS", "PAD", "ROWS must divide TILE", "rows", "1 .. 1048576"})
    EXPECT_NE(params.out.find(word), std::string::npos) << word << "\n" << params.out;
  // $KTUNE_FAMILY_PATH: every *.family.toml in the folders.
  auto help = run_cli({"tune", "transpose", "--help"},
                      "KTUNE_FAMILY_PATH=" + testing::shell_quote(copy.dir.path().string()));
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("--rows"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--max-evals"), std::string::npos) << help.out;
  // Axis options are checked before any GPU is looked for.
  auto bad = run_cli({"tune", "transpose", "--rows", "0"},
                     "KTUNE_FAMILY_PATH=" + testing::shell_quote(copy.dir.path().string()));
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("rows must be in"), std::string::npos) << bad.err;
  // Without it the family is unknown, and the message says how to name one.
  auto unknown = run_cli({"params", "transpose"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--family-file"), std::string::npos) << unknown.err;
  // A broken file is reported with its line before anything runs.
  Copy broken("[launch]", "[lunch]");
  auto r = run_cli({"query", "--family-file", broken.path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(broken.path + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lunch"), std::string::npos) << r.err;
  // A built-in family's name is refused.
  Copy taken("name = \"transpose\"", "name = \"gemm\"");
  auto t = run_cli({"params", "gemm", "--family-file", taken.path});
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find("built-in"), std::string::npos) << t.err;
}

// A family added through $KTUNE_FAMILY_PATH alone (nothing else edited) is checked, replayed by
// the tuner and compared by the strategies. The recording is synthetic, standing in for GPU
// measurements: a bowl over TILE, ROWS and PAD, one configuration in 11 a wrong result.
TEST(FamilyFile, AFamilyFromTheFamilyPathIsCheckedAndReplayed) {
  Copy copy;
  const std::string env = "KTUNE_FAMILY_PATH=" + testing::shell_quote(copy.dir.path().string());
  const std::string key = "cols=4096;dtype=f32;rows=4096";
  std::int64_t run_id = 0;
  std::size_t space_size = 0;
  {
    auto family = load_family_file(copy.path);
    Database db(copy.dir.file("rec.db"));
    DeviceInfo d;
    d.name = "NVIDIA H100 80GB HBM3";
    d.limits = DeviceLimits::for_arch(9, 0);
    RunRecord run;
    run.device_id = db.ensure_device(d);
    run.family = "transpose";
    run.template_hash = family->template_hash();
    run.problem = key;
    run.strategy = "exhaustive";
    run_id = db.begin_run(run);
    SearchSpace space(*family, family->parse_problem(key), d.limits);
    space_size = space.size();
    for (const Config& c : space.configs()) {
      ResultRecord r;
      r.run_id = run_id;
      r.device_id = run.device_id;
      r.family = run.family;
      r.template_hash = run.template_hash;
      r.problem = key;
      r.config = to_string(c);
      r.status = std::hash<std::string>{}(r.config) % 11 == 0 ? "wrong_result" : "ok";
      r.time_median_ms = 0.2 + 0.05 * std::abs(std::log2(double(c.at("TILE"))) - 6) +
                         0.03 * std::abs(std::log2(double(c.at("ROWS"))) - 3) +
                         0.02 * double(1 - c.at("PAD"));
      r.metric = 134.2 / r.time_median_ms;
      r.unit = "GB/s";
      db.put_result(r);
    }
    db.finish_run(run_id, "completed");
  }
  ASSERT_GT(space_size, 10u);
  auto check = run_cli({"check", "--family", "transpose", "--arch", "sm_90"}, env);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  auto strategies = run_cli({"strategies", "--db", copy.dir.file("rec.db"), "--replay",
                             std::to_string(run_id), "--seeds", "3"},
                            env);
  EXPECT_EQ(strategies.exit_code, 0) << strategies.err;
  EXPECT_NE(strategies.out.find("transpose"), std::string::npos) << strategies.out;
  auto tuned =
      run_cli({"tune", "--db", copy.dir.file("run.db"), "--replay-from", copy.dir.file("rec.db"),
               "--replay", std::to_string(run_id), "--strategy", "exhaustive", "--max-evals", "0"},
              env);
  EXPECT_EQ(tuned.exit_code, 0) << tuned.err;
  // The replayed run's best is stored for the problem, under the family from the path.
  auto best = run_cli({"query", "--db", copy.dir.file("run.db"), "--family", "transpose"}, env);
  EXPECT_EQ(best.exit_code, 0) << best.err;
  EXPECT_NE(best.out.find(key), std::string::npos) << best.out;
  EXPECT_NE(best.out.find("TILE="), std::string::npos) << best.out;
  // Without the path the recorded family is unknown, and the error says how to name it.
  auto unknown =
      run_cli({"strategies", "--db", copy.dir.file("rec.db"), "--replay", std::to_string(run_id)});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("transpose"), std::string::npos) << unknown.err;
  // Without the path, its rows are neither stale nor pruned: they wait for their family file.
  auto checked = run_cli({"db", "check", "--db", copy.dir.file("run.db")});
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_NE(checked.out.find(" 0 stale"), std::string::npos) << checked.out;
  EXPECT_NE(checked.err.find("families not loaded here"), std::string::npos) << checked.err;
  auto pruned = run_cli({"db", "prune", "--stale", "--db", copy.dir.file("run.db")});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  auto kept = run_cli({"query", "--db", copy.dir.file("run.db"), "--family", "transpose"}, env);
  EXPECT_NE(kept.out.find(key), std::string::npos) << kept.out;
}

TEST(FamilyFile, CheckCompilesAUserFamilyForSm90WithoutAGpu) {
  Copy copy;
  auto r =
      run_cli({"check", "--family-file", copy.path, "--family", "transpose", "--arch", "sm_90"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("all kernels compile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cols=777;dtype=f64;rows=1000"), std::string::npos) << r.out;
  // A source that does not compile fails the check, naming the kernel.
  Copy broken;
  std::ofstream(broken.dir.file("transpose.cuh"), std::ios::app)
      << "template <typename T> __global__ void transpose_reference(T* out, const T* in, int r, "
         "int c) { undeclared_thing; }\n";
  auto b =
      run_cli({"check", "--family-file", broken.path, "--family", "transpose", "--arch", "sm_90"});
  EXPECT_NE(b.exit_code, 0) << b.out;
  EXPECT_NE(b.err.find("transpose_reference"), std::string::npos) << b.err;
}

// A problem nobody tuned goes down the whole lookup chain for a family file, whose axes are its
// own (the planted-fault family has n alone, no dtype): the predicted step passes (no model),
// the nearest tuned problem answers.
TEST(FamilyFile, TheLookupChainAnswersAnUntunedProblemFromTheNearest) {
  const Family* f = &::ktune::testing::faults_family();
  ::ktune::testing::TempDir dir;
  Database db(dir.file("t.db"));
  DeviceInfo h100;
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.limits = DeviceLimits::for_arch(9, 0);
  const Problem tuned = f->make_problem({{"n", 4194304}}, {});
  const Config winner = f->default_config(tuned, h100.limits);
  ResultRecord r;
  r.device_id = db.ensure_device(h100);
  r.family = f->name();
  r.template_hash = f->template_hash();
  r.problem = tuned.key();
  r.config = to_string(winner);
  r.status = "ok";
  r.time_median_ms = 0.1;
  r.metric = 1000;
  r.unit = f->metric_unit();
  db.put_result(r);
  for (bool predict : {true, false}) {
    const LookupResult l =
        lookup_config(&db, h100, *f, f->make_problem({{"n", 3000000}}, {}), predict);
    EXPECT_EQ(l.step, LookupStep::kNearest);
    EXPECT_EQ(l.config, winner);
  }
}

// A built-in family that is its family file plus C++: what a user's file declares (parameters,
// axes, constraints, kernel name, metric, problems) comes from families/<name>/<name>.family.toml.
std::unique_ptr<Family> builtin_file(const std::string& name) {
  const std::string path =
      std::string(KTUNE_SOURCE_DIR) + "/families/" + name + "/" + name + ".family.toml";
  return parse_builtin_family_file(read(path), path);
}

void expect_data_from_file(const std::string& name) {
  const Family& f = find_family(name);
  auto data = builtin_file(name);
  EXPECT_EQ(f.description(), data->description());
  EXPECT_EQ(f.metric_unit(), data->metric_unit());
  ASSERT_EQ(f.params().size(), data->params().size());
  for (std::size_t i = 0; i < f.params().size(); ++i) {
    EXPECT_EQ(f.params()[i].name, data->params()[i].name);
    EXPECT_EQ(f.params()[i].values, data->params()[i].values);
    EXPECT_EQ(f.params()[i].help, data->params()[i].help);
  }
  EXPECT_EQ(f.describe_axes(), data->describe_axes());
  // The file's rules first (a family may list its C++ rules after them).
  const auto rules = f.describe_constraints(), file_rules = data->describe_constraints();
  ASSERT_GE(rules.size(), file_rules.size());
  EXPECT_TRUE(std::equal(file_rules.begin(), file_rules.end(), rules.begin()));
  EXPECT_EQ(f.check_problems().size(), data->check_problems().size());
  EXPECT_EQ(f.origin(), "built-in");
}

TEST(BuiltinFamilyFile, ElementwiseTakesItsDataFromItsFile) {
  expect_data_from_file("elementwise");
  const Family& ew = find_family("elementwise");
  EXPECT_EQ(ew.check_problems().size(), 6u);  // every op and type

  // Kernel names (and so compiled kernels and binary-cache keys) as the C++ wrote them.
  const DeviceLimits h100 = DeviceLimits::for_arch(9, 0);
  const Problem copy = ew.parse_problem("align=16;dtype=f32;n=1000;op=copy");
  const Problem cc = ew.parse_problem("align=8;dtype=f64;n=1000;op=complex_copy");
  Config c = {{"BLOCK", 256}, {"GRID", 8}, {"STRIDE", 1}, {"UNROLL", 2}, {"VEC", 4}, {"CACHE", 1}};
  EXPECT_EQ(ew.name_expressions(c, copy),
            std::vector<std::string>{"ktune::elementwise_kernel<0, float, 4, 2, 1, 1>"});
  EXPECT_EQ(ew.reject(c, cc, h100), "VEC * element size exceeds 16 bytes");
  c["VEC"] = 2;
  EXPECT_EQ(ew.name_expressions(c, cc),
            std::vector<std::string>{"ktune::elementwise_kernel<2, double, 2, 2, 1, 1>"});
  // The metric's bytes: complex_copy reads two buffers and writes two.
  EXPECT_EQ(*ew.work_of(cc, h100), 4.0 * 1000 * 8);
  EXPECT_EQ(*ew.work_of(copy, h100), 2.0 * 1000 * 4);
  // The C++ keeps the rules on a problem's alignment.
  EXPECT_THROW(ew.parse_problem("align=4;dtype=f64;n=1;op=copy"), Error);
  EXPECT_THROW(ew.parse_problem("align=12;dtype=f32;n=1;op=copy"), Error);
}

TEST(BuiltinFamilyFile, HistogramTakesItsDataFromItsFile) {
  expect_data_from_file("histogram");
  const Family& h = find_family("histogram");
  EXPECT_EQ(h.check_problems().size(), 6u);
  const DeviceLimits h100 = DeviceLimits::for_arch(9, 0), a100 = DeviceLimits::for_arch(8, 0);
  const Problem u16 = h.parse_problem("align=2;bins=1024;dtype=u16;n=1000");
  Config c = {{"BLOCK", 512}, {"GRID", 4},   {"ITEMS", 4}, {"VEC", 16},   {"PRIV", 2},
              {"R", 8},       {"LAYOUT", 2}, {"AGG", 1},   {"CLUSTER", 2}};
  // R is an argument, not a template parameter.
  EXPECT_EQ(
      h.name_expressions(c, u16),
      std::vector<std::string>{"ktune::histogram_kernel<unsigned short, 512, 16, 4, 2, 2, 1>"});
  EXPECT_EQ(h.reject(c, u16, h100), "");
  EXPECT_EQ(h.reject(c, u16, a100), "thread-block clusters need compute capability 9.0");
  c["CLUSTER"] = 1;
  c["VEC"] = 1;  // below a u16 sample: the file's first rule
  EXPECT_EQ(h.reject(c, u16, h100), "VEC is below the sample size");
  c["VEC"] = 16;
  c["R"] = 32;  // 32 replicas of 4096 bins: the C++'s shared-memory rule
  const Problem wide = h.parse_problem("align=16;bins=4096;dtype=f32;n=1000");
  EXPECT_EQ(h.reject(c, wide, h100).rfind("the replicas need ", 0), 0u) << h.reject(c, wide, h100);
  // A run counts the three input classes.
  EXPECT_EQ(*h.work_of(u16, h100), 3.0 * 1000 * 2);
  EXPECT_THROW(h.parse_problem("align=1;bins=10;dtype=i32;n=1"), Error);
  EXPECT_THROW(h.parse_problem("align=3;bins=10;dtype=u8;n=1"), Error);
}

// gemm's parameters, axes, kernel name, metric and problems are its file's; its rules, the split-k
// reduction's name and the checks of a problem's alignment are its C++'s.
TEST(BuiltinFamilyFile, GemmTakesItsDataFromItsFile) {
  expect_data_from_file("gemm");
  const Family& g = find_family("gemm");
  EXPECT_EQ(g.check_problems().size(), 5u);
  EXPECT_EQ(g.prefix_params(), 12u);
  EXPECT_EQ(g.params()[11].name, "SWIZZLE");  // the last of the prefix the rules walk first
  const DeviceLimits h100 = DeviceLimits::for_arch(9, 0);
  const Problem p = g.parse_problem("align=2;dtype=f64;k=262144;m=64;n=64;op=tn");
  Config c = {{"BM", 64}, {"BN", 64},     {"BK", 16},    {"WM", 32},      {"WN", 32},
              {"TM", 4},  {"TN", 4},      {"WNITER", 1}, {"SPLITK", 8},   {"MMA", 3},
              {"VEC", 2}, {"SWIZZLE", 1}, {"STAGES", 3}, {"PREFETCH", 0}, {"UNROLL", 0},
              {"PAD", 4}, {"MINB", 1},    {"KCONTIG", 0}};
  EXPECT_EQ(g.reject(c, p, h100), "");
  // Kernel names (and so compiled kernels and binary-cache keys) as the C++ wrote them; the
  // reduction takes the kernel's arguments without SPLIT.
  EXPECT_EQ(g.name_expressions(c, p),
            (std::vector<std::string>{"ktune::gemm_kernel<double, 1, 0, 64, 64, 16, 32, 32, 4, 4, "
                                      "1, 3, 0, 0, 2, 4, 3, 1, 0, 1>",
                                      "ktune::gemm_splitk_reduce<double, 1, 0, 64, 64, 16, 32, 32, "
                                      "4, 4, 1, 3, 0, 0, 2, 4, 3, 1, 0>"}));
  c["SPLITK"] = 1;
  EXPECT_EQ(g.name_expressions(c, p).size(), 1u);
  // The metric in reals: m * n * k of the largest sizes passes 2^63.
  const Problem huge =
      g.parse_problem("align=1;dtype=f32;k=2147483647;m=2147483647;n=2147483647;op=nn");
  EXPECT_DOUBLE_EQ(*g.work_of(huge, h100), 2.0 * 2147483647.0 * 2147483647.0 * 2147483647.0);
  // The axes are the file's; the alignment classes the C++'s.
  for (const char* bad :
       {"align=4;dtype=f32;k=1;m=1;n=1;op=nx", "align=4;dtype=f16;k=1;m=1;n=1;op=nn",
        "align=4;dtype=f32;k=0;m=1;n=1;op=nn", "align=3;dtype=f32;k=1;m=1;n=1;op=nn",
        "align=4;dtype=f64;k=1;m=1;n=1;op=nn", "align=4;dtype=f32;k=1;m=1;n=1;op=nn;x=1"})
    EXPECT_THROW(g.parse_problem(bad), Error) << bad;
  try {
    g.parse_problem("align=4;dtype=f32;k=1;m=1;n=1;op=nx");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nn, nt, tn, tt"), std::string::npos) << e.what();
  }
}

// A built-in family's template hash covers its sources and descriptor version, as before its
// family file existed, so that the shipped presets stay its results. What the file declares that
// changes a configuration's meaning (the kernel name, parameters, derived values) is held here to
// that version: a change fails this test until the version is bumped (and the presets re-tuned).
// Values added to a parameter change no configuration that had a meaning before: such a change
// pins the new digest and keeps the version and hash (WM and WN gained 16 so, SPLITK 3, 6, 12, 24,
// 48 and 96).
TEST(BuiltinFamilyFile, DeclarationsAreHeldToTheirTemplateHash) {
  const struct {
    const char* family;
    const char* declarations;  // digest of what the file says that the hash would cover
    const char* hash;          // the family's template hash: the shipped presets' rows
  } pinned[] = {
      {"elementwise", "333ece55e68bd58a7c930df3dfe20519", "6447c93b7c9acf06"},
      {"histogram", "7e243355f133c157ed2fb64910a7c6fb", "87ffb5c7eeec2fab"},
      // gemm's digest moved when BM and BN took 48, 96 and 192 (WM and WN 48, WNITER 3): values
      // added to a parameter change what no configuration means, so the hash did not move.
      {"gemm", "e2394eab3b2120685ee18161bcd5d608", "09c34dc494a86666"},
  };
  const std::string h200 = read(std::string(KTUNE_SOURCE_DIR) + "/db/presets/nvidia-h200.json");
  for (const auto& p : pinned) {
    EXPECT_EQ(Hasher().add(builtin_file(p.family)->sources().hashed).hex(), p.declarations)
        << p.family
        << ".family.toml changed: if what a configuration means changed (not only values "
           "added to a parameter), bump the C++ family's descriptor_version(); then pin the new "
           "digest and hash here";
    EXPECT_EQ(find_family(p.family).template_hash(), p.hash) << p.family;
    // The shipped presets hold results of this template.
    EXPECT_NE(h200.find(std::string("\"template_hash\": \"") + p.hash + "\""), std::string::npos)
        << p.family;
  }
}

// A built-in family's file says each rule once: the launch, arguments, verification and default
// are its C++'s, and a key the C++ owns is refused.
TEST(BuiltinFamilyFile, RefusesWhatItsCppSays) {
  const std::string path =
      std::string(KTUNE_SOURCE_DIR) + "/families/elementwise/elementwise.family.toml";
  const std::string text = read(path);
  for (const char* extra : {"[launch]\ngrid = [1]\nblock = [1]\n", "[default]\nBLOCK = 0\n",
                            "options = [\"-lineinfo\"]\n"}) {
    try {
      parse_builtin_family_file(std::string(extra) + text, path);
      ADD_FAILURE() << "accepted " << extra;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("elementwise.family.toml"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace ktune
