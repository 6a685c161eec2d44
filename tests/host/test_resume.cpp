// Host tests: a tuning run killed with SIGKILL at a random moment loses nothing committed, its
// candidate in flight is recorded as crashed, and the same command resumes where it stopped.
// Measurements are replayed from a synthetic recording (no GPU; the loop and database are real).
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "db/exchange.hpp"
#include "families/registry.hpp"
#include "run_cli.hpp"
#include "synthetic_recording.hpp"
#include "temp_dir.hpp"
#include "tests/ktune_cli.hpp"
#include "tuner/replay.hpp"
#include "tuner/tuner.hpp"

extern char** environ;

namespace ktune {
namespace {

// Rows and their statuses, read with the plain SQLite API (as another process would).
struct Counts {
  long long rows = 0, in_flight = 0, crashed = 0, unreadable = 0, running_runs = 0,
            aborted_runs = 0;
  std::string integrity;
};

Counts count(const std::string& path) {
  Counts c;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    c.unreadable = 1;
    return c;
  }
  sqlite3_busy_timeout(db, 5000);
  auto scalar = [&](const char* sql) -> std::string {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
  };
  auto number = [&](const char* sql) {
    const std::string v = scalar(sql);
    return v.empty() ? 0LL : std::stoll(v);
  };
  c.rows = number("SELECT count(*) FROM results");
  c.in_flight = number("SELECT count(*) FROM results WHERE status = 'in_flight'");
  c.crashed = number("SELECT count(*) FROM results WHERE status = 'crashed'");
  c.running_runs = number("SELECT count(*) FROM runs WHERE status = 'running'");
  c.aborted_runs = number("SELECT count(*) FROM runs WHERE status = 'aborted'");
  c.integrity = scalar("PRAGMA integrity_check");
  sqlite3_close(db);
  return c;
}

constexpr const char* kCopy = "align=16;dtype=f32;n=1048576;op=copy";

// A synthetic recording of the copy problem, in `dir`/rec.db, loaded into memory.
Recording copy_recording(const testing::TempDir& dir) {
  Database source(dir.file("rec.db"));
  return load_recording(source, testing::record_synthetic(source, kCopy));
}

TEST(Resume, KilledWithSigkillMidRunThenResumed) {
  testing::TempDir dir;
  const std::string recording = dir.file("rec.db"), target = dir.file("out.db");
  const std::string key = "align=16;dtype=f32;n=1048576;op=copy";
  std::int64_t run = 0;
  std::size_t space_size = 0;
  {
    Database rec(recording);
    run = testing::record_synthetic(rec, key);
    space_size = SearchSpace(find_family("elementwise"), Problem::parse("elementwise", key),
                             DeviceLimits::for_arch(9, 0))
                     .size();
  }
  std::vector<std::string> args = {testing::ktune_cli().c_str(),
                                   "tune",
                                   "--db",
                                   target,
                                   "--replay-from",
                                   recording,
                                   "--replay",
                                   std::to_string(run),
                                   "--strategy",
                                   "exhaustive",
                                   "--max-evals",
                                   "0",
                                   "--replay-delay-ms",
                                   "3"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  // Kill the first run at a few hundred candidates, while it is writing.
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, testing::ktune_cli().c_str(), nullptr, nullptr, argv.data(), environ),
            0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline && count(target).rows < 300)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";

  const Counts killed = count(target);
  EXPECT_EQ(killed.integrity, "ok");
  EXPECT_GE(killed.rows, 300);
  EXPECT_LT(killed.rows, static_cast<long long>(space_size));
  EXPECT_LE(killed.in_flight, 1);  // at most the candidate that was running
  EXPECT_EQ(killed.running_runs, 1);

  // The same command resumes: the candidate in flight is recorded as crashed, not retried, and
  // everything else of the space is evaluated exactly once.
  auto resumed =
      testing::run_cli({"tune", "--db", target, "--replay-from", recording, "--replay",
                        std::to_string(run), "--strategy", "exhaustive", "--max-evals", "0"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("from earlier runs"), std::string::npos) << resumed.out;
  const Counts done = count(target);
  EXPECT_EQ(done.integrity, "ok");
  EXPECT_EQ(done.rows, static_cast<long long>(space_size));
  EXPECT_EQ(done.in_flight, 0);
  EXPECT_EQ(done.crashed, killed.in_flight);
  // The killed run is closed as aborted; the resumed one completed.
  EXPECT_EQ(done.running_runs, 0);
  EXPECT_EQ(done.aborted_runs, 1);
}

// The "no improvement in N" budget: the run stops exactly N evaluations after the last new best
// that was 0.5% faster, and says so.
TEST(Budgets, PatienceStopsAfterNEvaluationsWithoutImprovement) {
  testing::TempDir dir;
  const std::string key = kCopy;
  const Recording rec = copy_recording(dir);
  Database db(dir.file("run.db"));
  auto runner = make_replay_runner(rec, 0);
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = 0;
  o.patience = 25;
  o.progress = false;
  const TuneSummary s =
      tune(db, *runner, find_family("elementwise"), Problem::parse("elementwise", key), o);
  EXPECT_EQ(s.stop_reason, "no improvement in 25 evaluations");
  ASSERT_LT(s.evaluated, rec.space.size());
  ResultFilter f;
  f.run_id = s.run_id;
  auto rows = db.results(f);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  ASSERT_EQ(rows.size(), s.evaluated);
  std::size_t last_improvement = 0;
  double best = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].status != status::kOk) continue;
    if (best == 0 || rows[i].time_median_ms < best * 0.995) last_improvement = i + 1;
    if (best == 0 || rows[i].time_median_ms < best) best = rows[i].time_median_ms;
  }
  EXPECT_EQ(s.evaluated, last_improvement + 25);
}

