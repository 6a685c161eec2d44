// Host tests: the SQLite database in temporary files (round trip, migrations, bad files).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <latch>
#include <set>
#include <thread>

#include "db/database.hpp"
#include "ktune/error.hpp"
#include "temp_dir.hpp"

namespace ktune {
namespace {

using testing::TempDir;

DeviceInfo fake_device(const std::string& name = "NVIDIA H100 80GB HBM3", int sms = 132) {
  DeviceInfo d;
  d.name = name;
  d.limits.cc_major = 9;
  d.limits.cc_minor = 0;
  d.limits.sm_count = sms;
  d.uuid = "GPU-test";
  d.driver_version = 13000;
  return d;
}

ResultRecord row(std::int64_t device, const std::string& config, double ms,
                 const std::string& st = "ok") {
  ResultRecord r;
  r.device_id = device;
  r.family = "elementwise";
  r.template_hash = "hash1";
  r.problem = "align=16;dtype=f32;n=1024;op=copy";
  r.config = config;
  r.status = st;
  r.time_min_ms = ms * 0.9;
  r.time_median_ms = ms;
  r.time_max_ms = ms * 1.1;
  r.repeats = 20;
  r.metric = 1.0 / ms;
  r.unit = "GB/s";
  return r;
}

TEST(Database, CreatesSchemaInEmptyFileAndDirectory) {
  TempDir dir;
  std::string path = dir.file("nested/dir/tuning.db");
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
  }
  // An existing empty file (0 bytes) is a new database too.
  std::ofstream(dir.file("empty.db")).close();
  Database db2(dir.file("empty.db"));
  EXPECT_EQ(db2.schema_version(), Database::kSchemaVersion);
}

TEST(Database, RoundTripOfDevicesRunsAndResults) {
  TempDir dir;
  std::string path = dir.file("t.db");
  std::int64_t dev = 0, id = 0;
  {
    Database db(path);
    dev = db.ensure_device(fake_device());
    EXPECT_EQ(db.ensure_device(fake_device()), dev);  // same identity, same row
    RunRecord run;
    run.device_id = dev;
    run.family = "elementwise";
    run.template_hash = "hash1";
    run.problem = "p";
    run.strategy = "random";
    run.seed = 7;
    std::int64_t run_id = db.begin_run(run);
    ResultRecord r = row(dev, "A=1", 2.0);
    r.run_id = run_id;
    id = db.mark_in_flight(r);
    r.id = id;
    db.store_result(r);
    db.finish_run(run_id, "completed");
  }
  Database db(path, Database::Mode::kReadOnly);
  auto rows = db.results({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].id, id);
  EXPECT_EQ(rows[0].status, "ok");
  EXPECT_DOUBLE_EQ(rows[0].time_median_ms, 2.0);
  EXPECT_EQ(rows[0].repeats, 20);
  EXPECT_EQ(rows[0].device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(rows[0].device.sm_count, 132);
  auto runs = db.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "completed");
  EXPECT_EQ(runs[0].seed, 7);
}

TEST(Database, BestPerProblemPrefersFastestAndOwnResultsOverShipped) {
  TempDir dir;
  Database db(dir.file("t.db"));
  std::int64_t dev = db.ensure_device(fake_device());
  db.put_result(row(dev, "A=1", 3.0));
  db.put_result(row(dev, "A=2", 2.0));
  db.put_result(row(dev, "A=3", 1.0, "wrong_result"));
  ResultRecord shipped = row(dev, "A=4", 0.5);
  shipped.origin = "shipped";
  db.put_result(shipped);
  auto best = db.best_results("elementwise", "hash1");
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].config, "A=2");  // fastest own ok result; shipped ranks after own
  EXPECT_TRUE(db.best_results("elementwise", "other-hash").empty());  // stale hash not used
}

TEST(Database, InFlightRowsBecomeCrashedAndCountAsEvaluated) {
  TempDir dir;
  Database db(dir.file("t.db"));
  std::int64_t dev = db.ensure_device(fake_device());
  db.mark_in_flight(row(dev, "A=1", 0));
  db.put_result(row(dev, "A=2", 1.0));
  auto evaluated =
      db.evaluated_configs(dev, "elementwise", "hash1", "align=16;dtype=f32;n=1024;op=copy");
  EXPECT_EQ(evaluated, (std::set<std::string>{"A=1", "A=2"}));
  EXPECT_EQ(db.mark_crashed(dev, "elementwise", "hash1", "align=16;dtype=f32;n=1024;op=copy"), 1);
  auto rows = db.results({});
  EXPECT_EQ(rows[0].status, "crashed");
  EXPECT_EQ(rows[1].status, "ok");
}

