// Host tests: hostile and careless input to the CLI, the database layer and the runtime's
// database policy (issue 21). Each defect found by probing gets a test that failed before its fix:
// no crash, no hang, nothing changed that was refused.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/output.hpp"
#include "cli/table.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "ktune/version.hpp"
#include "run_cli.hpp"
#include "runtime/lookup.hpp"
#include "synthetic_recording.hpp"
#include "tuner/thread_pool.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void sql(const std::string& path, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << statement << ": " << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(h);
}

std::string sql_text(const std::string& path, const std::string& query) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return "?";
  sqlite3_stmt* q = nullptr;
  std::string out = "?";
  if (sqlite3_prepare_v2(h, query.c_str(), -1, &q, nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  sqlite3_close(h);
  return out;
}

// A ktune database with one ok elementwise result of the current template, closed cleanly.
void make_ktune_db(const std::string& path) {
  Database db(path);
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.limits = DeviceLimits::for_arch(9, 0);
  d.limits.sm_count = 132;
  ResultRecord r;
  r.device_id = db.ensure_device(d);
  r.family = "elementwise";
  r.template_hash = find_family("elementwise").template_hash();
  r.problem = "align=16;dtype=f32;n=1024;op=copy";
  r.config = "BLOCK=256,CACHE=0,GRID=0,STRIDE=0,UNROLL=1,VEC=4";
  r.status = "ok";
  r.time_min_ms = r.time_median_ms = r.time_max_ms = 0.01;
  r.repeats = 20;
  r.metric = 0.8;
  r.unit = "GB/s";
  db.put_result(r);
}

std::string preset_file() {
  EXPECT_FALSE(shipped_presets().empty());
  return std::string(shipped_presets().front().text);
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += a + " ";
  return out;
}

// ---- 1. schema versions ktune never wrote ----

TEST(Hardening, SchemaVersionsKtuneNeverWroteAreRefusedAndNothingIsWritten) {
  for (const long long version :
       {-1LL, -2LL, -1000000LL, static_cast<long long>(INT_MIN), static_cast<long long>(INT_MAX),
        static_cast<long long>(Database::kSchemaVersion) + 1}) {
    TempDir dir;
    const std::string db = dir.file("bad.db"), other = dir.file("other.db");
    const std::string json = dir.file("p.json");
    make_ktune_db(db);
    make_ktune_db(other);
    std::ofstream(json) << preset_file();
    sql(db, "PRAGMA user_version=" + std::to_string(version));
    const std::string before = slurp(db);
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"db", "import", json, "--db", db},
             {"db", "prune", "--stale", "--db", db},
             {"db", "merge", other, "--db", db},
             {"db", "merge", db, "--db", dir.file("target.db")},
             {"db", "export", "--db", db},
             {"db", "check", "--db", db},
             {"query", "--db", db},
             {"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--db", db, "--arch",
              "sm_90"}}) {
      auto r = run_cli(args, "timeout 60");
      EXPECT_EQ(r.exit_code, 4) << version << ": " << joined(args) << "\n" << r.err;
      EXPECT_NE(r.err.find(db), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("Segmentation"), std::string::npos) << r.err;
    }
    EXPECT_EQ(slurp(db), before) << "version " << version << ": the refused file was changed";
    EXPECT_FALSE(fs::exists(dir.file("target.db")));
    EXPECT_THROW(Database(db, Database::Mode::kReadWrite), Error);
    EXPECT_THROW(Database(db, Database::Mode::kReadOnly), Error);
    // The runtime's policy: a warning, then the shipped results from memory; the file untouched.
    std::vector<std::string> warnings;
    auto runtime_db =
        open_for_runtime(db, false, [&](const std::string& w) { warnings.push_back(w); });
    ASSERT_TRUE(runtime_db);
    EXPECT_TRUE(runtime_db->in_memory());
    EXPECT_FALSE(runtime_db->results({}).empty());
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find(db), std::string::npos) << warnings[0];
    EXPECT_THROW(open_for_runtime(db, true, [](const std::string&) {}), Error);
    EXPECT_EQ(slurp(db), before);
  }
}

// ---- 2. thread counts ----

TEST(Hardening, ThreadCountsAreRangeChecked) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"check", "--jobs", "4294967295"},
                                             {"check", "--jobs", "1025"},
                                             {"check", "--jobs", "-1"},
                                             {"tune", "elementwise", "--jobs", "4294967295"},
                                             {"tune", "--jobs", "2000", "gemm"}}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << joined(args) << r.err;
    EXPECT_NE(r.err.find("--jobs"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  }
}

#if defined(__SANITIZE_ADDRESS__)
#define KTUNE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KTUNE_ASAN 1
#endif
#endif

