// Host tests: schema migrations (v1 -> current), JSON export/import (malformed and hostile input),
// merge, prune, check, shipped presets and the ktune db commands, on real SQLite files in temporary
// directories.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/util.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "run_cli.hpp"
#include "temp_dir.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

using testing::run_cli;
using testing::TempDir;
namespace fs = std::filesystem;

// ---- fixtures: devices, valid configurations of real families, rows ----

DeviceInfo device(const std::string& name, int major, int minor, int sms) {
  DeviceInfo d;
  d.name = name;
  d.limits = DeviceLimits::for_arch(major, minor);
  d.limits.sm_count = sms;
  d.uuid = "GPU-" + name;
  d.driver_version = 13000;
  return d;
}
const DeviceInfo kH100 = device("NVIDIA H100 80GB HBM3", 9, 0, 132);
const DeviceInfo kH200 = [] {
  DeviceInfo d = device("NVIDIA H200", 9, 0, 132);
  d.memory_clock_khz = 3201000;  // as an H200's driver gives them
  d.memory_bus_bits = 6016;
  return d;
}();
const DeviceInfo kA100 = device("NVIDIA A100-SXM4-80GB", 8, 0, 108);

const Family& ew() { return find_family("elementwise"); }
const Family& gemm() { return find_family("gemm"); }
const char* const kCopy = "align=16;dtype=f32;n=1048576;op=copy";
const char* const kAdd = "align=16;dtype=f32;n=1048576;op=add";

// The i-th valid configuration of a family's space on an H100 (the tuner's own enumeration).
std::string ew_config(std::size_t i) {
  static const SearchSpace space(ew(), Problem::parse("elementwise", kCopy), kH100.limits);
  return to_string(space.at(i));
}
Problem gemm_problem_f32() { return gemm_problem("f32", false, false, 4096, 4096, 4096, 4); }
std::string gemm_config(std::size_t i) {
  static const SearchSpace space(gemm(), gemm_problem_f32(), kH100.limits);
  return to_string(space.at(i * 37 % space.size()));
}

ResultRecord row(Database& db, const DeviceInfo& d, const Family& f, const std::string& problem,
                 const std::string& config, double ms, const std::string& st = "ok") {
  ResultRecord r;
  r.device_id = db.ensure_device(d);
  r.family = f.name();
  r.template_hash = f.template_hash();
  r.problem = problem;
  r.config = config;
  r.status = st;
  if (st == "ok") {
    r.time_min_ms = ms * 0.97;
    r.time_median_ms = ms;
    r.time_max_ms = ms * 1.05;
    r.repeats = 20;
    r.metric = 8.0 / ms;
  } else {
    r.message = "what went wrong\n(second line)";
  }
  r.unit = f.metric_unit();
  r.registers = 32;
  r.tool_version = "0.1.0";
  r.nvrtc_version = "13.0";
  r.driver_version = 13000;
  r.created_at = "2026-01-02T03:04:05Z";
  return r;
}

std::int64_t count_rows(const std::string& path, const char* table = "results");

// Rows loaded from the shipped presets (a database created by the CLI gets them).
std::int64_t count_shipped(const std::string& path) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  std::int64_t n = -1;
  if (sqlite3_prepare_v2(h, "SELECT count(*) FROM results WHERE origin = 'shipped'", -1, &q,
                         nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

std::int64_t count_rows(const std::string& path, const char* table) {
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  std::int64_t n = -1;
  if (sqlite3_prepare_v2(h, (std::string("SELECT count(*) FROM ") + table).c_str(), -1, &q,
                         nullptr) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A database with two ok elementwise rows on an H100, one ok gemm row on an H200, a failed row
// and a row of an older elementwise template.
void fill(Database& db) {
  db.put_result(row(db, kH100, ew(), kCopy, ew_config(0), 0.5));
  db.put_result(row(db, kH100, ew(), kAdd, ew_config(1), 0.7));
  db.put_result(row(db, kH200, gemm(), gemm_problem_f32().key(), gemm_config(1), 2.5));
  db.put_result(row(db, kH100, ew(), kCopy, ew_config(2), 0, "wrong_result"));
  ResultRecord stale = row(db, kH100, ew(), kCopy, ew_config(3), 0.4);
  stale.template_hash = "0123456789abcdef";
  db.put_result(stale);
}

// One valid export entry as JSON, to be broken one field at a time.
nlohmann::json entry() {
  Config c = parse_config(ew_config(0));
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : c) params[k] = v;
  return {{"device", {{"name", kH100.name}, {"cc_major", 9}, {"cc_minor", 0}, {"sm_count", 132}}},
          {"family", "elementwise"},
          {"template_hash", ew().template_hash()},
          {"problem", kCopy},
          {"config", ew_config(0)},
          {"parameters", params},
          {"status", "ok"},
          {"time_min_ms", 0.4},
          {"time_median_ms", 0.5},
          {"time_max_ms", 0.6},
          {"repeats", 20},
          {"metric", 16.0},
          {"unit", "GB/s"}};
}
// A vector, not a json: nlohmann reads a one-element brace list {e} as e itself, not as [e].
nlohmann::json document(const std::vector<nlohmann::json>& results) {
  nlohmann::json doc = {{"format", "ktune-results"}, {"version", 1}};
  doc["results"] = nlohmann::json::array();
  for (const auto& e : results) doc["results"].push_back(e);
  return doc;
}

// ---- schema ----

// The v1 schema exactly as ktune 0.1 created it (kept here: a migration must never change it).
const char* const kV1Schema = R"sql(
CREATE TABLE devices(id INTEGER PRIMARY KEY, name TEXT NOT NULL, cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL, sm_count INTEGER NOT NULL, uuid TEXT, driver_version INTEGER,
  clock_khz INTEGER, memory_clock_khz INTEGER, total_memory INTEGER, first_seen TEXT NOT NULL,
  UNIQUE(name, cc_major, cc_minor, sm_count));
CREATE TABLE runs(id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id),
  family TEXT NOT NULL, template_hash TEXT NOT NULL, problem TEXT NOT NULL, strategy TEXT NOT NULL,
  seed INTEGER NOT NULL, budget TEXT, status TEXT NOT NULL, started_at TEXT NOT NULL,
  finished_at TEXT);
CREATE TABLE results(id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id),
  device_id INTEGER NOT NULL REFERENCES devices(id), family TEXT NOT NULL,
  template_hash TEXT NOT NULL, problem TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
  time_min_ms REAL, time_median_ms REAL, time_max_ms REAL, repeats INTEGER, metric REAL, unit TEXT,
  registers INTEGER, spill_bytes INTEGER, smem_bytes INTEGER, compile_ms REAL, message TEXT,
  origin TEXT NOT NULL DEFAULT 'tuned', tool_version TEXT, nvrtc_version TEXT,
  driver_version INTEGER, created_at TEXT NOT NULL,
  UNIQUE(device_id, family, template_hash, problem, config));
CREATE INDEX results_by_problem ON results(family, template_hash, problem, status);
CREATE TABLE binaries(key TEXT PRIMARY KEY, arch TEXT NOT NULL, lowered_names TEXT NOT NULL,
  resources TEXT NOT NULL, cubin BLOB NOT NULL, created_at TEXT NOT NULL);
PRAGMA application_id=1802794350;
PRAGMA user_version=1;
)sql";