TEST(Database, BinaryCacheRoundTrip) {
  TempDir dir;
  Database db(dir.file("t.db"));
  CachedBinary b{{'\x7f', 'E', 'L', 'F', '\0', '\1'}, {"_Z1av", "_Z1bv"}, "res"};
  db.put_binary("key1", "sm_90", b);
  auto got = db.find_binary("key1");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->cubin, b.cubin);
  EXPECT_EQ(got->lowered_names, b.lowered_names);
  EXPECT_FALSE(db.find_binary("other"));
  EXPECT_EQ(db.binary_count(), 1);
}

void expect_db_error(const std::string& path, const std::string& fragment) {
  try {
    Database db(path);
    FAIL() << "opened " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDatabase);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Database, NotADatabaseIsAClearErrorAndTheFileIsUntouched) {
  TempDir dir;
  std::string path = dir.file("notes.txt");
  std::string text(8192, 'x');
  std::ofstream(path) << text;
  expect_db_error(path, "not a SQLite database");
  std::ifstream in(path);
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, text);
}

TEST(Database, ForeignSqliteFileIsRejected) {
  TempDir dir;
  std::string path = dir.file("other.db");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "CREATE TABLE accounts(id INTEGER)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  expect_db_error(path, "another application");
}

TEST(Database, NewerSchemaIsRejected) {
  TempDir dir;
  std::string path = dir.file("new.db");
  { Database db(path); }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  expect_db_error(path, "newer");
}

// The table of measured problems follows every kind of write: a new ok row, a failed one, an
// in-flight row finished ok or marked crashed, an upsert that turns an ok row into a failure, a
// merge from elsewhere, and a prune that deletes rows.
TEST(Database, MeasuredProblemsFollowEveryWrite) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  Database db(path);
  const std::int64_t dev = db.ensure_device(fake_device());
  auto at = [&](const std::string& problem, const std::string& config, double ms,
                const std::string& st = "ok") {
    ResultRecord r = row(dev, config, ms, st);
    r.problem = problem;
    return r;
  };
  auto expect_listed = [&](const std::vector<std::string>& want) {
    EXPECT_EQ(db.measured_problems("elementwise", "hash1"), want);
    std::set<std::string> ok;  // what the rows themselves say
    for (const ResultRecord& r : db.results({}))
      if (r.family == "elementwise" && r.template_hash == "hash1" && r.status == "ok")
        ok.insert(r.problem);
    EXPECT_EQ(std::vector<std::string>(ok.begin(), ok.end()), want);
  };
  expect_listed({});
  db.put_result(at("n=1", "A=1", 1.0));
  db.put_result(at("n=1", "A=2", 2.0));
  db.put_result(at("n=2", "A=1", 0, "failed"));
  expect_listed({"n=1"});
  db.mark_in_flight(at("n=2", "A=2", 0));
  expect_listed({"n=1"});
  db.put_result(at("n=2", "A=2", 1.5));  // the in-flight row finished
  expect_listed({"n=1", "n=2"});
  db.mark_in_flight(at("n=3", "A=1", 0));
  EXPECT_EQ(db.mark_crashed(dev, "elementwise", "hash1", "n=3"), 1);
  expect_listed({"n=1", "n=2"});
  db.put_result(at("n=2", "A=2", 0, "failed"));  // its one ok row, now failed
  expect_listed({"n=1"});
  db.put_result(at("n=1", "A=1", 0, "failed"));  // n=1 keeps A=2
  expect_listed({"n=1"});
  ResultRecord other = at("n=4", "A=1", 1.0);
  other.device = DeviceRecord{0, "NVIDIA H200", 9, 0, 132, "", 0};
  other.origin = "imported";
  EXPECT_EQ(db.merge_results({other}).added, 1u);
  expect_listed({"n=1", "n=4"});
  db.prune_stale({{"elementwise", "hash2"}});
  expect_listed({});
  // ktune db check compares the table with the rows.
  ResultRecord back = at("n=5", "A=1", 1.0);
  back.template_hash = "hash2";
  db.put_result(back);
  EXPECT_NO_THROW(db.check());
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "DELETE FROM measured_problems", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  try {
    db.check();
    ADD_FAILURE() << "check passed a stale table";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("measured_problems lacks 1"), std::string::npos)
        << e.what();
  }
}