// The summary counts the run's failures by status, as its rows in the database record them, and
// says so in one phrase ("N failed: A invalid, B wrong_result", most first).
TEST(Budgets, TheSummaryCountsFailuresByTheirRowsStatus) {
  testing::TempDir dir;
  const Recording rec = copy_recording(dir);
  Database db(dir.file("run.db"));
  auto runner = make_replay_runner(rec, 0);
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = 0;  // the whole space: the recording's failures with it
  o.progress = false;
  const TuneSummary s =
      tune(db, *runner, find_family("elementwise"), Problem::parse("elementwise", kCopy), o);
  ResultFilter f;
  f.run_id = s.run_id;
  std::map<std::string, std::size_t> want;
  for (const ResultRecord& r : db.results(f))
    if (r.status != status::kOk) ++want[r.status];
  ASSERT_FALSE(want.empty()) << "the recording has no failure to count";
  EXPECT_EQ(s.failed_by_status, want);
  std::size_t sum = 0;
  for (const auto& [st, n] : want) sum += n;
  EXPECT_EQ(s.failed, sum);
  // Most first; every status named once with its count.
  std::vector<std::pair<std::size_t, std::string>> order;
  for (const auto& [st, n] : want) order.push_back({n, st});
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = std::to_string(sum) + " failed";
  for (std::size_t i = 0; i < order.size(); ++i)
    text += (i ? ", " : ": ") + std::to_string(order[i].first) + " " + order[i].second;
  EXPECT_EQ(failed_text(s), text);

  TuneSummary none;
  EXPECT_EQ(failed_text(none), "0 failed");
}

// A configuration the strategy is unlikely to propose first: the space's last one that the
// recording measured as correct.
std::string last_correct_config(const Recording& rec) {
  for (std::size_t i = rec.space.size(); i-- > 0;)
    if (rec.time_ms[i]) return to_string(rec.space.at(i));
  return {};
}

// An ok row of `config` for `key` on an H200, under `hash`.
ResultRecord h200_row(Database& db, const std::string& key, const std::string& config,
                      const std::string& hash) {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.limits = DeviceLimits::for_arch(9, 0);
  d.limits.sm_count = 132;
  ResultRecord r;
  r.device_id = db.ensure_device(d);
  r.family = "elementwise";
  r.template_hash = hash;
  r.problem = key;
  r.config = config;
  r.status = "ok";
  r.time_median_ms = r.time_min_ms = r.time_max_ms = 1;
  r.repeats = 10;
  r.metric = 1;
  r.unit = "GB/s";
  return r;
}

// Three random evaluations of `key` on the recording: the first one evaluated must be `first`
// (a seed), measured under the current template.
void expect_evaluated_first(Database& db, const Recording& rec, const std::string& key,
                            const std::string& first) {
  const Family& family = find_family("elementwise");
  auto runner = make_replay_runner(rec, 0);
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = 3;
  o.progress = false;
  o.start_from_lookup = false;  // the seeds of the database's rows only
  const TuneSummary s = tune(db, *runner, family, Problem::parse("elementwise", key), o);
  EXPECT_EQ(s.seeded, 1u);  // one configuration, however many earlier templates measured it
  ResultFilter f;
  f.run_id = s.run_id;
  auto rows = db.results(f);
  ASSERT_EQ(rows.size(), 3u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  EXPECT_EQ(rows[0].config, first);
  EXPECT_EQ(rows[0].template_hash, family.template_hash());
}

// After a template change, re-tuning a problem starts from its winner under the earlier
// template: that configuration is the first one evaluated, ahead of the strategy's proposals.
TEST(Transfer, WinnerUnderAnEarlierTemplateIsEvaluatedFirst) {
  testing::TempDir dir;
  const std::string key = kCopy;
  const Recording rec = copy_recording(dir);
  Database db(dir.file("run.db"));
  const std::string old_winner = last_correct_config(rec);
  ASSERT_FALSE(old_winner.empty());
  for (const char* hash : {"0123456789abcdef", "fedcba9876543210"})
    db.put_result(h200_row(db, key, old_winner, hash));
  expect_evaluated_first(db, rec, key, old_winner);
}

// A shipped preset exported under an earlier template: a new database keeps its winner as a seed
// (never a lookup's answer), and re-tuning the problem evaluates it first.
TEST(Transfer, ShippedWinnerOfAnEarlierTemplateSeedsTheRetune) {
  testing::TempDir dir;
  const std::string key = kCopy;
  const Recording rec = copy_recording(dir);
  const std::string hash = find_family("elementwise").template_hash();
  const std::string old_winner = last_correct_config(rec);
  ASSERT_FALSE(old_winner.empty());
  // The preset: one ok row of this problem, exported, then marked as an older template's.
  Database exporter(dir.file("export.db"));
  exporter.put_result(h200_row(exporter, key, old_winner, hash));
  nlohmann::json doc = nlohmann::json::parse(export_results(exporter, {}).json);
  ASSERT_EQ(doc["results"].size(), 1u);
  doc["results"][0]["template_hash"] = "0123456789abcdef";

  Database db(dir.file("run.db"));
  const PresetSummary p = load_presets(db, {{"h200.json", doc.dump()}});
  EXPECT_EQ(p.loaded, 1u);
  EXPECT_EQ(p.rows, 1u);
  EXPECT_EQ(p.seeds, 1u);
  EXPECT_TRUE(db.best_results("elementwise", hash).empty());  // no lookup answers with it
  EXPECT_EQ(check_database(db).stale, 1);
  expect_evaluated_first(db, rec, key, old_winner);
}

}  // namespace
}  // namespace ktune