void make_v1(const std::string& path) {
  static_assert(Database::kApplicationId == 1802794350);
  exec_sql(path, kV1Schema);
  exec_sql(path,
           "INSERT INTO devices VALUES(1,'NVIDIA H100 80GB HBM3',9,0,132,'GPU-x',13000,0,0,0,"
           "'2025-12-01T00:00:00Z');"
           "INSERT INTO results(device_id, family, template_hash, problem, config, status, "
           "time_min_ms, time_median_ms, time_max_ms, repeats, metric, unit, origin, created_at) "
           "VALUES(1,'elementwise','" +
               ew().template_hash() + "','" + kCopy + "','" + ew_config(0) +
               "','ok',0.4,0.5,0.6,20,16.0,'GB/s','tuned','2025-12-01T00:00:00Z');");
}

int user_version(const std::string& path) {
  sqlite3* h = nullptr;
  sqlite3_open_v2(path.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, nullptr);
  int v = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(h);
  return v;
}

TEST(Schema, V1DatabaseMigratesToV2WithRowsIntact) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  make_v1(path);
  {
    // Read-only: read as it is, not migrated (the file may belong to someone else).
    Database ro(path, Database::Mode::kReadOnly);
    auto rows = ro.results({});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].source, "");
    EXPECT_FALSE(ro.created());
  }
  EXPECT_EQ(user_version(path), 1);
  {
    Database db(path);
    EXPECT_EQ(db.schema_version(), Database::kSchemaVersion);
    EXPECT_FALSE(db.created());  // migrated, not created: no presets go into an existing file
    auto rows = db.results({});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].config, ew_config(0));
    EXPECT_DOUBLE_EQ(rows[0].time_median_ms, 0.5);
    EXPECT_EQ(rows[0].device.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(rows[0].created_at, "2025-12-01T00:00:00Z");
    EXPECT_EQ(rows[0].source, "");
    // The new column is written and read back.
    ResultRecord r = row(db, kH100, ew(), kAdd, ew_config(1), 0.9);
    r.source = "import:/somewhere.json";
    db.put_result(r);
    EXPECT_EQ(db.results({}).back().source, "import:/somewhere.json");
    EXPECT_EQ(db.best_results("elementwise", ew().template_hash()).size(), 2u);
    // v3: a run records its physical GPU.
    RunRecord run;
    run.device_id = r.device_id;
    run.family = "elementwise";
    run.template_hash = ew().template_hash();
    run.problem = kAdd;
    run.strategy = "random";
    run.gpu_ordinal = 1;
    run.gpu_uuid = "GPU-1234";
    const std::int64_t id = db.begin_run(run);
    db.finish_run(id, "completed");
    EXPECT_EQ(db.runs().back().gpu_ordinal, 1);
    EXPECT_EQ(db.runs().back().gpu_uuid, "GPU-1234");
  }
  EXPECT_EQ(user_version(path), Database::kSchemaVersion);
}

TEST(Schema, NewFileIsCreatedOnce) {
  TempDir dir;
  EXPECT_TRUE(Database(dir.file("a.db")).created());
  EXPECT_FALSE(Database(dir.file("a.db")).created());
}

// ---- export / import ----