TEST(Hardening, AThreadPoolThatCannotStartAThreadReportsIt) {
#ifdef KTUNE_ASAN
  GTEST_SKIP() << "AddressSanitizer reserves terabytes of address space: no limit on it can "
                  "make thread creation fail here";
#else
  // In a child whose address space cannot hold 512 thread stacks, the pool fails to start some:
  // an Error with the system's reason, not std::terminate.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    std::ifstream status("/proc/self/statm");
    long pages = 0;
    status >> pages;
    limit.rlim_cur = static_cast<rlim_t>(pages) * 4096 + (256u << 20);
    setrlimit(RLIMIT_AS, &limit);
    try {
      ThreadPool pool(512);
      _exit(2);  // every thread started: the limit did not bite
    } catch (const Error& e) {
      _exit(std::string(e.what()).find("cannot start thread") != std::string::npos ? 0 : 3);
    } catch (...) {
      _exit(4);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
#endif
}

// ---- 3. problem keys from a database ----

TEST(Hardening, ARecordedRunWithAnInvalidProblemIsAnErrorNotACrash) {
  TempDir dir;
  const std::string db = dir.file("rec.db");
  {
    Database d(db);
    testing::record_synthetic(d, "align=16;dtype=f32;n=1048576;op=copy");
  }
  for (const char* bad_text :
       {"align=4;dtype=f32;k=-5;m=64;n=64;op=nn", "align=16;dtype=f32;n=-1;op=copy",
        "align=3;dtype=f32;n=8;op=copy"}) {
    const std::string bad = bad_text;
    const std::string family = bad.find("k=") != std::string::npos ? "gemm" : "elementwise";
    sql(db, "UPDATE runs SET family='" + family + "', problem='" + bad + "'");
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"strategies", "--replay", "1", "--db", db, "--seeds", "2"},
             {"tune", "--db", dir.file("out.db"), "--replay-from", db, "--replay", "1"}}) {
      auto r = run_cli(args, "timeout 60");
      EXPECT_EQ(r.exit_code, 4) << bad << ": " << joined(args) << r.err;
      EXPECT_NE(r.err.find("not a valid " + family + " problem"), std::string::npos) << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(dir.file("out.db")));
}

// ---- 4. special files ----

TEST(Hardening, SpecialFilesAreRefusedBeforeSqliteOpensThem) {
  TempDir dir;
  const std::string fifo = dir.file("fifo.db"), good = dir.file("good.db");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  make_ktune_db(good);
  const std::string folder = dir.file("folder.db");
  fs::create_directory(folder);
  for (const std::string& path : {fifo, folder, std::string("/dev/null")}) {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"query", "--db", path},
             {"db", "check", "--db", path},
             {"db", "export", "--db", path},
             {"db", "merge", good, "--db", path},
             {"db", "merge", path, "--db", dir.file("t.db")},
             {"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--db", path, "--arch",
              "sm_90"}}) {
      const auto start = std::chrono::steady_clock::now();
      auto r = run_cli(args, "timeout 30");
      EXPECT_EQ(r.exit_code, 4) << joined(args) << r.err;
      EXPECT_NE(r.err.find("not a database file"), std::string::npos) << r.err;
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
    }
    auto env = run_cli({"query"}, "timeout 30 env KTUNE_DB=" + testing::shell_quote(path));
    EXPECT_EQ(env.exit_code, 4) << env.err;
    EXPECT_THROW(Database(path, Database::Mode::kReadOnly), Error);
    std::vector<std::string> warnings;
    auto runtime_db =
        open_for_runtime(path, false, [&](const std::string& w) { warnings.push_back(w); });
    EXPECT_TRUE(runtime_db->in_memory());
    EXPECT_EQ(warnings.size(), 1u);
  }
  struct stat st {};
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_FALSE(fs::exists(dir.file("t.db")));
}

// ---- 5. another application's file ----

TEST(Hardening, AnotherApplicationsFileIsRefusedUnchangedAndNotSwitchedToWal) {
  TempDir dir;
  const std::string foreign = dir.file("app.db");
  sql(foreign, "CREATE TABLE accounts(id INTEGER, name TEXT); INSERT INTO accounts VALUES(1,'a')");
  const std::string before = slurp(foreign);
  const std::string json = dir.file("p.json");
  std::ofstream(json) << preset_file();
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"db", "import", json, "--db", foreign},
                                             {"db", "prune", "--stale", "--db", foreign},
                                             {"query", "--db", foreign},
                                             {"db", "check", "--db", foreign}}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 4) << joined(args) << r.err;
    EXPECT_NE(r.err.find("another application"), std::string::npos) << r.err;
  }
  EXPECT_THROW(Database{foreign}, Error);
  std::vector<std::string> warnings;
  EXPECT_TRUE(open_for_runtime(foreign, false, [&](const std::string& w) {
                warnings.push_back(w);
              })->in_memory());
  EXPECT_EQ(slurp(foreign), before);
  EXPECT_EQ(sql_text(foreign, "PRAGMA journal_mode"), "delete");
  EXPECT_FALSE(fs::exists(foreign + "-wal"));
}