// A file of schema v4 gets the table, filled from its rows, when it opens for writing.
TEST(Database, AVersion4FileGetsTheTableOfMeasuredProblems) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  {
    Database db(path);
    const std::int64_t dev = db.ensure_device(fake_device());
    db.put_result(row(dev, "A=1", 1.0));
    ResultRecord r = row(dev, "A=1", 0, "failed");
    r.problem = "n=9";
    db.put_result(r);
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "DROP TRIGGER measured_problems_insert; DROP TRIGGER "
                         "measured_problems_update; DROP TRIGGER measured_problems_delete; "
                         "DROP TABLE measured_problems; DROP INDEX results_measured; "
                         "CREATE INDEX results_by_problem ON results(family, template_hash, "
                         "problem, status); ALTER TABLE devices DROP COLUMN memory_bus_bits; "
                         "PRAGMA user_version=4",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  {
    Database old(path, Database::Mode::kReadOnly);  // read as it is: through the index
    EXPECT_EQ(old.schema_version(), 4);
    EXPECT_EQ(old.measured_problems("elementwise", "hash1"),
              std::vector<std::string>{"align=16;dtype=f32;n=1024;op=copy"});
  }
  Database db(path);
  EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
  EXPECT_EQ(db.measured_problems("elementwise", "hash1"),
            std::vector<std::string>{"align=16;dtype=f32;n=1024;op=copy"});
}

// Schema v6: the predicted step's read of a problem's rows is covered by the problem's index
// (no table page per row). A v5 file reads through its old index read-only, and gets the new one
// when it opens for writing.
TEST(Database, AVersion5FileGetsTheCoveringIndexOfMeasurements) {
  TempDir dir;
  const std::string path = dir.file("v5.db");
  // The query plan of Database::measurements' query, then the results' indexes.
  auto plan_and_indexes = [&] {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
    std::string out;
    for (const auto& [sql, column] : std::vector<std::pair<const char*, int>>{
             {"EXPLAIN QUERY PLAN SELECT id, device_id, config, time_median_ms, metric, unit, "
              "origin FROM results WHERE family = 'f' AND template_hash = 'h' AND problem = 'p' "
              "AND status = 'ok' ORDER BY id",
              3},
             {"SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'results_%'",
              0}}) {
      sqlite3_stmt* q = nullptr;
      sqlite3_prepare_v2(h, sql, -1, &q, nullptr);
      while (sqlite3_step(q) == SQLITE_ROW)
        out += reinterpret_cast<const char*>(sqlite3_column_text(q, column)) + std::string("; ");
      sqlite3_finalize(q);
    }
    sqlite3_close(h);
    return out;
  };
  {
    Database db(path);
    const std::int64_t dev = db.ensure_device(fake_device());
    db.put_result(row(dev, "A=2", 2.0));  // first: the rows come in the order they were written
    db.put_result(row(dev, "A=1", 1.0));
  }
  EXPECT_NE(plan_and_indexes().find("USING COVERING INDEX results_measured"), std::string::npos)
      << plan_and_indexes();
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "DROP INDEX results_measured; CREATE INDEX results_by_problem ON "
                         "results(family, template_hash, problem, status); ALTER TABLE devices "
                         "DROP COLUMN memory_bus_bits; PRAGMA user_version=5",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  const std::string problem = row(0, "A=1", 1.0).problem;
  {
    Database old(path, Database::Mode::kReadOnly);  // read as it is: through the old index
    EXPECT_EQ(old.schema_version(), 5);
    EXPECT_EQ(old.measurements("elementwise", "hash1", {problem}).rows.size(), 2u);
  }
  EXPECT_EQ(plan_and_indexes().find("COVERING"), std::string::npos) << plan_and_indexes();
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
    const Measurements m = db.measurements("elementwise", "hash1", {problem});
    ASSERT_EQ(m.rows.size(), 2u);
    EXPECT_EQ(m.rows[0].config, "A=2");
    EXPECT_EQ(m.rows[1].config, "A=1");
    EXPECT_EQ(m.rows[1].time_median_ms, 1.0);
  }
  const std::string after = plan_and_indexes();
  EXPECT_NE(after.find("USING COVERING INDEX results_measured"), std::string::npos) << after;
  EXPECT_EQ(after.find("TEMP B-TREE"), std::string::npos) << after;  // in id order already
  EXPECT_EQ(after.find("results_by_problem"), std::string::npos) << after;
}

TEST(Database, ReadOnlyModeOnMissingFileIsAnError) {
  TempDir dir;
  EXPECT_THROW(Database(dir.file("missing.db"), Database::Mode::kReadOnly), Error);
}