TEST(Exchange, ExportImportRoundTripThroughAFile) {
  TempDir dir;
  Database a(dir.file("a.db"));
  fill(a);
  ExportResult out = export_results(a, {});
  EXPECT_EQ(out.results, 3u);  // ok rows of the current templates only
  const auto doc = nlohmann::json::parse(out.json);
  EXPECT_EQ(doc["format"], "ktune-results");
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["results"].size(), 3u);
  for (const auto& e : doc["results"]) {
    EXPECT_EQ(e["status"], "ok");
    EXPECT_TRUE(e["device"].is_object());
    EXPECT_TRUE(e["parameters"].is_object());
    Config from_object;
    for (const auto& [k, v] : e["parameters"].items()) from_object[k] = v.get<std::int64_t>();
    EXPECT_EQ(to_string(from_object), e["config"].get<std::string>());
    for (const char* field : {"family", "template_hash", "problem", "time_min_ms", "time_median_ms",
                              "time_max_ms", "repeats", "metric", "unit", "origin", "source",
                              "tool_version", "nvrtc_version", "created_at"})
      EXPECT_TRUE(e.contains(field)) << field;
  }
  EXPECT_EQ(out.json.find("cubin"), std::string::npos);
  EXPECT_EQ(export_results(a, {"", true}).results, 5u);
  EXPECT_EQ(export_results(a, {"gemm", false}).results, 1u);
  EXPECT_THROW(export_results(a, {"fft", false}), Error);

  const std::string file = dir.file("export.json");
  write_file(file, out.json);
  Database b(dir.file("b.db"));
  ImportSummary s = import_file(b, file, false);
  EXPECT_EQ(s.entries, 3u);
  EXPECT_EQ(s.written.added, 3u);
  auto mine = a.results({"", "", 0, 0, true});
  auto theirs = b.results({});
  ASSERT_EQ(theirs.size(), 3u);
  for (const auto& t : theirs) {
    auto m = std::find_if(mine.begin(), mine.end(), [&](const ResultRecord& r) {
      return r.family == t.family && r.problem == t.problem && r.config == t.config &&
             r.template_hash == t.template_hash;
    });
    ASSERT_NE(m, mine.end()) << t.config;
    EXPECT_EQ(t.device.name, m->device.name);
    EXPECT_EQ(t.device.sm_count, m->device.sm_count);
    EXPECT_EQ(t.time_median_ms, m->time_median_ms);  // exact: JSON keeps every bit of a double
    EXPECT_EQ(t.time_min_ms, m->time_min_ms);
    EXPECT_EQ(t.metric, m->metric);
    EXPECT_EQ(t.repeats, m->repeats);
    EXPECT_EQ(t.created_at, m->created_at);
    EXPECT_EQ(t.origin, "imported");
    EXPECT_EQ(t.source, "import:" + fs::absolute(file).lexically_normal().string());
    EXPECT_EQ(t.run_id, 0);
  }
  EXPECT_EQ(b.devices().size(), 2u);
  // The memory of each GPU travels with its rows where it is known (fill() measured the H200
  // with it, the H100 without), so that a lookup without the GPU knows its bandwidth.
  for (const auto& e : doc["results"]) {
    if (e["device"]["name"] == kH200.name) {
      EXPECT_EQ(e["device"]["memory_clock_khz"], kH200.memory_clock_khz);
      EXPECT_EQ(e["device"]["memory_bus_bits"], kH200.memory_bus_bits);
    } else {
      EXPECT_FALSE(e["device"].contains("memory_clock_khz")) << e["device"].dump();
      EXPECT_FALSE(e["device"].contains("memory_bus_bits")) << e["device"].dump();
    }
  }
  for (const DeviceRecord& d : b.devices()) {
    const bool h200 = d.name == kH200.name;
    EXPECT_EQ(d.memory_clock_khz, h200 ? kH200.memory_clock_khz : 0) << d.name;
    EXPECT_EQ(d.memory_bus_bits, h200 ? kH200.memory_bus_bits : 0) << d.name;
  }
  // Importing the same file again changes nothing: equal rows keep what is there.
  ImportSummary again = import_file(b, file, false);
  EXPECT_EQ(again.written.kept, 3u);
  EXPECT_EQ(b.results({}).size(), 3u);
}

// --own --compact: the measurements of a database without the presets it loaded, a line each,
// read back with the same times (the form of db/presets/*-cross.json).
TEST(Exchange, CompactExportOfOwnRowsRoundTripsWithoutTheShippedOnes) {
  TempDir dir;
  Database a(dir.file("a.db"));
  fill(a);
  const std::string shipped = dir.file("shipped.json");
  write_file(shipped, export_results(a, {}).json);
  Database b(dir.file("b.db"));
  import_file(b, shipped, true);  // three shipped rows
  b.put_result(row(b, kH100, gemm(), gemm_problem_f32().key(), gemm_config(2), 1.25));
  b.put_result(row(b, kH100, ew(), kAdd, ew_config(3), 0.75));
  ExportOptions o;
  o.own = true;
  o.compact = true;
  const ExportResult out = export_results(b, o);
  EXPECT_EQ(out.results, 2u);
  // The header fields and then one line per result.
  std::size_t result_lines = 0;
  for (const auto& line : split(out.json, '\n'))
    if (line.find("\"config\"") != std::string::npos) {
      ++result_lines;
      const std::string entry = trim(line);
      EXPECT_TRUE(nlohmann::json::accept(entry.substr(0, entry.rfind('}') + 1))) << line;
    }
  EXPECT_EQ(result_lines, 2u);
  const auto doc = nlohmann::json::parse(out.json);
  EXPECT_EQ(doc["format"], "ktune-results");
  for (const auto& e : doc["results"]) {
    EXPECT_FALSE(e.contains("parameters"));
    EXPECT_FALSE(e.contains("origin"));
  }
  const std::string file = dir.file("own.json");
  write_file(file, out.json);
  Database c(dir.file("c.db"));
  EXPECT_EQ(import_file(c, file, true).written.added, 2u);
  auto rows = c.results({});
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.origin, "shipped");
    EXPECT_TRUE(r.time_median_ms == 1.25 || r.time_median_ms == 0.75) << r.time_median_ms;
  }
}

TEST(Exchange, AllRowsRoundTripSkippingInFlightAndStaleUnlessShipped) {
  TempDir dir;
  Database a(dir.file("a.db"));
  fill(a);
  a.mark_in_flight(row(a, kH100, ew(), kAdd, ew_config(4), 0, "in_flight"));
  const std::string all = export_results(a, {"", true}).json;
  // Imported: the row of another template is skipped.
  Database c(dir.file("c.db"));
  ImportSummary i = import_results(c, all, "import test", "import:test", false);
  EXPECT_EQ(i.stale, 1u);
  EXPECT_EQ(i.seeds, 0u);
  EXPECT_EQ(i.written.added, 4u);
  // Shipped: it is kept as a re-tuning seed, which no lookup answers with.
  Database b(dir.file("b.db"));
  ImportSummary s = import_results(b, all, "import test", "import:test", true);
  EXPECT_EQ(s.entries, 6u);
  EXPECT_EQ(s.stale, 1u);
  EXPECT_EQ(s.seeds, 1u);
  EXPECT_EQ(s.in_flight, 1u);
  EXPECT_EQ(s.written.added, 5u);
  for (const auto& best : b.best_results("elementwise", ew().template_hash()))
    EXPECT_EQ(best.template_hash, ew().template_hash());
  auto rows = b.results({});
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) EXPECT_EQ(r.origin, "shipped");
  auto failed = std::find_if(rows.begin(), rows.end(),
                             [](const ResultRecord& r) { return r.status == "wrong_result"; });
  ASSERT_NE(failed, rows.end());
  EXPECT_EQ(failed->message, "what went wrong\n(second line)");
}