TEST(Hardening, ViewsAndTriggersInAKtuneDatabaseAreRefused) {
  for (const std::string& change :
       {std::string("DROP TABLE results; CREATE VIEW results AS WITH RECURSIVE r(x) AS (SELECT 1 "
                    "UNION ALL SELECT x + 1 FROM r) SELECT x AS id FROM r"),
        std::string("CREATE TRIGGER t AFTER INSERT ON results BEGIN DELETE FROM devices; END"),
        // one of ktune's triggers by name, with other SQL; one of them dropped
        std::string("DROP TRIGGER measured_problems_insert; CREATE TRIGGER "
                    "measured_problems_insert AFTER INSERT ON results BEGIN DELETE FROM devices; "
                    "END"),
        std::string("DROP TRIGGER measured_problems_delete")}) {
    TempDir dir;
    const std::string db = dir.file("v.db"), json = dir.file("p.json");
    make_ktune_db(db);
    sql(db, change);
    std::ofstream(json) << preset_file();
    const std::string before = slurp(db);
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"db", "merge", db, "--db", dir.file("target.db")},
                                               {"query", "--db", db},
                                               {"db", "import", json, "--db", db}}) {
      const auto start = std::chrono::steady_clock::now();
      auto r = run_cli(args, "timeout 60");
      EXPECT_EQ(r.exit_code, 4) << joined(args) << r.err;
      EXPECT_TRUE(r.err.find("view") != std::string::npos ||
                  r.err.find("trigger") != std::string::npos)
          << r.err;
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
    }
    EXPECT_FALSE(fs::exists(dir.file("target.db")));
    EXPECT_EQ(slurp(db), before);
  }
}

// ---- 6. read-only locations ----

// Runs `ktune args` as the unprivileged user nobody (root ignores permissions). Returns nullopt
// where that cannot be done here (no setpriv, the executable out of nobody's reach).
std::optional<testing::CliResult> run_cli_as_nobody(const std::vector<std::string>& args) {
  if (geteuid() != 0) return run_cli(args);
  if (system("command -v setpriv >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  if (system((as_nobody + " " + testing::shell_quote(testing::ktune_cli()) +
              " --version >/dev/null 2>&1")
                 .c_str()) != 0)
    return std::nullopt;
  return run_cli(args, as_nobody);
}

TEST(Hardening, ADatabaseInAFolderThisUserCannotWriteIsReadReadOnly) {
  TempDir dir;
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  const std::string db = (locked / "t.db").string();
  make_ktune_db(db);
  ASSERT_FALSE(fs::exists(db + "-wal"));  // closed cleanly
  const std::string before = slurp(db);
  // Readable by everyone, writable by nobody but root (the owner when root runs the tests).
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                              fs::perms::group_exec | fs::perms::others_read |
                              fs::perms::others_exec);
  fs::permissions(db, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  const fs::path writable = dir.path() / "writable";
  fs::create_directory(writable);
  fs::permissions(writable, fs::perms::all);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"query", "--db", db},
           {"db", "check", "--db", db},
           {"db", "export", "--db", db},
           {"db", "merge", db, "--db", (writable / "copy.db").string()}}) {
    auto r = run_cli_as_nobody(args);
    if (!r) GTEST_SKIP() << "cannot run ktune as an unprivileged user here (setpriv)";
    EXPECT_EQ(r->exit_code, 0) << joined(args) << r->err;
    EXPECT_EQ(r->err.find("cannot write"), std::string::npos) << r->err;
    if (args[0] == "query") {
      EXPECT_NE(r->out.find("op=copy"), std::string::npos) << r->out;
    }
  }
  // The runtime's policy in a process of that user: read-only, the results used.
  if (geteuid() == 0) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
      try {
        auto d = open_for_runtime(db, false, [](const std::string&) { _exit(11); });
        _exit(d->read_only() && !d->results({}).empty() ? 0 : 12);
      } catch (...) {
        _exit(13);
      }
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(slurp(db), before);
}

// ---- 7. db export -o ----

TEST(Hardening, ExportOutputNeverReplacesTheDatabaseFollowsNoPlantedLinkAndKeepsSpecialFiles) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  make_ktune_db(db);
  // The database itself.
  auto self = run_cli({"db", "export", "--db", db, "-o", db});
  EXPECT_EQ(self.exit_code, 2) << self.err;
  EXPECT_NE(self.err.find("the database"), std::string::npos) << self.err;
  EXPECT_EQ(Database(db, Database::Mode::kReadOnly).results({}).size(), 1u);
  // A link planted at the name an export would once have used for its temporary file.
  const std::string out = dir.file("out.json"), victim = dir.file("victim.txt");
  std::ofstream(victim) << "keep me";
  fs::create_symlink(victim, out + ".tmp");
  auto r = run_cli({"db", "export", "--db", db, "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(victim), "keep me");
  EXPECT_EQ(nlohmann::json::parse(slurp(out))["results"].size(), 1u);
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::owner_read, fs::perms::owner_read);
  // No temporary file left beside it.
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".ktune-"), std::string::npos) << entry.path();
  // A link the user names is followed: its target is replaced, the link stays.
  const std::string real = dir.file("real.json"), link = dir.file("link.json");
  std::ofstream(real) << "old";
  fs::create_symlink(real, link);
  ASSERT_EQ(run_cli({"db", "export", "--db", db, "-o", link}).exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(nlohmann::json::parse(slurp(real))["results"].size(), 1u);
  // Standard output by name.
  for (const char* name : {"-", "/dev/stdout"}) {
    auto s = run_cli({"db", "export", "--db", db, "-o", name});
    EXPECT_EQ(s.exit_code, 0) << name << s.err;
    EXPECT_EQ(nlohmann::json::parse(s.out)["results"].size(), 1u) << name;
  }
  // A device takes the data in place and stays a device: /dev/full refuses it (exit 5).
  auto full = run_cli({"db", "export", "--db", db, "-o", "/dev/full"});
  EXPECT_EQ(full.exit_code, 5) << full.err;
  EXPECT_NE(full.err.find("No space left"), std::string::npos) << full.err;
  struct stat st {};
  ASSERT_EQ(stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // A FIFO is written into, not replaced.
  const std::string fifo = dir.file("pipe");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = slurp(fifo); });
  auto piped = run_cli({"db", "export", "--db", db, "-o", fifo}, "timeout 30");
  reader.join();
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(nlohmann::json::parse(received)["results"].size(), 1u);
  ASSERT_EQ(stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  // A folder is no output file.
  EXPECT_EQ(run_cli({"db", "export", "--db", db, "-o", dir.path().string()}).exit_code, 2);
}