// v7: the memory's bus width beside its clock, so that a lookup without the GPU (ktune explain
// --gpu) knows its bandwidth. A v6 file read as it is has no bus width; migrated, its device rows
// take the memory of the GPU that next records them, and a known memory is never overwritten.
TEST(Database, AVersion6FileGetsTheMemoryBusWidthOfItsDevices) {
  TempDir dir;
  const std::string path = dir.file("v6.db");
  DeviceInfo h200 = fake_device("NVIDIA H200");
  h200.memory_clock_khz = 3201000;
  h200.memory_bus_bits = 6016;
  {
    Database db(path);
    db.put_result(row(db.ensure_device(h200), "A=1", 1.0));
    ASSERT_EQ(db.devices().size(), 1u);
    EXPECT_EQ(db.devices()[0].memory_clock_khz, 3201000);
    EXPECT_EQ(db.devices()[0].memory_bus_bits, 6016);
    EXPECT_EQ(db.results({}).at(0).device.memory_bus_bits, 6016);
    // The lookup's read of measurements knows each one's memory too (a model carrying a
    // measurement to another GPU reads the bandwidth of the GPU that timed it).
    const Measurements m = db.measurements("elementwise", "hash1", {row(0, "A=1", 1.0).problem});
    ASSERT_EQ(m.rows.size(), 1u);
    EXPECT_EQ(m.rows[0].device->memory_clock_khz, 3201000);
    EXPECT_EQ(m.rows[0].device->memory_bus_bits, 6016);
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(h, "ALTER TABLE devices DROP COLUMN memory_bus_bits; PRAGMA user_version=6",
                   nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(h);
  {
    Database old(path, Database::Mode::kReadOnly);  // read as it is
    EXPECT_EQ(old.schema_version(), 6);
    ASSERT_EQ(old.devices().size(), 1u);
    EXPECT_EQ(old.devices()[0].memory_clock_khz, 3201000);  // a column since v1
    EXPECT_EQ(old.devices()[0].memory_bus_bits, 0);         // not known
    const auto rows = old.results({});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].device.memory_bus_bits, 0);
    EXPECT_EQ(rows[0].config, "A=1");
    const Measurements m = old.measurements("elementwise", "hash1", {rows[0].problem});
    ASSERT_EQ(m.rows.size(), 1u);
    EXPECT_EQ(m.rows[0].device->memory_clock_khz, 3201000);
    EXPECT_EQ(m.rows[0].device->memory_bus_bits, 0);
  }
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
    EXPECT_EQ(db.devices().at(0).memory_bus_bits, 0);
    const std::int64_t id = db.ensure_device(h200);  // the GPU, measured again
    ASSERT_EQ(db.devices().size(), 1u);
    EXPECT_EQ(db.devices()[0].id, id);
    EXPECT_EQ(db.devices()[0].memory_bus_bits, 6016);
    DeviceInfo other = h200;  // another reading of one identity never rewrites a known memory
    other.memory_clock_khz = 2619000;
    other.memory_bus_bits = 5120;
    EXPECT_EQ(db.ensure_device(other), id);
    EXPECT_EQ(db.devices()[0].memory_clock_khz, 3201000);
    EXPECT_EQ(db.devices()[0].memory_bus_bits, 6016);
    EXPECT_EQ(db.results({}).at(0).device.memory_clock_khz, 3201000);
  }
}

// Connections opening one new file at once: each checks the file's identity while another may be
// creating the schema. None may take the half-seen file for a foreign or damaged one (CI once
// saw "has tables but no schema version" from four tuners starting on one new database).
TEST(Database, ConnectionsOpeningOneNewFileAtOnceAllSucceed) {
  TempDir dir;
  constexpr int kThreads = 8, kFiles = 20;
  for (int f = 0; f < kFiles; ++f) {
    const std::string path = dir.file("race" + std::to_string(f) + ".db");
    std::latch start(kThreads);
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          Database db(path);
          if (db.schema_version() != Database::kSchemaVersion) errors[t] = "old schema";
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(errors[t], "") << "file " << f << ", connection " << t;
  }
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

// A candidate in flight in another live process (another GPU's worker of the same kind, or a
// second `ktune tune`) is not declared crashed; once that process is killed, it is.
TEST(Database, InFlightRowsOfALiveProcessAreNotCrashed) {
  testing::TempDir dir;
  const std::string path = dir.file("live.db");
  DeviceInfo gpu;
  gpu.name = "NVIDIA H200";
  gpu.limits = DeviceLimits::for_arch(9, 0);
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    Database db(path);
    RunRecord run;
    run.device_id = db.ensure_device(gpu);
    run.family = "elementwise";
    run.template_hash = "h";
    run.problem = "p";
    run.strategy = "random";
    ResultRecord r;
    r.run_id = db.begin_run(run);
    r.device_id = run.device_id;
    r.family = "elementwise";
    r.template_hash = "h";
    r.problem = "p";
    r.config = "BLOCK=256";
    db.mark_in_flight(r);
    [[maybe_unused]] auto n = write(ready[1], "x", 1);
    pause();  // "measuring" until killed
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  Database db(path);
  const std::int64_t device = db.ensure_device(gpu);
  EXPECT_EQ(db.mark_crashed(device, "elementwise", "h", "p"), 0) << "the child is alive";
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(db.mark_crashed(device, "elementwise", "h", "p"), 1) << "the child is gone";
}

}  // namespace
}  // namespace ktune