TEST(Exchange, ConfigAsParametersOnlyAndNonCanonicalKeysAreStoredCanonically) {
  TempDir dir;
  Database db(dir.file("t.db"));
  nlohmann::json e = entry();
  e.erase("config");
  e["problem"] = "op=copy; n=1048576;dtype=f32;align=16";
  import_results(db, document({e}).dump(), "import t", "import:t", false);
  auto rows = db.results({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem, kCopy);
  EXPECT_EQ(rows[0].config, ew_config(0));
}

TEST(Exchange, ShippedImportNeverReplacesOwnResults) {
  TempDir dir;
  Database db(dir.file("t.db"));
  db.put_result(row(db, kH100, ew(), kCopy, ew_config(0), 2.0));
  nlohmann::json faster = entry();  // same key, 0.5 ms
  ImportSummary s =
      import_results(db, document({faster}).dump(), "preset p", "preset:p", /*shipped=*/true);
  EXPECT_EQ(s.written.kept, 1u);
  EXPECT_EQ(db.results({})[0].origin, "tuned");
  EXPECT_DOUBLE_EQ(db.results({})[0].time_median_ms, 2.0);
  // Own results from elsewhere (imported) compete on the measurement.
  s = import_results(db, document({faster}).dump(), "import f", "import:f", false);
  EXPECT_EQ(s.written.replaced, 1u);
  EXPECT_EQ(db.results({})[0].origin, "imported");
  EXPECT_EQ(db.results({})[0].source, "import:f");
}

struct Bad {
  std::string name;
  std::string text;
  std::string says;  // must appear in the message
};

std::string with(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json good = entry();
  nlohmann::json bad = entry();
  edit(bad);
  // The bad entry comes second: the first is valid and must not be written either.
  return document({good, bad}).dump();
}

std::vector<Bad> bad_documents() {
  const std::string deep_array = std::string(100000, '[') + std::string(100000, ']');
  std::string deep_in_entry = document({entry()}).dump();
  deep_in_entry.replace(deep_in_entry.find("\"unit\":\"GB/s\""), 13,
                        "\"unit\":" + std::string(40, '[') + std::string(40, ']'));
  std::string huge = R"({"format":"ktune-results","version":1,"results":[)";
  for (int i = 0; i < 1000001; ++i) huge += i ? ",0" : "0";
  huge += "]}";
  std::string too_many_values = "[0";
  for (int i = 0; i < 8000000; ++i) too_many_values += ",0";
  too_many_values += "]";
  std::string many_zeros = "[0";
  for (int i = 0; i < 200000; ++i) many_zeros += ",0";
  many_zeros += "]";
  const std::string good = document({entry()}).dump();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  return {
      {"empty file", "", "empty"},
      {"only spaces", " \n\t ", "empty"},
      {"an array", "[]", "expected a JSON object"},
      {"a number", "42", "expected a JSON object"},
      {"null", "null", "expected a JSON object"},
      {"truncated", good.substr(0, good.size() / 2), "not valid JSON"},
      {"NaN literal", replace("0.5", "NaN"), "not valid JSON"},
      {"Infinity literal", replace("0.5", "Infinity"), "not valid JSON"},
      {"number overflow", replace("0.5", "1e999"), "not valid JSON"},
      {"non-UTF-8 in a string", replace("NVIDIA H100", "NVIDIA \xff\xfe H100"), "not valid JSON"},
      {"non-UTF-8 outside strings", good + "\xc3\x28", "not valid JSON"},
      {"trailing garbage", good + "{}", "not valid JSON"},
      {"deep nesting", deep_array, "nested deeper"},
      {"deep nesting in an entry", deep_in_entry, "results[0].unit[0][0][0]"},
      {"duplicate key in an entry",
       replace("\"family\":\"elementwise\"", "\"family\":\"elementwise\",\"family\":\"gemm\""),
       "results[0]: field 'family' appears twice"},
      {"duplicate top-level key",
       replace("\"format\":\"ktune-results\"",
               "\"format\":\"ktune-results\",\"format\":\"ktune-results\""),
       "field 'format' appears twice"},
      {"too many entries", huge, "1000001 entries"},
      {"too many values", too_many_values, "more than 8000000 JSON values"},
      {"huge array as a field",
       with([&](auto& e) { e["config"] = nlohmann::json::parse(many_zeros); }),
       "results[1].config: must be a string"},
      {"wrong format", replace("ktune-results", "other-tool"), "format: expected"},
      {"newer version", replace("\"version\":1", "\"version\":2"), "version: 2 is newer"},
      {"version as text", replace("\"version\":1", "\"version\":\"1\""),
       "version: must be an integer"},
      {"no results", R"({"format":"ktune-results","version":1})", "results: missing"},
      {"results an object", R"({"format":"ktune-results","version":1,"results":{}})",
       "results: must be an array"},
      {"unknown top-level field", replace("\"version\":1", "\"version\":1,\"x\":0"),
       "x: unknown field"},
      {"entry not an object", document({entry(), 5}).dump(), "results[1]: must be an object"},
      {"missing family", with([](auto& e) { e.erase("family"); }), "results[1].family: missing"},
      {"family a number", with([](auto& e) { e["family"] = 7; }),
       "results[1].family: must be a string"},
      {"unknown family", with([](auto& e) { e["family"] = "fft"; }),
       "results[1].family: unknown family 'fft'"},
      {"unknown field", with([](auto& e) { e["colour"] = "red"; }),
       "results[1].colour: unknown field"},
      {"bad template hash", with([](auto& e) { e["template_hash"] = "xyz"; }),
       "results[1].template_hash"},
      {"hash with upper case", with([](auto& e) { e["template_hash"] = "0123456789ABCDEF"; }),
       "results[1].template_hash"},
      {"malformed problem", with([](auto& e) { e["problem"] = "n=;;"; }), "results[1].problem"},
      {"problem the family refuses",
       with([](auto& e) { e["problem"] = "align=3;dtype=f32;n=1024;op=copy"; }),
       "results[1].problem: elementwise: align must be"},
      {"unknown parameter", with([](auto& e) {
         e.erase("parameters");
         e["config"] = ew_config(0) + ",FOO=1";
       }),
       "results[1].config: elementwise config: unknown parameter FOO"},
      {"value outside the space", with([](auto& e) {
         e.erase("parameters");
         std::string c = ew_config(0);
         c.replace(c.find("BLOCK=") + 6, c.find(',', c.find("BLOCK=")) - c.find("BLOCK=") - 6,
                   "100");
         e["config"] = c;
       }),
       "results[1].config: elementwise config: BLOCK=100 is not one of the allowed values"},
      {"missing parameter", with([](auto& e) {
         e.erase("config");
         e["parameters"].erase("VEC");
       }),
       "results[1].config: elementwise config: parameter VEC is missing"},
      {"config the device constraints reject", with([](auto& e) {
         e["problem"] = "align=16;dtype=f64;n=1024;op=copy";
         e["parameters"]["VEC"] = 4;
         e.erase("config");
       }),
       "results[1].config: elementwise config"},
      {"malformed config text", with([](auto& e) {
         e.erase("parameters");
         e["config"] = "BLOCK";
       }),
       "results[1].config: config: 'BLOCK' is not NAME=value"},
      {"parameters and config disagree", with([](auto& e) { e["parameters"]["UNROLL"] = 8; }),
       "results[1].parameters: do not match config"},
      {"fractional parameter", with([](auto& e) { e["parameters"]["BLOCK"] = 2.5; }),
       "results[1].parameters.BLOCK: must be an integer"},
      {"parameters a list", with([](auto& e) {
         e["parameters"] = {1, 2};
       }),
       "results[1].parameters: must be an object"},
      {"no config at all", with([](auto& e) {
         e.erase("parameters");
         e.erase("config");
       }),
       "results[1].config: missing"},
      {"device missing", with([](auto& e) { e.erase("device"); }), "results[1].device: missing"},
      {"cc as text", with([](auto& e) { e["device"]["cc_major"] = "9"; }),
       "results[1].device.cc_major: must be an integer"},
      {"cc out of range", with([](auto& e) { e["device"]["cc_major"] = 1000; }),
       "results[1].device.cc_major"},
      {"no SMs", with([](auto& e) { e["device"]["sm_count"] = 0; }), "results[1].device.sm_count"},
      {"SM count beyond int", with([](auto& e) { e["device"]["sm_count"] = 1e20; }),
       "results[1].device.sm_count: must be an integer"},
      {"SM count beyond int64",
       with([](auto& e) { e["device"]["sm_count"] = std::numeric_limits<std::uint64_t>::max(); }),
       "results[1].device.sm_count"},
      {"negative memory clock", with([](auto& e) { e["device"]["memory_clock_khz"] = -1; }),
       "results[1].device.memory_clock_khz: -1 is outside"},
      {"bus width out of range", with([](auto& e) { e["device"]["memory_bus_bits"] = 100000; }),
       "results[1].device.memory_bus_bits: 100000 is outside"},
      {"bus width as text", with([](auto& e) { e["device"]["memory_bus_bits"] = "6016"; }),
       "results[1].device.memory_bus_bits: must be an integer"},
      {"unknown device field", with([](auto& e) { e["device"]["uuid"] = "GPU-1"; }),
       "results[1].device.uuid: unknown field"},
      {"control character in a name", with([](auto& e) { e["device"]["name"] = "H100\x01"; }),
       "results[1].device.name: contains a control character"},
      {"empty device name", with([](auto& e) { e["device"]["name"] = ""; }),
       "results[1].device.name: must not be empty"},
      {"huge string", with([](auto& e) { e["unit"] = std::string(5000, 'x'); }),
       "results[1].unit: 5000 bytes"},
      {"negative time", with([](auto& e) { e["time_min_ms"] = -1.0; }),
       "results[1].time_min_ms: must be a finite number >= 0"},
      {"zero time for ok", with([](auto& e) { e["time_median_ms"] = 0; }),
       "results[1].time_median_ms: must be > 0"},
      {"time as text", with([](auto& e) { e["time_max_ms"] = "fast"; }),
       "results[1].time_max_ms: must be a number"},
      {"ok without measurement", with([](auto& e) { e.erase("time_median_ms"); }),
       "results[1].time_median_ms: missing"},
      {"unknown status", with([](auto& e) { e["status"] = "great"; }),
       "results[1].status: unknown status 'great'"},
      {"status null", with([](auto& e) { e["status"] = nullptr; }),
       "results[1].status: must be a string"},
      {"unknown origin", with([](auto& e) { e["origin"] = "stolen"; }),
       "results[1].origin: unknown origin"},
      {"registers out of range", with([](auto& e) { e["registers"] = -5; }),
       "results[1].registers"},
  };
}

TEST(Exchange, ImportRejectsMalformedAndHostileJsonAndWritesNothing) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  Database db(path);
  fill(db);
  const std::int64_t before = count_rows(path), devices = count_rows(path, "devices");
  // The valid entry alone imports: each failure below is the broken field's doing.
  Database valid(dir.file("valid.db"));
  EXPECT_EQ(import_results(valid, document({entry()}).dump(), "import ok", "import:ok", false)
                .written.added,
            1u);
  Database fresh(dir.file("fresh.db"));
  for (const Bad& c : bad_documents()) {
    for (Database* target : {&db, &fresh}) {
      try {
        import_results(*target, c.text, "import bad.json", "import:bad.json", false);
        ADD_FAILURE() << c.name << ": accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << c.name;
        const std::string message = e.what();
        EXPECT_EQ(message.rfind("import bad.json: ", 0), 0u) << c.name << ": " << message;
        EXPECT_NE(message.find(c.says), std::string::npos) << c.name << ": " << message;
        EXPECT_LT(message.size(), 1000u) << c.name << ": messages stay short";
      }
    }
    EXPECT_EQ(count_rows(path), before) << c.name;
    EXPECT_EQ(count_rows(dir.file("fresh.db")), 0) << c.name;
  }
  EXPECT_EQ(count_rows(path, "devices"), devices);
}