// ---- 8. write errors on standard output ----

TEST(Hardening, ALostWriteToStandardOutputIsAnError) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  make_ktune_db(db);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"db", "export", "--db", db},
           {"query", "--db", db},
           {"query", "--db", db, "--json"},
           {"query", "--db", db, "--all"},
           {"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--db", db, "--arch",
            "sm_90"}}) {
    testing::CliResult r = run_cli(args, "", "/dev/full");
    EXPECT_EQ(r.exit_code, 5) << joined(args) << r.err;
    EXPECT_NE(r.err.find("writing standard output failed"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("exported"), std::string::npos) << r.err;
  }
}

// ---- 9. numbers ----

TEST(Hardening, NonFiniteAndOutOfRangeNumbersAreRefusedNamingTheOption) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"tune", "elementwise", "--timeout-floor", "nan"}, "--timeout-floor"},
      {{"tune", "elementwise", "--timeout-floor", "inf"}, "--timeout-floor"},
      {{"tune", "elementwise", "--max-seconds", "nan"}, "--max-seconds"},
      {{"tune", "elementwise", "--max-seconds", "inf"}, "--max-seconds"},
      {{"tune", "elementwise", "--max-seconds", "-1"}, "--max-seconds"},
      {{"tune", "elementwise", "--seed", "18446744073709551616"}, "--seed"},
      {{"tune", "elementwise", "--seed", "-1"}, "--seed"},
      {{"tune", "elementwise", "--max-evals", "1e3"}, "--max-evals"},
      {{"tune", "elementwise", "--repeats", "1.5"}, "--repeats"},
      {{"tune", "elementwise", "--patience", "0x10"}, "--patience"},
      {{"tune", "--replay-from", "x.db", "--replay", "1", "--replay-delay-ms", "nan"},
       "--replay-delay-ms"},
      {{"tune", "--replay-from", "x.db", "--replay", "99999999999999999999"}, "--replay"},
      {{"strategies", "--replay", "1", "--seeds", "1e2"}, "--seeds"},
      {{"strategies", "--replay", "1", "--budgets", "10,nan"}, "--budgets"},
      {{"report", "18446744073709551617"}, "run"},
      {{"explain", "elementwise", "n=1", "--device", "4294967296"}, "--device"},
      {{"tune", "histogram", "--bins", "4097"}, "--bins"},
  };
  for (const auto& [args, names] : cases) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << joined(args) << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << joined(args) << r.err;
  }
}

// ---- 10. db merge reads within limits ----

TEST(Hardening, MergeRefusesASourceBeyondTheLimitsOfAnImportBeforeReadingIt) {
  TempDir dir;
  const std::string source = dir.file("big.db");
  make_ktune_db(source);
  // 129 MiB of text in one row: more than the 128 MiB an import reads.
  sql(source, "UPDATE results SET message = printf('%.*c', 135266304, 'x')");
  const auto start = std::chrono::steady_clock::now();
  auto r = run_cli({"db", "merge", source, "--db", dir.file("t.db")}, "timeout 60");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("MiB"), std::string::npos) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_FALSE(fs::exists(dir.file("t.db")));
}

// ---- 11. arguments before the driver, options that do not apply ----

TEST(Hardening, ArgumentsAreCheckedBeforeTheDriverAndOptionsThatDoNotApplyAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"bench", "gemm", "--shape", "0x0x0"}, "--shape"},
      {{"bench", "gemm", "--shape", "8x8"}, "--shape"},
      {{"bench", "runtime", "--n", "5"}, "--n"},
      {{"bench", "runtime", "--repeats", "50"}, "--repeats"},
      {{"bench", "elementwise", "--shape", "5x5x5"}, "--shape"},
      {{"bench", "gemm", "--n", "1M"}, "--n"},
      {{"bench", "histogram", "--dtype", "f32"}, "--dtype"},
      {{"bench", "elementwise", "--n", "0"}, "--n"},
      {{"bench"}, "bench"},
      {{"tune", "gemm", "--suite", "--shape", "8x8x8"}, "--suite"},
      {{"tune", "gemm", "--suite", "--op", "tn"}, "--suite"},
      {{"tune", "gemm", "--grid", "--shape", "8x8x8"}, "--grid"},
      {{"tune", "gemm", "--grid", "tiled", "--suite"}, "--grid"},
      {{"tune", "gemm", "--grid", "squares"}, "--grid"},
      {{"tune", "--replay-from", "x.db", "--replay", "1", "gemm", "--shape", "8x8x8"},
       "--replay-from"},
      {{"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--gpu", "X", "--arch",
        "sm_90"},
       "--gpu"},
      {{"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--arch", "sm_90",
        "--device", "1"},
       "--arch"},
  };
  for (const auto& [args, names] : cases) {
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << joined(args) << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << joined(args) << r.err;
  }
}

// ---- 12. architectures ----

TEST(Hardening, AnArchitectureNvrtcDoesNotKnowIsAUsageErrorListingTheKnownOnes) {
  for (const char* arch : {"sm_999", "sm_10", "sm_", "compute_90", "sm_90x", "sm_0090"}) {
    const auto start = std::chrono::steady_clock::now();
    auto r = run_cli({"check", "--arch", arch});
    EXPECT_EQ(r.exit_code, 2) << arch << r.err;
    EXPECT_NE(r.err.find("sm_90"), std::string::npos) << r.err;  // the list
    EXPECT_LT(r.err.size(), 2000u) << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    auto e =
        run_cli({"explain", "elementwise", "align=16;dtype=f32;n=1024;op=copy", "--arch", arch});
    EXPECT_EQ(e.exit_code, 2) << arch << e.err;
  }
}

// ---- 13. query --problem ----

TEST(Hardening, QueryProblemIsValidatedAndMatchedInAnyOrder) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  make_ktune_db(db);
  for (const char* garbage : {"garbage", "n=1024", "op=copy;n=-1;dtype=f32;align=16"}) {
    auto r = run_cli({"query", "--db", db, "--problem", garbage});
    EXPECT_EQ(r.exit_code, 2) << garbage << "\nstderr: " << r.err << "\nstdout: " << r.out;
    EXPECT_NE(r.err.find("--problem"), std::string::npos) << r.err;
  }
  for (const auto& extra :
       std::vector<std::vector<std::string>>{{}, {"--family", "elementwise"}, {"--all"}}) {
    std::vector<std::string> args = {"query", "--db", db, "--problem",
                                     "op=copy; n=1024;dtype=f32;align=16"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("align=16;dtype=f32;n=1024;op=copy"), std::string::npos)
        << joined(args) << r.out;
  }
  auto other = run_cli({"query", "--db", db, "--problem", "align=16;dtype=f32;n=2048;op=copy"});
  EXPECT_EQ(other.exit_code, 0);
  EXPECT_NE(other.out.find("no tuned results"), std::string::npos) << other.out;
}

// ---- 14. failed commands create nothing ----

TEST(Hardening, AFailedImportOrMergeCreatesNoDatabase) {
  TempDir dir;
  const std::string target = dir.file("new") + "/t.db";
  const std::string bad_json = dir.file("bad.json"), good = dir.file("good.db");
  std::ofstream(bad_json) << R"({"format": "ktune-results", "version": 1, "results": [1]})";
  make_ktune_db(good);
  sql(good, "UPDATE results SET config='NOPE=1'");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"db", "import", bad_json, "--db", target},
           {"db", "import", dir.file("missing.json"), "--db", target},
           {"db", "merge", dir.file("missing.db"), "--db", target},
           {"db", "merge", good, "--db", target}}) {
    auto r = run_cli(args);
    EXPECT_NE(r.exit_code, 0) << joined(args);
    EXPECT_FALSE(fs::exists(target)) << joined(args);
    EXPECT_FALSE(fs::exists(target + "-wal")) << joined(args);
  }
}

// ---- 15. smaller ones ----

TEST(Hardening, AFileSizeLimitIsReportedNotASignal) {
  TempDir dir;
  const std::string json = dir.file("p.json");
  std::ofstream(json) << preset_file();
  auto r = run_cli({"db", "import", json, "--db", dir.file("t.db")}, "ulimit -f 16;");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("file size limit"), std::string::npos) << r.err;
}

TEST(Hardening, AReadOnlyQueryOnAFullFilesystemSaysDiskFull) {
  TempDir dir;
  const std::string db = dir.file("t.db");
  make_ktune_db(db);
  // A private 192 KiB tmpfs, filled up, with the database (in WAL mode, needing its -shm) in it.
  const std::string script = "unshare -m sh -c 'mount -t tmpfs -o size=192k tmpfs " +
                             dir.path().string() + "/m && cp " + db + " " + dir.path().string() +
                             "/m/t.db && (dd if=/dev/zero of=" + dir.path().string() +
                             "/m/fill bs=4k count=1000 2>/dev/null; true) && exec \"$0\" \"$@\"'";
  fs::create_directory(dir.path() / "m");
  if (system(("unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs " + dir.path().string() +
              "/m' 2>/dev/null")
                 .c_str()) != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs unshare and mount permission)";
  auto r = run_cli({"query", "--db", dir.path().string() + "/m/t.db"}, script);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("disk full"), std::string::npos) << r.err;
}