TEST(Exchange, ImportFileErrorsNameTheFile) {
  TempDir dir;
  Database db(dir.file("t.db"));
  for (const std::string& path : {dir.file("missing.json"), dir.path().string()}) {
    try {
      import_file(db, path, false);
      ADD_FAILURE() << path;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

// ---- merge ----

TEST(Exchange, MergeKeepsTheBetterMeasurementPerKeyAndRecordsWhereItCameFrom) {
  TempDir dir;
  const std::string here_path = dir.file("here.db"), other_path = dir.file("other.db");
  Database here(here_path);
  Database other(other_path);
  // The other file knows an A100 first: its H100 has another id there.
  other.ensure_device(kA100);
  const std::string copy = kCopy, add = kAdd;
  // (here, other) per key
  here.put_result(row(here, kH100, ew(), copy, ew_config(0), 2.0));  // other faster: replaced
  other.put_result(row(other, kH100, ew(), copy, ew_config(0), 1.0));
  here.put_result(row(here, kH100, ew(), copy, ew_config(1), 1.0));  // other slower: kept
  other.put_result(row(other, kH100, ew(), copy, ew_config(1), 3.0));
  here.put_result(row(here, kH100, ew(), copy, ew_config(2), 0, "wrong_result"));  // ok wins
  other.put_result(row(other, kH100, ew(), copy, ew_config(2), 5.0));
  here.put_result(row(here, kH100, ew(), add, ew_config(0), 4.0));  // a fault loses: kept
  other.put_result(row(other, kH100, ew(), add, ew_config(0), 0, "fault"));
  other.put_result(row(other, kH200, gemm(), gemm_problem_f32().key(), gemm_config(2), 3.0));
  ResultRecord stale = row(other, kH100, ew(), add, ew_config(5), 0.1);
  stale.template_hash = "00000000000000ff";
  other.put_result(stale);
  other.mark_in_flight(row(other, kH100, ew(), add, ew_config(6), 0, "in_flight"));
  other.put_binary("k", "sm_90", {{'\x7f', 'E', 'L', 'F'}, {"_Z1kv"}, "{}"});

  MergeSummary s = merge_database(here, other_path);
  EXPECT_EQ(s.rows, 7u);
  EXPECT_EQ(s.written.added, 1u);
  EXPECT_EQ(s.written.replaced, 2u);
  EXPECT_EQ(s.written.kept, 2u);
  EXPECT_EQ(s.stale, 1u);
  EXPECT_EQ(s.in_flight, 1u);
  EXPECT_EQ(here.binary_count(), 0);  // binaries are never merged

  const std::string source = "merge:" + fs::absolute(other_path).lexically_normal().string();
  auto find = [&](const std::string& problem, const std::string& config) {
    for (auto& r : here.results({}))
      if (r.problem == problem && r.config == config) return r;
    ADD_FAILURE() << problem << " " << config;
    return ResultRecord{};
  };
  ResultRecord r = find(copy, ew_config(0));
  EXPECT_DOUBLE_EQ(r.time_median_ms, 1.0);
  EXPECT_EQ(r.source, source);
  EXPECT_EQ(r.device.name, kH100.name);
  r = find(copy, ew_config(1));
  EXPECT_DOUBLE_EQ(r.time_median_ms, 1.0);
  EXPECT_EQ(r.source, "");
  r = find(copy, ew_config(2));
  EXPECT_EQ(r.status, "ok");
  EXPECT_DOUBLE_EQ(r.time_median_ms, 5.0);
  EXPECT_EQ(r.source, source);
  r = find(add, ew_config(0));
  EXPECT_EQ(r.status, "ok");
  EXPECT_EQ(r.source, "");
  r = find(gemm_problem_f32().key(), gemm_config(2));
  EXPECT_EQ(r.device.name, kH200.name);
  EXPECT_EQ(r.device.sm_count, 132);
  EXPECT_EQ(r.source, source);
  EXPECT_EQ(r.origin, "tuned");  // merged from the user's own tuning elsewhere
  // Devices matched by identity: H100 not duplicated, H200 created; the A100 had no results.
  EXPECT_EQ(here.devices().size(), 2u);

  // Merging again changes nothing.
  MergeSummary again = merge_database(here, other_path);
  EXPECT_EQ(again.written.added + again.written.replaced, 0u);
}

TEST(Exchange, MergeReadsAnOlderSchemaWithoutMigratingIt) {
  TempDir dir;
  make_v1(dir.file("v1.db"));
  Database here(dir.file("here.db"));
  MergeSummary s = merge_database(here, dir.file("v1.db"));
  EXPECT_EQ(s.written.added, 1u);
  EXPECT_EQ(user_version(dir.file("v1.db")), 1);
}

TEST(Exchange, MergeRefusesWhatIsNotAnotherKtuneDatabase) {
  TempDir dir;
  const std::string path = dir.file("here.db");
  Database here(path);
  fill(here);
  const std::int64_t before = count_rows(path);
  write_file(dir.file("notes.txt"), std::string(8192, 'x'));
  exec_sql(dir.file("foreign.db"), "CREATE TABLE accounts(id INTEGER)");
  struct Case {
    std::string file, says;
    ErrorCode code;
  };
  for (const Case& c :
       std::vector<Case>{{dir.file("notes.txt"), "not a SQLite database", ErrorCode::kDatabase},
                         {dir.file("foreign.db"), "not a ktune database", ErrorCode::kDatabase},
                         {dir.file("missing.db"), "no such file", ErrorCode::kDatabase},
                         {path, "the database being merged into", ErrorCode::kInvalidArgument}}) {
    try {
      merge_database(here, c.file);
      ADD_FAILURE() << c.file;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(count_rows(path), before);
}

TEST(Exchange, MergeRejectsAnInvalidRowAndWritesNothing) {
  TempDir dir;
  Database here(dir.file("here.db"));
  Database other(dir.file("other.db"));
  other.put_result(row(other, kH100, ew(), kCopy, ew_config(0), 1.0));
  other.put_result(row(other, kH100, ew(), kCopy, "BLOCK=256,FOO=1", 1.0));
  try {
    merge_database(here, dir.file("other.db"));
    ADD_FAILURE() << "merged";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("result 2.config"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count_rows(dir.file("here.db")), 0);
}

// ---- prune, check ----

TEST(Exchange, PruneStaleRemovesOnlyStaleRows) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  Database db(path);
  fill(db);  // 4 current rows, 1 stale
  ResultRecord gone = row(db, kH100, ew(), kCopy, ew_config(0), 1.0);
  // A family this process does not know (a family file not named, or one ktune no longer has):
  // its rows are kept, never counted stale.
  gone.family = "fft";
  db.put_result(gone);
  RunRecord run;
  run.device_id = db.ensure_device(kH100);
  run.family = "elementwise";
  run.template_hash = "0123456789abcdef";
  run.problem = kCopy;
  run.strategy = "random";
  const std::int64_t stale_run = db.begin_run(run);
  run.template_hash = ew().template_hash();
  const std::int64_t current_run = db.begin_run(run);
  ResultRecord stale_of_run = row(db, kH100, ew(), kAdd, ew_config(7), 1.0);
  stale_of_run.template_hash = "0123456789abcdef";
  stale_of_run.run_id = stale_run;
  db.put_result(stale_of_run);
  ResultRecord current_of_run = row(db, kH100, ew(), kAdd, ew_config(8), 1.0);
  current_of_run.run_id = current_run;
  db.put_result(current_of_run);
  db.put_binary("a", "sm_90", {{'x'}, {"_Z1av"}, "{}"});
  db.put_binary("b", "sm_90", {{'y'}, {"_Z1bv"}, "{}"});

  EXPECT_EQ(check_database(db).stale, 2);
  EXPECT_EQ(check_database(db).other_families, 1);
  PruneCounts c = prune_stale(db);
  EXPECT_EQ(c.results, 2u);
  EXPECT_EQ(c.runs, 1u);
  EXPECT_EQ(c.binaries, 2u);
  auto rows = db.results({});
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& r : rows) {
    if (r.family == "fft") continue;
    EXPECT_EQ(r.template_hash, find_family(r.family).template_hash());
  }
  ASSERT_EQ(db.runs().size(), 1u);
  EXPECT_EQ(db.runs()[0].id, current_run);
  EXPECT_EQ(check_database(db).stale, 0);
  EXPECT_EQ(prune_stale(db).results, 0u);
}

TEST(Exchange, CheckReportsAGoodDatabase) {
  TempDir dir;
  Database db(dir.file("t.db"));
  fill(db);
  db.mark_in_flight(row(db, kH100, ew(), kAdd, ew_config(4), 0, "in_flight"));
  CheckSummary s = check_database(db);
  EXPECT_EQ(s.report.schema_version, Database::kSchemaVersion);
  EXPECT_EQ(s.report.application_id, Database::kApplicationId);
  EXPECT_EQ(s.report.devices, 2);
  EXPECT_EQ(s.report.results, 6);
  EXPECT_EQ(s.report.ok, 4);
  EXPECT_EQ(s.report.in_flight, 1);
  EXPECT_EQ(s.stale, 1);
}

// A real database file with garbage written over pages in its middle.
std::string corrupt_database(const TempDir& dir) {
  const std::string path = dir.file("corrupt.db");
  {
    Database db(path);
    const std::int64_t dev = db.ensure_device(kH100);
    for (int i = 0; i < 400; ++i) {
      ResultRecord r =
          row(db, kH100, ew(), "align=16;dtype=f32;n=" + std::to_string(1024 + i) + ";op=copy",
              ew_config(0), 1.0 + i);
      r.device_id = dev;
      r.message = std::string(300, 'm');
      db.put_result(r);
    }
  }  // closing checkpoints the WAL into the file
  EXPECT_FALSE(fs::exists(path + "-wal") && fs::file_size(path + "-wal") > 0);
  const auto size = fs::file_size(path);
  EXPECT_GT(size, 16u * 4096u);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(size / 2 / 4096 * 4096));
  std::string garbage(3 * 4096, '\0');
  std::uint32_t x = 12345;
  for (char& c : garbage) c = static_cast<char>((x = x * 1103515245u + 12345u) >> 24);
  f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  return path;
}

TEST(Exchange, CheckFailsClearlyOnACorruptedFile) {
  TempDir dir;
  const std::string path = corrupt_database(dir);
  try {
    Database db(path, Database::Mode::kReadOnly);
    check_database(db);
    ADD_FAILURE() << "a damaged file passed the check";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDatabase);
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_TRUE(message.find("damaged") != std::string::npos ||
                message.find("corrupt") != std::string::npos)
        << message;
  }
}

// ---- shipped presets ----

TEST(Presets, LoadAsShippedAndSkipWhatFailsValidation) {
  TempDir dir;
  Database source(dir.file("source.db"));
  fill(source);
  const std::string good = export_results(source, {}).json;
  nlohmann::json stale_doc = nlohmann::json::parse(good);
  for (auto& e : stale_doc["results"]) e["template_hash"] = "00000000000000aa";
  const std::string stale = stale_doc.dump();
  const std::string broken = with([](auto& e) { e["status"] = "great"; });

  Database db(dir.file("t.db"));
  ASSERT_TRUE(db.created());
  PresetSummary s =
      load_presets(db, {{"broken.json", broken}, {"h100.json", good}, {"old.json", stale}});
  EXPECT_EQ(s.presets, 3u);
  EXPECT_EQ(s.loaded, 2u);  // a preset of an older template is no error
  EXPECT_EQ(s.rows, 6u);    // 3 current rows, and the older template's 3 kept as seeds
  EXPECT_EQ(s.seeds, 3u);
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_NE(s.skipped[0].find("preset broken.json: results[1].status"), std::string::npos)
      << s.skipped[0];
  auto rows = db.results({});
  ASSERT_EQ(rows.size(), 6u);  // nothing of the broken preset, not even its valid entry
  for (const auto& r : rows) {
    EXPECT_EQ(r.origin, "shipped");
    EXPECT_EQ(r.source,
              r.template_hash == "00000000000000aa" ? "preset:old.json" : "preset:h100.json");
  }
  EXPECT_EQ(check_database(db).stale, 3);  // the seeds answer no lookup
  for (const auto& best : db.best_results("elementwise", ew().template_hash()))
    EXPECT_NE(best.template_hash, "00000000000000aa");
  // Own tuning takes precedence in lookups over what was shipped.
  ResultRecord own = row(db, kH100, ew(), kCopy, ew_config(9), 5.0);
  db.put_result(own);
  for (const auto& best : db.best_results("elementwise", ew().template_hash())) {
    if (best.problem == kCopy) {
      EXPECT_EQ(best.config, ew_config(9));
    }
  }
}

TEST(Presets, EachIsLoadedOnceAndAgainWhenAnUpgradeChangesIt) {
  ASSERT_FALSE(shipped_presets().empty());
  TempDir dir;
  {
    Database db(dir.file("t.db"));
    EXPECT_EQ(load_new_presets(db).presets, shipped_presets().size());
  }
  Database again(dir.file("t.db"));
  EXPECT_EQ(load_new_presets(again).presets, 0u);  // loaded in this form already
  // The database loaded an earlier version of a preset (another digest): an upgraded ktune
  // brings the new one in at its next open.
  const std::string name = shipped_presets().front().name;
  again.record_preset(name, "0123456789abcdef0123456789abcdef");
  PresetSummary s = load_new_presets(again);
  EXPECT_EQ(s.presets, 1u);
  EXPECT_EQ(s.loaded, 1u);
  EXPECT_EQ(again.preset_digests().at(name), shipped_presets().front().digest);
  EXPECT_EQ(shipped_presets().front().digest.size(), 64u);  // SHA-256, in hex
  // A database of an earlier schema (v3: presets loaded but not recorded) gets them recorded.
  EXPECT_EQ(load_new_presets(again).presets, 0u);
}

TEST(Presets, EveryShippedPresetIsAValidDocument) {
  // Entries of an older template are kept as seeds, but every preset must pass validation.
  for (const auto& p : shipped_presets())
    EXPECT_NO_THROW(parse_results(p.text, "preset " + p.name)) << p.name;
  TempDir dir;
  Database db(dir.file("t.db"));
  PresetSummary s = load_new_presets(db);
  EXPECT_EQ(s.presets, shipped_presets().size());
  EXPECT_TRUE(s.skipped.empty());
}

// ---- ktune db ----

TEST(DbCli, ExportImportMergePruneCheckExitCodesAndSummaries) {
  TempDir dir;
  const std::string a = dir.file("a.db"), b = dir.file("b.db");
  {
    Database db(a);
    fill(db);
  }
  auto r = run_cli({"db", "export", "--db", a});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["results"].size(), 3u);
  EXPECT_NE(r.err.find("exported 3 result(s)"), std::string::npos) << r.err;

  const std::string file = dir.file("out.json");
  r = run_cli({"db", "export", "--db", a, "--all", "--family", "elementwise", "-o", file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exported 4 result(s)"), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(file))["results"].size(), 4u);

  r = run_cli({"db", "import", file, "--db", b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3 added"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 skipped"), std::string::npos) << r.out;  // the stale entry

  write_file(dir.file("bad.json"), with([](auto& e) { e["parameters"]["FOO"] = 1; }));
  r = run_cli({"db", "import", dir.file("bad.json"), "--db", b});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("results[1].parameters"), std::string::npos) << r.err;
  write_file(dir.file("bad.json"), "[1, 2");
  r = run_cli({"db", "import", dir.file("bad.json"), "--db", b});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;
  r = run_cli({"db", "import", dir.file("missing.json"), "--db", b});
  EXPECT_EQ(r.exit_code, 2);
  // b was created by the import, so it also holds the shipped presets; the failed imports added
  // nothing to the three rows imported before.
  EXPECT_EQ(count_rows(b) - count_shipped(b), 3);

  r = run_cli({"db", "merge", a, "--db", b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("merged"), std::string::npos) << r.out;
  write_file(dir.file("notes.txt"), std::string(8192, 'x'));
  r = run_cli({"db", "merge", dir.file("notes.txt"), "--db", b});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("notes.txt"), std::string::npos) << r.err;
  r = run_cli({"db", "merge", "--db", b});
  EXPECT_EQ(r.exit_code, 2);

  r = run_cli({"db", "prune", "--db", a});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stale"), std::string::npos) << r.err;
  r = run_cli({"db", "prune", "--stale", "--db", a});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 stale result(s)"), std::string::npos) << r.out;
  r = run_cli({"db", "prune", "--stale", "--db", dir.file("missing.db")});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_FALSE(fs::exists(dir.file("missing.db")));

  r = run_cli({"db", "check", "--db", a});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": ok"), std::string::npos) << r.out;
  r = run_cli({"db", "check", "--db", corrupt_database(dir)});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_NE(r.err.find("corrupt.db"), std::string::npos) << r.err;
  r = run_cli({"db", "check", "--db", dir.file("missing.db")});
  EXPECT_EQ(r.exit_code, 4);

  r = run_cli({"db"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli({"db", "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  r = run_cli({"db", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word : {"export", "import", "merge", "prune", "check"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  r = run_cli({"db", "import", "--help"}, "COLUMNS=200");  // wide: no line break in the phrase
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("nothing is written"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ktune