TEST(Hardening, AnUnknownOptionIsNamed) {
  for (const char* option : {"--bogus", "-x"}) {
    auto r = run_cli({option});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
  }
  auto none = run_cli({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("a command is required"), std::string::npos) << none.err;
}

// ---- what a newcomer met ----

TEST(Newcomer, AFreshMachineSeesTheShippedResultsWithoutCreatingADatabase) {
  TempDir dir;
  const std::string env = "env -u KTUNE_DB -u XDG_CACHE_HOME HOME=" + dir.path().string();
  const std::string default_db = dir.file(".cache/ktune/tuning.db");
  auto q = run_cli({"query"}, env);
  EXPECT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("NVIDIA H200"), std::string::npos) << q.out;
  EXPECT_NE(q.err.find("showing the shipped results"), std::string::npos) << q.err;
  auto e = run_cli({"db", "export"}, env);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_GT(nlohmann::json::parse(e.out)["results"].size(), 10u);
  // explain for a GPU named as the presets know it, and for an architecture, without a GPU.
  // explained: the answer of a run that must exit 0.
  auto explained = [&](const std::string& family, const std::string& key, const std::string& flag,
                       const std::string& value) {
    auto r = run_cli({"explain", family, key, flag, value}, env);
    EXPECT_EQ(r.exit_code, 0) << family << " " << key << "\n" << r.err;
    return r.out;
  };
  const std::string copy = "align=16;dtype=f32;n=268435456;op=copy";
  const std::string by_gpu = explained("elementwise", copy, "--gpu", "NVIDIA H200");
  EXPECT_NE(by_gpu.find("exact"), std::string::npos) << by_gpu;
  EXPECT_NE(by_gpu.find("lookup time"), std::string::npos) << by_gpu;
  const std::string by_arch = explained("elementwise", copy, "--arch", "sm_90");
  EXPECT_NE(by_arch.find("same-arch"), std::string::npos) << by_arch;
  const std::string other_arch = explained("elementwise", copy, "--arch", "sm_80");
  EXPECT_NE(other_arch.find("default"), std::string::npos) << other_arch;
  // A GEMM call the runtime sends to a skinny family: the answer says so and where to look.
  const std::string matvec = "align=4;dtype=f32;k=4096;m=4096;n=1;op=nn";
  const std::string routed = explained("gemm", matvec, "--arch", "sm_90");
  EXPECT_NE(routed.find("runs this call on gemm_skinny"), std::string::npos) << routed;
  const std::string skinny = explained("gemm_skinny", matvec, "--arch", "sm_90");
  EXPECT_EQ(skinny.find("note:"), std::string::npos) << skinny;
  const std::string bf16 = "align=8;batch=1;dtype=bf16;k=4096;m=4096;op=nn;out=bf16";
  const std::string tc = explained("gemm_tc", bf16 + ";n=1", "--arch", "sm_90");
  EXPECT_NE(tc.find("runs this call on gemm_tc_skinny"), std::string::npos) << tc;
  const std::string tiles = explained("gemm_tc", bf16 + ";n=5", "--arch", "sm_90");
  EXPECT_EQ(tiles.find("note:"), std::string::npos) << tiles;
  auto unknown = run_cli({"explain", "elementwise", copy, "--gpu", "NVIDIA B200"}, env);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("NVIDIA H200"), std::string::npos) << unknown.err;  // what it knows
  EXPECT_FALSE(fs::exists(dir.file(".cache")));
}

// explain --gpu answers as the runtime on that GPU would: its model is given the memory the
// shipped results record for the GPU (an H200's 3201 MHz and 6016 bits, 4.81 TB/s). Before v7 it
// took an H100's 3.35 TB/s, and answered 98 of 610 GEMM shapes otherwise than the runtime on an
// H200 (the shapes and the runtime's answers there: bench/results/2026-11-28_h200_explain_*).
TEST(Newcomer, ExplainForAGpuByNameUsesTheMemoryTheDatabaseRecordsOfIt) {
  TempDir dir;
  const std::string env = "env -u KTUNE_DB -u XDG_CACHE_HOME HOME=" + dir.path().string();
  // A short k: the time is the memory's, so the bandwidth shows in the prediction. (k = 13 tn was
  // one until the small-k f32 winners were shipped: measured, such kernels write C slower than
  // the memory could, and the model now predicts that shape's loop above the memory's time.)
  const std::string key = "align=4;dtype=f32;k=8;m=15699;n=17375;op=nn";
  auto r = run_cli({"explain", "gemm", key, "--gpu", "NVIDIA H200"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3201 MHz, 6016-bit bus (4.81 TB/s), as the database records this GPU"),
            std::string::npos)
      << r.out;
  auto shipped = shipped_database();
  std::optional<DeviceRecord> h200;
  for (const DeviceRecord& d : shipped->devices())
    if (d.name == "NVIDIA H200") h200 = d;
  ASSERT_TRUE(h200);
  DeviceInfo device;
  device.name = h200->name;
  device.limits = DeviceLimits::for_arch(9, 0);
  device.limits.sm_count = h200->sm_count;
  const Family& gemm = find_family("gemm");
  const Problem problem = gemm.parse_problem(key);
  const LookupResult without = lookup_config(shipped.get(), device, gemm, problem);
  device.memory_clock_khz = h200->memory_clock_khz;
  device.memory_bus_bits = h200->memory_bus_bits;
  const LookupResult with = lookup_config(shipped.get(), device, gemm, problem);
  ASSERT_EQ(with.step, LookupStep::kPredicted);
  ASSERT_TRUE(with.predicted_ms && without.predicted_ms);
  EXPECT_GT(*without.predicted_ms, *with.predicted_ms * 1.1);  // the shape is the memory's
  EXPECT_NE(r.out.find("config         " + to_string(with.config) + "\n"), std::string::npos)
      << r.out;
  std::ostringstream predicted;
  predicted << std::fixed << std::setprecision(4) << *with.predicted_ms << " ms on this problem";
  EXPECT_NE(r.out.find(predicted.str()), std::string::npos) << predicted.str() << "\n" << r.out;
  // A GPU the database knows without its memory: said, and answered all the same.
  const std::string path = dir.file("h100.db");
  {
    Database db(path);
    ResultRecord row;
    DeviceInfo h100 = device;
    h100.name = "NVIDIA H100 80GB HBM3";
    h100.memory_clock_khz = 0;
    h100.memory_bus_bits = 0;
    row.device_id = db.ensure_device(h100);
    row.family = "gemm";
    row.template_hash = gemm.template_hash();
    row.problem = "align=4;dtype=f32;k=1024;m=1024;n=1024;op=nn";
    row.config = to_string(gemm.default_config(gemm.parse_problem(row.problem), device.limits));
    row.status = status::kOk;
    row.time_min_ms = row.time_median_ms = row.time_max_ms = 0.1;
    row.repeats = 5;
    row.metric = 21.0;
    row.unit = "TFLOPS";
    db.put_result(row);
  }
  auto unknown = run_cli({"explain", "gemm", key, "--gpu", "NVIDIA H100 80GB HBM3", "--db", path});
  ASSERT_EQ(unknown.exit_code, 0) << unknown.err;
  EXPECT_NE(unknown.out.find("not recorded for this GPU"), std::string::npos) << unknown.out;
}

// `ktune explain --candidates N` lists the first N of the model's ranking (8 without it, every one
// with 0), fastest first, the answer first: what an analysis of the ranking against measurements
// reads (docs/GEMM.md).
TEST(Newcomer, ExplainListsAsManyRankedCandidatesAsAsked) {
  TempDir dir;
  const std::string env = "env -u KTUNE_DB -u XDG_CACHE_HOME HOME=" + dir.path().string();
  const std::string key = "align=4;dtype=f32;k=91;m=2394;n=1364;op=nn";
  // The predicted-ms column of the ranked rows (the lines after the ranking's header), in order.
  auto ranked = [](const std::string& out) {
    std::vector<std::pair<double, std::string>> rows;
    std::istringstream in(out.substr(out.find("candidates ranked by the model")));
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string first, last, field;
      fields >> first;
      while (fields >> field) last = field;
      if (!first.empty() && std::isdigit(static_cast<unsigned char>(first[0])) &&
          last.find("BM=") != std::string::npos)
        rows.emplace_back(std::stod(first), last);
    }
    return rows;
  };
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"explain", "gemm", key, "--gpu", "NVIDIA H200"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_cli(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string by_default = run({}), three = run({"--candidates", "3"}),
                    every = run({"--candidates", "0"});
  const auto all = ranked(every);
  EXPECT_EQ(ranked(by_default).size(), 8u);
  ASSERT_EQ(ranked(three).size(), 3u);
  ASSERT_GT(all.size(), 8u) << every;
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(ranked(three)[i], all[i]);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1].first, all[i].first);
  EXPECT_NE(every.find("config         " + all.front().second + "\n"), std::string::npos) << every;
  // Not a count: refused as a usage error, nothing answered.
  EXPECT_EQ(run_cli({"explain", "gemm", key, "--gpu", "NVIDIA H200", "--candidates", "-1"}, env)
                .exit_code,
            2);
}

TEST(Newcomer, AReadOnlyCacheFolderStillGivesTheRuntimeTheShippedResults) {
  // /proc takes no new files, for root too.
  std::vector<std::string> warnings;
  auto db = open_for_runtime("/proc/ktune-test/tuning.db", false,
                             [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_TRUE(db);
  EXPECT_TRUE(db->in_memory());
  const auto rows = db->results({});
  EXPECT_FALSE(rows.empty());
  for (const auto& r : rows) EXPECT_EQ(r.origin, "shipped");
}

TEST(Newcomer, VersionHasTheProjectVersionAndTheMacrosAgree) {
  auto r = run_cli({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind(KTUNE_VERSION_STRING, 0), 0u) << r.out;
  EXPECT_NE(std::string(KTUNE_VERSION_STRING), "dev");
  EXPECT_EQ(std::string(version_text()).rfind(KTUNE_VERSION_STRING, 0), 0u);
  EXPECT_EQ(KTUNE_VERSION_NUMBER,
            KTUNE_VERSION_MAJOR * 10000 + KTUNE_VERSION_MINOR * 100 + KTUNE_VERSION_PATCH);
}

// A benchmark CSV names the commit of the code that ran: the build's own, not $KTUNE_COMMIT, which
// one call exports for every binary it runs (two builds of an A/B wrote one commit, and their rows
// had to be relabelled by hand: bench/results/README.md, 2026-11-27 and 2026-12-06).
TEST(Newcomer, BenchCsvNamesTheBuildsOwnCommit) {
  const char* before = std::getenv("KTUNE_COMMIT");
  const std::string saved = before ? before : "";
  ::setenv("KTUNE_COMMIT", "another-build", 1);
  const std::string built = build_commit();
  EXPECT_EQ(cli::csv_commit(), built.empty() ? "another-build" : built);
  if (!built.empty()) {
    EXPECT_NE(std::string(version_text()).find(built), std::string::npos) << version_text();
  }
  ::unsetenv("KTUNE_COMMIT");
  EXPECT_EQ(cli::csv_commit(), built.empty() ? "unknown" : built);
  if (before) ::setenv("KTUNE_COMMIT", saved.c_str(), 1);
}

TEST(Newcomer, LongWorkPrintsProgressInALogAndQuietSilencesIt) {
  TempDir dir;
  std::int64_t run = 0;
  {
    Database db(dir.file("rec.db"));
    run = testing::record_synthetic(db, "align=16;dtype=f32;n=1048576;op=copy");
  }
  auto tune = run_cli({"tune", "--db", dir.file("t.db"), "--replay-from", dir.file("rec.db"),
                       "--replay", std::to_string(run), "--max-evals", "20"},
                      "KTUNE_PROGRESS_INTERVAL=0");
  EXPECT_EQ(tune.exit_code, 0) << tune.err;
  EXPECT_NE(tune.err.find("[20/20]"), std::string::npos) << tune.err;  // plain lines in a log
  EXPECT_EQ(tune.err.find("\033[K"), std::string::npos);               // no terminal codes
  auto check = run_cli({"check", "--family", "elementwise"}, "KTUNE_PROGRESS_INTERVAL=0");
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.err.find("kernels compiled"), std::string::npos) << check.err;
  auto quiet =
      run_cli({"check", "--family", "elementwise", "--quiet"}, "KTUNE_PROGRESS_INTERVAL=0");
  EXPECT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.err, "");
}

TEST(Newcomer, HelpIsWrappedToTheTerminalAndFamiliesListTheTuneOptions) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                {"tune", "--help"},
                                                                {"tune", "gemm", "--help"},
                                                                {"db", "export", "--help"},
                                                                {"bench", "gemm", "--help"},
                                                                {"explain", "--help"}}) {
    auto r = run_cli(args, "COLUMNS=80");
    EXPECT_EQ(r.exit_code, 0) << joined(args);
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line)) EXPECT_LE(line.size(), 100u) << joined(args) << line;
  }
  auto gemm = run_cli({"tune", "gemm", "--help"});
  for (const char* option : {"--max-evals", "--strategy", "--db", "--shape", "--timeout-floor"})
    EXPECT_NE(gemm.out.find(option), std::string::npos) << option;
  // ... and are taken there.
  auto parsed = run_cli({"tune", "gemm", "--max-evals", "x"});
  EXPECT_EQ(parsed.exit_code, 2);
  EXPECT_NE(parsed.err.find("--max-evals"), std::string::npos) << parsed.err;
}

TEST(Newcomer, TablesAlignNumbersRightAndSortProblemsByValue) {
  EXPECT_TRUE(cli::natural_less("k=256", "k=2048"));
  EXPECT_FALSE(cli::natural_less("k=2048", "k=256"));
  EXPECT_TRUE(cli::natural_less("m=9;n=1", "m=10;n=1"));
  EXPECT_TRUE(cli::natural_less("a", "b"));
  EXPECT_FALSE(cli::natural_less("n=007", "n=7"));
  EXPECT_FALSE(cli::natural_less("n=7", "n=007"));
  cli::Table t({"name", "ms", "figure"});
  t.add({"a", "1.5000", "12.3 GB/s"});
  t.add({"bbbbbb", "123.2500", "-"});
  std::ostringstream out;
  t.print(out);
  EXPECT_EQ(out.str(),
            "name          ms     figure\n"
            "------  --------  ---------\n"
            "a         1.5000  12.3 GB/s\n"
            "bbbbbb  123.2500          -\n");
}

TEST(Newcomer, TheJournalIsARollbackJournalWhereWalCannotWork) {
  TempDir dir;
  EXPECT_EQ(network_filesystem(dir.path().string()), "");  // a local folder
  { Database wal(dir.file("wal.db")); }
  EXPECT_EQ(sql_text(dir.file("wal.db"), "PRAGMA journal_mode"), "wal");
  // $KTUNE_DB_JOURNAL stands in for a network filesystem, which CI cannot mount.
  setenv("KTUNE_DB_JOURNAL", "delete", 1);
  {
    Database rollback(dir.file("delete.db"));
    make_ktune_db(dir.file("delete.db"));
  }
  unsetenv("KTUNE_DB_JOURNAL");
  EXPECT_EQ(sql_text(dir.file("delete.db"), "PRAGMA journal_mode"), "delete");
  auto bad = run_cli({"query", "--db", dir.file("wal.db")}, "KTUNE_DB_JOURNAL=nfs");
  EXPECT_EQ(bad.exit_code, 0);  // reading opens no journal of its own
  auto bad_write =
      run_cli({"db", "prune", "--stale", "--db", dir.file("wal.db")}, "KTUNE_DB_JOURNAL=nfs");
  EXPECT_EQ(bad_write.exit_code, 2) << bad_write.err;
  EXPECT_NE(bad_write.err.find("KTUNE_DB_JOURNAL"), std::string::npos) << bad_write.err;
}

}  // namespace
}  // namespace ktune
