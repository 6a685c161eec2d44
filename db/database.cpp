// SQLite schema, migrations and queries for tuning results; each write is its own short
// BEGIN IMMEDIATE transaction so concurrent tuners and a killed process lose nothing committed.
#include "db/database.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "core/util.hpp"
#include "ktune/error.hpp"

namespace ktune {
namespace fs = std::filesystem;

namespace {

constexpr int kBusyTimeoutMs = 30000;

// v5's triggers, which keep the table measured_problems: the one SQL a ktune database runs on its
// own, so check_identity() accepts a trigger only with one of these names and exactly this text.
// No OR IGNORE in them: the statement that fires a trigger (an upsert) imposes its own conflict
// policy on the trigger's statements.
// The old row's problem leaves the table with its last ok row (the update's and delete's end).
constexpr const char* kForgetOldProblem = R"sql(
  DELETE FROM measured_problems
    WHERE family = OLD.family AND template_hash = OLD.template_hash AND problem = OLD.problem
    AND NOT EXISTS (SELECT 1 FROM results WHERE family = OLD.family
                    AND template_hash = OLD.template_hash AND problem = OLD.problem
                    AND status = 'ok');
END)sql";
const std::string kMeasuredProblemsInsert =
    R"sql(CREATE TRIGGER measured_problems_insert AFTER INSERT ON results WHEN NEW.status = 'ok'
BEGIN
  INSERT INTO measured_problems SELECT NEW.family, NEW.template_hash, NEW.problem
    WHERE NOT EXISTS (SELECT 1 FROM measured_problems WHERE family = NEW.family
                      AND template_hash = NEW.template_hash AND problem = NEW.problem);
END)sql";
const std::string kMeasuredProblemsUpdate =
    std::string(R"sql(CREATE TRIGGER measured_problems_update
AFTER UPDATE OF family, template_hash, problem, status ON results
BEGIN
  INSERT INTO measured_problems SELECT NEW.family, NEW.template_hash, NEW.problem
    WHERE NEW.status = 'ok'
    AND NOT EXISTS (SELECT 1 FROM measured_problems WHERE family = NEW.family
                    AND template_hash = NEW.template_hash AND problem = NEW.problem);)sql") +
    kForgetOldProblem;
const std::string kMeasuredProblemsDelete =
    std::string(
        R"sql(CREATE TRIGGER measured_problems_delete AFTER DELETE ON results WHEN OLD.status = 'ok'
BEGIN)sql") +
    kForgetOldProblem;
struct KtuneTrigger {
  const char* name;
  const std::string* sql;
};
const KtuneTrigger kTriggers[] = {{"measured_problems_insert", &kMeasuredProblemsInsert},
                                  {"measured_problems_update", &kMeasuredProblemsUpdate},
                                  {"measured_problems_delete", &kMeasuredProblemsDelete}};
const std::string kMigration5 = std::string(R"sql(
CREATE TABLE measured_problems(
  family TEXT NOT NULL,
  template_hash TEXT NOT NULL,
  problem TEXT NOT NULL,
  PRIMARY KEY(family, template_hash, problem)) WITHOUT ROWID;
INSERT INTO measured_problems
  SELECT DISTINCT family, template_hash, problem FROM results WHERE status = 'ok';
)sql") + kMeasuredProblemsInsert +
                                ";\n" + kMeasuredProblemsUpdate + ";\n" + kMeasuredProblemsDelete +
                                ";\n";

// Schema of each version, applied in order; a migration never rewrites an earlier step.
const char* const kMigrations[] = {
    // v1
    R"sql(
CREATE TABLE devices(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  cc_major INTEGER NOT NULL,
  cc_minor INTEGER NOT NULL,
  sm_count INTEGER NOT NULL,
  uuid TEXT,
  driver_version INTEGER,
  clock_khz INTEGER,
  memory_clock_khz INTEGER,
  total_memory INTEGER,
  first_seen TEXT NOT NULL,
  UNIQUE(name, cc_major, cc_minor, sm_count));
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id),
  family TEXT NOT NULL,
  template_hash TEXT NOT NULL,
  problem TEXT NOT NULL,
  strategy TEXT NOT NULL,
  seed INTEGER NOT NULL,
  budget TEXT,
  status TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT);
CREATE TABLE results(
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id),
  device_id INTEGER NOT NULL REFERENCES devices(id),
  family TEXT NOT NULL,
  template_hash TEXT NOT NULL,
  problem TEXT NOT NULL,
  config TEXT NOT NULL,
  status TEXT NOT NULL,
  time_min_ms REAL,
  time_median_ms REAL,
  time_max_ms REAL,
  repeats INTEGER,
  metric REAL,
  unit TEXT,
  registers INTEGER,
  spill_bytes INTEGER,
  smem_bytes INTEGER,
  compile_ms REAL,
  message TEXT,
  origin TEXT NOT NULL DEFAULT 'tuned',
  tool_version TEXT,
  nvrtc_version TEXT,
  driver_version INTEGER,
  created_at TEXT NOT NULL,
  UNIQUE(device_id, family, template_hash, problem, config));
CREATE INDEX results_by_problem ON results(family, template_hash, problem, status);
CREATE TABLE binaries(
  key TEXT PRIMARY KEY,
  arch TEXT NOT NULL,
  lowered_names TEXT NOT NULL,
  resources TEXT NOT NULL,
  cubin BLOB NOT NULL,
  created_at TEXT NOT NULL);
)sql",
    // v2: where a row from elsewhere came from (import, merge, shipped preset); NULL when measured
    // here.
    R"sql(
ALTER TABLE results ADD COLUMN source TEXT;
)sql",
    // v3: which physical GPU a run measured on (identical GPUs share one device row), and the
    // process that owns it, so that a run still alive is never declared crashed by another.
    R"sql(
ALTER TABLE runs ADD COLUMN gpu_ordinal INTEGER;
ALTER TABLE runs ADD COLUMN gpu_uuid TEXT;
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
)sql",
    // v4: which shipped presets (by the digest of their text) the database has loaded, so that an
    // upgraded ktune brings its newer presets into an existing database at the next open.
    R"sql(
CREATE TABLE shipped_presets(
  name TEXT PRIMARY KEY,
  digest TEXT NOT NULL,
  loaded_at TEXT NOT NULL);
)sql",
    // v5: the problems with an ok result of each family and template hash, kept by triggers at
    // every write: the lookup's predicted step lists them on a first call, where a skip scan of
    // the results' index took 121 seeks (0.5 ms on the host, more on a GPU machine's CPU).
    kMigration5.c_str(),
    // v6: the columns the predicted step reads of a problem's rows (Database::measurements) in the
    // problem's index, in the rows' order (id), so that they come from the index's pages alone (a
    // covering index), sorted, instead of one table page per row: rows of one problem loaded from
    // several presets files lie on many pages (host, a first lookup of an untuned GEMM shape:
    // 1.59 to 1.65 -> 1.48 ms). It replaces results_by_problem, whose columns lead it.
    R"sql(
CREATE INDEX IF NOT EXISTS results_measured ON results(family, template_hash, problem, status, id,
  device_id, config, time_median_ms, metric, unit, origin);
DROP INDEX IF EXISTS results_by_problem;
)sql",
    // v7: the memory's bus width beside its clock (v1), so that a GPU's memory bandwidth is known
    // where it is not present: `ktune explain --gpu` on the host answered 98 of 610 GEMM shapes
    // otherwise than the runtime on an H200, its model taking an H100's 3.35 TB/s for 4.8.
    R"sql(
ALTER TABLE devices ADD COLUMN memory_bus_bits INTEGER;
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == Database::kSchemaVersion);

const char* const kResultColumns =
    "r.id, r.run_id, r.device_id, r.family, r.template_hash, r.problem, r.config, r.status, "
    "r.time_min_ms, r.time_median_ms, r.time_max_ms, r.repeats, r.metric, r.unit, r.registers, "
    "r.spill_bytes, r.smem_bytes, r.compile_ms, r.message, r.origin, r.tool_version, "
    "r.nvrtc_version, r.driver_version, r.created_at, d.name, d.cc_major, d.cc_minor, d.sm_count, "
    "d.uuid, d.driver_version";

// Last of the result columns; a v1 file (open read-only, so not migrated) has no such column.
const char* const kSourceColumn = ", r.source";
const char* const kNoSourceColumn = ", NULL";
// After it, the device's memory (a file before v7, open read-only, has no bus width).
const char* const kMemoryColumns = ", d.memory_clock_khz, d.memory_bus_bits";
const char* const kNoBusColumn = ", d.memory_clock_khz, NULL";

ResultRecord read_result(SQLite::Statement& q) {
  ResultRecord r;
  int i = 0;
  auto text = [&](int c) {
    return q.getColumn(c).isNull() ? std::string() : q.getColumn(c).getString();
  };
  r.id = q.getColumn(i++).getInt64();
  r.run_id = q.getColumn(i++).getInt64();
  r.device_id = q.getColumn(i++).getInt64();
  r.family = text(i++);
  r.template_hash = text(i++);
  r.problem = text(i++);
  r.config = text(i++);
  r.status = text(i++);
  r.time_min_ms = q.getColumn(i++).getDouble();
  r.time_median_ms = q.getColumn(i++).getDouble();
  r.time_max_ms = q.getColumn(i++).getDouble();
  r.repeats = q.getColumn(i++).getInt();
  r.metric = q.getColumn(i++).getDouble();
  r.unit = text(i++);
  r.registers = q.getColumn(i).isNull() ? -1 : q.getColumn(i).getInt();
  ++i;
  r.spill_bytes = q.getColumn(i++).getInt();
  r.smem_bytes = q.getColumn(i++).getInt();
  r.compile_ms = q.getColumn(i++).getDouble();
  r.message = text(i++);
  r.origin = text(i++);
  r.tool_version = text(i++);
  r.nvrtc_version = text(i++);
  r.driver_version = q.getColumn(i++).getInt();
  r.created_at = text(i++);
  r.device.id = r.device_id;
  r.device.name = text(i++);
  r.device.cc_major = q.getColumn(i++).getInt();
  r.device.cc_minor = q.getColumn(i++).getInt();
  r.device.sm_count = q.getColumn(i++).getInt();
  r.device.uuid = text(i++);
  r.device.driver_version = q.getColumn(i++).getInt();
  r.source = text(i++);
  r.device.memory_clock_khz = q.getColumn(i++).getInt();
  r.device.memory_bus_bits = q.getColumn(i++).getInt();
  return r;
}

// The outcome of a candidate: shared by the insert of a whole row and the update of one in flight.
void bind_measurement(SQLite::Statement& q, const ResultRecord& r) {
  q.bind(":status", r.status);
  q.bind(":tmin", r.time_min_ms);
  q.bind(":tmed", r.time_median_ms);
  q.bind(":tmax", r.time_max_ms);
  q.bind(":repeats", r.repeats);
  q.bind(":metric", r.metric);
  q.bind(":unit", r.unit);
  if (r.registers >= 0)
    q.bind(":registers", r.registers);
  else
    q.bind(":registers");
  q.bind(":spill", r.spill_bytes);
  q.bind(":smem", r.smem_bytes);
  q.bind(":compile_ms", r.compile_ms);
  q.bind(":message", r.message);
}

void bind_result(SQLite::Statement& q, const ResultRecord& r) {
  auto opt_int = [&](const char* name, std::int64_t v) {
    if (v)
      q.bind(name, static_cast<std::int64_t>(v));
    else
      q.bind(name);  // NULL
  };
  opt_int(":run_id", r.run_id);
  q.bind(":device_id", static_cast<std::int64_t>(r.device_id));
  q.bind(":family", r.family);
  q.bind(":template_hash", r.template_hash);
  q.bind(":problem", r.problem);
  q.bind(":config", r.config);
  bind_measurement(q, r);
  q.bind(":origin", r.origin.empty() ? std::string("tuned") : r.origin);
  q.bind(":tool_version", r.tool_version);
  q.bind(":nvrtc_version", r.nvrtc_version);
  q.bind(":driver_version", r.driver_version);
  q.bind(":created_at", r.created_at.empty() ? utc_now() : r.created_at);
  if (r.source.empty())
    q.bind(":source");  // NULL: measured here
  else
    q.bind(":source", r.source);
}

}  // namespace

std::string DeviceRecord::identity() const {
  return name + " | sm_" + std::to_string(cc_major * 10 + cc_minor) + " | " +
         std::to_string(sm_count) + " SMs";
}

std::string database_default_path() {
  if (const char* p = std::getenv("KTUNE_DB"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "ktune" / "tuning.db").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "ktune" / "tuning.db").string();
  return "ktune-tuning.db";
}

namespace {

// What a path is when it is not a regular file, for the message refusing it.
std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// A path as an SQLite URI (file:...), every byte outside the unreserved set percent-encoded.
std::string file_uri(const std::string& path) {
  static const char* const kHex = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  return uri;
}

bool folder_writable(const std::string& path) {
  fs::path parent = fs::absolute(path).parent_path();
  return ::access(parent.c_str(), W_OK) == 0;
}

// One notice per process about a network filesystem: a tuning run opens its database per GPU.
std::atomic<bool> g_network_notice_given{false};

}  // namespace

std::string network_filesystem(const std::string& folder) {
  struct statfs s {};
  if (::statfs(folder.c_str(), &s) != 0) return {};
  switch (static_cast<std::uint32_t>(s.f_type)) {
    case 0x6969u:
      return "NFS";
    case 0xFF534D42u:
      return "CIFS";
    case 0xFE534D42u:
      return "SMB2";
    case 0x517Bu:
      return "SMB";
    case 0x0BD00BD0u:
      return "Lustre";
    case 0x47504653u:
      return "GPFS";
    case 0x19830326u:
      return "BeeGFS";
    case 0x00C36400u:
      return "CephFS";
    case 0x5346414Fu:
      return "AFS";
    case 0x01021997u:
      return "9P";
    default:
      return {};
  }
}

void Database::fail(const std::string& what, const std::exception& e) const {
  std::string message = "database " + path_ + ": " + what + ": " + e.what();
  if (const auto* se = dynamic_cast<const SQLite::Exception*>(&e)) {
    int code = se->getErrorCode() & 0xff;
    // The operating system's reason behind an I/O error, where SQLite kept it.
    const int os_error = db_ ? sqlite3_system_errno(db_->getHandle()) : 0;
    if (code == SQLITE_NOTADB)
      message = "database " + path_ + ": the file is not a SQLite database";
    else if (code == SQLITE_CORRUPT)
      message = "database " + path_ + ": the file is corrupt (" + e.what() + ")";
    else if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
      message = "database " + path_ + ": still locked by another process after " +
                std::to_string(kBusyTimeoutMs / 1000) + " s (" + what + ")";
    else if (code == SQLITE_READONLY)
      message = "database " + path_ + ": cannot write (read-only file or directory) while " + what;
    else if (code == SQLITE_FULL || os_error == ENOSPC || os_error == EDQUOT)
      message = "database " + path_ + ": disk full while " + what +
                (os_error == EDQUOT ? " (disk quota exceeded)" : "");
    else if (os_error == EFBIG)
      message = "database " + path_ + ": file size limit exceeded (ulimit -f) while " + what;
    else if (code == SQLITE_CANTOPEN)
      message = "database " + path_ + ": cannot open the file (" + e.what() + ")";
    else if (code == SQLITE_IOERR)
      message = "database " + path_ + ": I/O error while " + what + " (" + e.what() +
                (os_error ? std::string(": ") + std::strerror(os_error) : std::string()) + ")";
  }
  throw Error(ErrorCode::kDatabase, message);
}

Database::Database(const std::string& path, Mode mode) : path_(path), mode_(mode) {
  if (path.empty()) throw Error(ErrorCode::kInvalidArgument, "database: empty path");
  try {
    if (mode == Mode::kMemory) {
      db_ = std::make_unique<SQLite::Database>(
          ":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX);
      db_->exec("PRAGMA foreign_keys=ON");
    } else {
      open_file();
    }
    check_identity();  // before anything is written: a refused file stays as it was
    if (mode == Mode::kReadWrite) choose_journal();
    if (mode == Mode::kReadWrite) db_->exec("PRAGMA foreign_keys=ON");
    migrate();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("opening", e);
  }
}

void Database::open_file() {
  // Anything but a regular file is refused before SQLite sees it: opening a FIFO blocks until
  // a writer comes, a device is no database. stat() follows links, as SQLite's open does.
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode))
    throw Error(ErrorCode::kDatabase,
                "database " + path_ + ": is " + file_kind(st.st_mode) + ", not a database file");
  if (!exists && errno != ENOENT)
    throw Error(ErrorCode::kDatabase,
                "database " + path_ + ": cannot reach the file: " + std::strerror(errno));
  if (mode_ == Mode::kReadWrite) {
    fs::path parent = fs::path(path_).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec)
      throw Error(ErrorCode::kDatabase, "database " + path_ + ": cannot create directory " +
                                            parent.string() + ": " + ec.message());
  } else if (!exists) {
    throw Error(ErrorCode::kDatabase, "database " + path_ + ": no such file");
  }
  const int flags = mode_ == Mode::kReadWrite ? (SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE)
                                              : SQLite::OPEN_READONLY;
  try {
    db_ = std::make_unique<SQLite::Database>(path_, flags | SQLite::OPEN_FULLMUTEX, kBusyTimeoutMs);
    // Reading the header validates the file: a non-database fails here, not mid-run.
    db_->exec("SELECT count(*) FROM sqlite_master");
  } catch (const SQLite::Exception& e) {
    const int code = e.getErrorCode() & 0xff;
    // A WAL database read in a folder this process cannot write: SQLite cannot create the
    // shared-memory file beside it. With no -wal file no writer is active, so the file is read
    // as it stands (SQLite's immutable mode takes no locks and needs no -shm).
    if (mode_ != Mode::kReadOnly || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) ||
        folder_writable(path_) || fs::exists(path_ + "-wal"))
      throw;
    db_.reset();
    db_ = std::make_unique<SQLite::Database>(
        file_uri(path_) + "?immutable=1",
        SQLite::OPEN_READONLY | SQLite::OPEN_URI | SQLite::OPEN_FULLMUTEX, kBusyTimeoutMs);
    db_->exec("SELECT count(*) FROM sqlite_master");
  }
}

// Refuses what ktune did not write, reading only: another application's SQLite file, a schema
// version ktune never wrote (negative, or newer), views or triggers in place of ktune's tables
// (a view can make every read run for ever; a trigger would run its own SQL on our writes).
// The three reads share one read transaction: read one by one, another process creating the
// schema between them made a new file look like tables without a version (seen in CI with four
// tuners opening one new file).
void Database::check_identity() {
  int version = 0, app_id = 0;
  std::vector<std::pair<std::string, std::string>> objects;  // (type, name)
  std::size_t own_triggers = 0;
  {
    SQLite::Transaction snapshot(*db_, SQLite::TransactionBehavior::DEFERRED);
    version = schema_version();
    app_id = db_->execAndGet("PRAGMA application_id").getInt();
    SQLite::Statement q(*db_, "SELECT type, name, sql FROM sqlite_master");
    while (q.executeStep()) {
      const std::string type = q.getColumn(0).getString(), name = q.getColumn(1).getString();
      // ktune's own triggers, by name and text
      if (type == "trigger" &&
          std::any_of(std::begin(kTriggers), std::end(kTriggers), [&](const KtuneTrigger& t) {
            return name == t.name && q.getColumn(2).getString() == *t.sql;
          })) {
        ++own_triggers;
        continue;
      }
      objects.emplace_back(type, name);
    }
  }  // rolled back: it only read
  const std::string at = "database " + path_ + ": ";
  if (version < 0)
    throw Error(ErrorCode::kDatabase, at + "schema version " + std::to_string(version) +
                                          " was never written by ktune (not a ktune database, "
                                          "or a damaged one); nothing was changed");
  if (version > kSchemaVersion)
    throw Error(ErrorCode::kDatabase, at + "schema version " + std::to_string(version) +
                                          " is newer than this ktune understands (" +
                                          std::to_string(kSchemaVersion) + "); upgrade ktune");
  if (version == 0 && !objects.empty() && app_id != kApplicationId)
    throw Error(ErrorCode::kDatabase,
                at + "is a SQLite file of another application (not a ktune database)");
  if (version > 0 && app_id != kApplicationId)
    throw Error(ErrorCode::kDatabase, at + "not a ktune database (application id)");
  if (version == 0 && !objects.empty())
    throw Error(ErrorCode::kDatabase,
                at + "has tables but no schema version (not a ktune database, or a damaged one)");
  for (const auto& [type, name] : objects) {
    if (type == "view" || type == "trigger")
      throw Error(ErrorCode::kDatabase,
                  at + "holds a " + type + " '" + name + "', which no ktune database has; refused");
    if ((name == "devices" || name == "runs" || name == "results" || name == "binaries" ||
         name == "measured_problems") &&
        type != "table")
      throw Error(ErrorCode::kDatabase, at + "'" + name + "' is a " + type + ", not a table");
  }
  if (version > 0)
    for (const char* table : {"devices", "runs", "results", "binaries", "measured_problems"})
      if ((version >= 5 || std::string_view(table) != "measured_problems") &&
          std::none_of(objects.begin(), objects.end(),
                       [&](const auto& o) { return o.first == "table" && o.second == table; }))
        throw Error(ErrorCode::kDatabase,
                    at + "has no table '" + table + "' (a damaged ktune database)");
  // Without its triggers the table of measured problems would go stale at the next write.
  if (version >= 5 && own_triggers != std::size(kTriggers))
    throw Error(ErrorCode::kDatabase, at + "lacks " +
                                          std::to_string(std::size(kTriggers) - own_triggers) +
                                          " of ktune's triggers (a damaged ktune database)");
}

// WAL lets readers and one writer work at once; on a network filesystem it does not work at all
// (no shared memory between hosts), so a rollback journal is used there.
void Database::choose_journal() {
  std::string journal = "wal";
  std::string why;
  const char* forced = std::getenv("KTUNE_DB_JOURNAL");
  if (forced && *forced) {
    journal = forced;
    if (journal != "wal" && journal != "delete")
      throw Error(ErrorCode::kInvalidArgument,
                  "$KTUNE_DB_JOURNAL: '" + journal + "' is neither 'wal' nor 'delete'");
  } else {
    const std::string fs_name = network_filesystem(fs::absolute(path_).parent_path().string());
    if (!fs_name.empty()) {
      journal = "delete";
      why = fs_name;
    }
  }
  // The mode is kept in the file, so a database opened before needs no change. A change takes
  // the file's exclusive lock and SQLite answers SQLITE_BUSY at once, without its busy handler,
  // while another connection reads: connections opening one new file together each waited for
  // none and failed ("locked"). So this waits as a busy handler would, up to the same timeout.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (int attempt = 0;; ++attempt) {
    try {
      if (db_->execAndGet("PRAGMA journal_mode").getString() != journal)
        db_->exec("PRAGMA journal_mode=" + journal);
      break;
    } catch (const SQLite::Exception& e) {
      if ((e.getErrorCode() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > deadline)
        throw;
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::min(1 << std::min(attempt, 5), 20)));
    }
  }
  db_->exec(journal == "wal" ? "PRAGMA synchronous=NORMAL" : "PRAGMA synchronous=FULL");
  // No memory map (PRAGMA mmap_size), though it cut a first lookup's reads by 0.4 of 2.5 ms on
  // the host: a file truncated or failing under a mapped read is a SIGBUS that ends the
  // application, where SQLite's own reads return an error (tried in 1942e37, and before).
  if (!why.empty() && !g_network_notice_given.exchange(true))
    notices_.push_back("database " + path_ + " is on a network filesystem (" + why +
                       "): using a rollback journal, since SQLite's WAL does not work there");
}

Database::~Database() = default;

int Database::schema_version() { return db_->execAndGet("PRAGMA user_version").getInt(); }

void Database::migrate() {
  int version = schema_version();
  version_ = version;
  if (version == kSchemaVersion) return;
  // An older file opened read-only is read as it is (queries fill what it lacks), so `query` and
  // `db merge` work on databases of earlier ktune versions without writing to them.
  if (mode_ == Mode::kReadOnly && version > 0) return;
  if (mode_ == Mode::kReadOnly)
    throw Error(ErrorCode::kDatabase,
                "database " + path_ + ": is an empty file (no ktune schema), open read-only");
  SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
  // Re-read under the write lock: another process may have migrated meanwhile.
  version = schema_version();
  if (version < 0 || version > kSchemaVersion)
    throw Error(ErrorCode::kDatabase, "database " + path_ + ": schema version " +
                                          std::to_string(version) + " changed while opening");
  for (int v = version; v < kSchemaVersion; ++v) db_->exec(kMigrations[v]);
  db_->exec("PRAGMA application_id=" + std::to_string(kApplicationId));
  db_->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
  tx.commit();
  created_ = version == 0;
  version_ = kSchemaVersion;
}

std::map<std::string, std::string> Database::preset_digests() {
  std::map<std::string, std::string> out;
  if (version_ < 4) return out;
  try {
    SQLite::Statement q(*db_, "SELECT name, digest FROM shipped_presets");
    while (q.executeStep()) out[q.getColumn(0).getString()] = q.getColumn(1).getString();
  } catch (const std::exception& e) {
    fail("reading the shipped presets' record", e);
  }
  return out;
}

void Database::record_preset(const std::string& name, const std::string& digest) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_,
                        "INSERT OR REPLACE INTO shipped_presets(name, digest, loaded_at) "
                        "VALUES(?,?,?)");
    q.bind(1, name);
    q.bind(2, digest);
    q.bind(3, utc_now());
    q.exec();
    tx.commit();
  } catch (const std::exception& e) {
    fail("recording a shipped preset", e);
  }
}

std::string Database::result_columns() const {
  return std::string(kResultColumns) + (version_ >= 2 ? kSourceColumn : kNoSourceColumn) +
         (version_ >= 7 ? kMemoryColumns : kNoBusColumn);
}

std::string Database::device_select() const {
  return std::string(
             "SELECT id, name, cc_major, cc_minor, sm_count, uuid, driver_version, "
             "memory_clock_khz, ") +
         (version_ >= 7 ? "memory_bus_bits" : "NULL") + " FROM devices";
}

namespace {
DeviceRecord read_device(SQLite::Statement& q) {
  DeviceRecord d;
  d.id = q.getColumn(0).getInt64();
  d.name = q.getColumn(1).getString();
  d.cc_major = q.getColumn(2).getInt();
  d.cc_minor = q.getColumn(3).getInt();
  d.sm_count = q.getColumn(4).getInt();
  d.uuid = q.getColumn(5).getString();
  d.driver_version = q.getColumn(6).getInt();
  d.memory_clock_khz = q.getColumn(7).getInt();
  d.memory_bus_bits = q.getColumn(8).getInt();
  return d;
}
}  // namespace

std::optional<DeviceRecord> Database::find_device(const DeviceInfo& info) {
  try {
    SQLite::Statement q(
        *db_, device_select() + " WHERE name=? AND cc_major=? AND cc_minor=? AND sm_count=?");
    q.bind(1, info.name);
    q.bind(2, info.limits.cc_major);
    q.bind(3, info.limits.cc_minor);
    q.bind(4, info.limits.sm_count);
    if (!q.executeStep()) return std::nullopt;
    return read_device(q);
  } catch (const std::exception& e) {
    fail("looking up a device", e);
  }
}

std::int64_t Database::ensure_device(const DeviceInfo& info) {
  const bool memory_known = info.memory_clock_khz > 0 && info.memory_bus_bits > 0;
  if (auto d = find_device(info)) {
    if (d->memory_clock_khz > 0 && d->memory_bus_bits > 0) return d->id;
    if (!memory_known) return d->id;
  }
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement ins(
        *db_,
        "INSERT OR IGNORE INTO devices(name, cc_major, cc_minor, sm_count, uuid, driver_version, "
        "clock_khz, memory_clock_khz, memory_bus_bits, total_memory, first_seen) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, info.name);
    ins.bind(2, info.limits.cc_major);
    ins.bind(3, info.limits.cc_minor);
    ins.bind(4, info.limits.sm_count);
    ins.bind(5, info.uuid);
    ins.bind(6, info.driver_version);
    ins.bind(7, info.clock_khz);
    ins.bind(8, info.memory_clock_khz);
    ins.bind(9, info.memory_bus_bits);
    ins.bind(10, static_cast<std::int64_t>(info.total_memory));
    ins.bind(11, utc_now());
    ins.exec();
    if (memory_known) {
      // A row that came without them (shipped results, an import): the GPU here says.
      SQLite::Statement fill(
          *db_,
          "UPDATE devices SET memory_clock_khz=?, memory_bus_bits=? WHERE "
          "name=? AND cc_major=? AND cc_minor=? AND sm_count=? AND "
          "(IFNULL(memory_clock_khz, 0) <= 0 OR IFNULL(memory_bus_bits, 0) <= 0)");
      fill.bind(1, info.memory_clock_khz);
      fill.bind(2, info.memory_bus_bits);
      fill.bind(3, info.name);
      fill.bind(4, info.limits.cc_major);
      fill.bind(5, info.limits.cc_minor);
      fill.bind(6, info.limits.sm_count);
      fill.exec();
    }
    tx.commit();
  } catch (const std::exception& e) {
    fail("recording the device", e);
  }
  auto d = find_device(info);
  if (!d)
    throw Error(ErrorCode::kDatabase, "database " + path_ + ": device row vanished after insert");
  return d->id;
}

std::vector<DeviceRecord> Database::devices() {
  std::vector<DeviceRecord> out;
  try {
    SQLite::Statement q(*db_, device_select() + " ORDER BY id");
    while (q.executeStep()) out.push_back(read_device(q));
  } catch (const std::exception& e) {
    fail("listing devices", e);
  }
  return out;
}

namespace {
// Runs begun and not yet finished by this process (any Database object, any thread).
std::mutex g_active_mutex;
std::set<std::int64_t>& active_runs() {
  static std::set<std::int64_t> runs;
  return runs;
}
std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}
}  // namespace

std::int64_t Database::begin_run(const RunRecord& run) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_,
                        "INSERT INTO runs(device_id, family, template_hash, problem, strategy, "
                        "seed, budget, status, started_at, gpu_ordinal, gpu_uuid, host, pid) "
                        "VALUES(?,?,?,?,?,?,?,'running',?,?,?,?,?)");
    q.bind(1, static_cast<std::int64_t>(run.device_id));
    q.bind(2, run.family);
    q.bind(3, run.template_hash);
    q.bind(4, run.problem);
    q.bind(5, run.strategy);
    q.bind(6, static_cast<std::int64_t>(run.seed));
    q.bind(7, run.budget);
    q.bind(8, utc_now());
    if (run.gpu_ordinal >= 0) q.bind(9, run.gpu_ordinal);
    if (!run.gpu_uuid.empty()) q.bind(10, run.gpu_uuid);
    q.bind(11, host_name());
    q.bind(12, static_cast<std::int64_t>(getpid()));
    q.exec();
    std::int64_t id = db_->getLastInsertRowid();
    tx.commit();
    std::lock_guard lock(g_active_mutex);
    active_runs().insert(id);
    return id;
  } catch (const std::exception& e) {
    fail("starting a run", e);
  }
}

void Database::finish_run(std::int64_t run_id, const std::string& run_status) {
  {
    std::lock_guard lock(g_active_mutex);
    active_runs().erase(run_id);
  }
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_, "UPDATE runs SET status=?, finished_at=? WHERE id=?");
    q.bind(1, run_status);
    q.bind(2, utc_now());
    q.bind(3, static_cast<std::int64_t>(run_id));
    q.exec();
    tx.commit();
  } catch (const std::exception& e) {
    fail("finishing a run", e);
  }
}

std::vector<RunRecord> Database::runs() { return read_runs(0); }

std::optional<RunRecord> Database::find_run(std::int64_t id) {
  auto found = read_runs(id);
  if (found.empty()) return std::nullopt;
  return std::move(found.front());
}

std::vector<RunRecord> Database::read_runs(std::int64_t id) {
  std::vector<RunRecord> out;
  try {
    SQLite::Statement q(
        *db_,
        std::string("SELECT id, device_id, family, template_hash, problem, strategy, seed, budget, "
                    "status, started_at, finished_at, ") +
            (version_ >= 3 ? "gpu_ordinal, gpu_uuid" : "NULL, NULL") + " FROM runs" +
            (id ? " WHERE id=?" : "") + " ORDER BY id");
    if (id) q.bind(1, static_cast<std::int64_t>(id));
    while (q.executeStep()) {
      RunRecord r;
      r.id = q.getColumn(0).getInt64();
      r.device_id = q.getColumn(1).getInt64();
      r.family = q.getColumn(2).getString();
      r.template_hash = q.getColumn(3).getString();
      r.problem = q.getColumn(4).getString();
      r.strategy = q.getColumn(5).getString();
      r.seed = q.getColumn(6).getInt64();
      r.budget = q.getColumn(7).getString();
      r.status = q.getColumn(8).getString();
      r.started_at = q.getColumn(9).getString();
      r.finished_at = q.getColumn(10).getString();
      if (!q.getColumn(11).isNull()) r.gpu_ordinal = q.getColumn(11).getInt();
      r.gpu_uuid = q.getColumn(12).getString();
      out.push_back(r);
    }
  } catch (const std::exception& e) {
    fail("listing runs", e);
  }
  return out;
}

namespace {
const char* const kUpsert =
    "INSERT INTO results(run_id, device_id, family, template_hash, problem, config, status, "
    "time_min_ms, "
    "time_median_ms, time_max_ms, repeats, metric, unit, registers, spill_bytes, smem_bytes, "
    "compile_ms, message, "
    "origin, tool_version, nvrtc_version, driver_version, created_at, source) VALUES(:run_id, "
    ":device_id, "
    ":family, "
    ":template_hash, :problem, :config, :status, :tmin, :tmed, :tmax, :repeats, :metric, :unit, "
    ":registers, "
    ":spill, :smem, :compile_ms, :message, :origin, :tool_version, :nvrtc_version, "
    ":driver_version, :created_at, :source) "
    "ON CONFLICT(device_id, family, template_hash, problem, config) DO UPDATE SET "
    "run_id=excluded.run_id, "
    "status=excluded.status, time_min_ms=excluded.time_min_ms, "
    "time_median_ms=excluded.time_median_ms, "
    "time_max_ms=excluded.time_max_ms, repeats=excluded.repeats, metric=excluded.metric, "
    "unit=excluded.unit, "
    "registers=excluded.registers, spill_bytes=excluded.spill_bytes, "
    "smem_bytes=excluded.smem_bytes, "
    "compile_ms=excluded.compile_ms, message=excluded.message, origin=excluded.origin, "
    "tool_version=excluded.tool_version, nvrtc_version=excluded.nvrtc_version, "
    "driver_version=excluded.driver_version, created_at=excluded.created_at, "
    "source=excluded.source";
}  // namespace

std::int64_t Database::put_result(const ResultRecord& r) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_, kUpsert);
    bind_result(q, r);
    q.exec();
    SQLite::Statement id(
        *db_,
        "SELECT id FROM results WHERE device_id=? AND family=? AND template_hash=? AND "
        "problem=? AND config=?");
    id.bind(1, static_cast<std::int64_t>(r.device_id));
    id.bind(2, r.family);
    id.bind(3, r.template_hash);
    id.bind(4, r.problem);
    id.bind(5, r.config);
    id.executeStep();
    std::int64_t row = id.getColumn(0).getInt64();
    tx.commit();
    return row;
  } catch (const std::exception& e) {
    fail("writing a result", e);
  }
}

std::int64_t Database::mark_in_flight(const ResultRecord& r) {
  ResultRecord row = r;
  row.status = status::kInFlight;
  return put_result(row);
}

void Database::store_result(const ResultRecord& r) {
  if (!r.id) {
    put_result(r);
    return;
  }
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(
        *db_,
        "UPDATE results SET status=:status, time_min_ms=:tmin, time_median_ms=:tmed, "
        "time_max_ms=:tmax, repeats=:repeats, metric=:metric, unit=:unit, registers=:registers, "
        "spill_bytes=:spill, smem_bytes=:smem, compile_ms=:compile_ms, message=:message, "
        "created_at=:created_at WHERE id=:id");
    bind_measurement(q, r);
    q.bind(":created_at", utc_now());
    q.bind(":id", static_cast<std::int64_t>(r.id));
    q.exec();
    tx.commit();
  } catch (const std::exception& e) {
    fail("writing a result", e);
  }
}

namespace {

// Binds parameters 1-4 of a statement that selects one problem's rows of one template version.
void bind_problem(SQLite::Statement& q, std::int64_t device_id, const std::string& family,
                  const std::string& template_hash, const std::string& problem) {
  q.bind(1, static_cast<std::int64_t>(device_id));
  q.bind(2, family);
  q.bind(3, template_hash);
  q.bind(4, problem);
}

}  // namespace

int Database::mark_crashed(std::int64_t device_id, const std::string& family,
                           const std::string& template_hash, const std::string& problem) {
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // Runs of this problem that still measure: begun and not finished by this process, or owned
    // by another process of this host that is alive. Their rows in flight are not crashed; the
    // other runs left 'running' died with their process and are marked aborted.
    std::vector<std::int64_t> alive, dead;
    {
      SQLite::Statement runs(*db_,
                             "SELECT id, host, pid FROM runs WHERE status='running' AND "
                             "device_id=? AND family=? AND template_hash=? AND problem=?");
      bind_problem(runs, device_id, family, template_hash, problem);
      const std::string here = host_name();
      const std::int64_t me = getpid();
      while (runs.executeStep()) {
        const std::int64_t id = runs.getColumn(0).getInt64();
        const std::int64_t pid = runs.getColumn(2).isNull() ? 0 : runs.getColumn(2).getInt64();
        bool live = false;
        if (pid == me) {
          std::lock_guard lock(g_active_mutex);
          live = active_runs().count(id) > 0;
        } else if (pid > 0 && !runs.getColumn(1).isNull() &&
                   runs.getColumn(1).getString() == here) {
          live = kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
        }
        (live ? alive : dead).push_back(id);
      }
    }
    for (const std::int64_t id : dead) {
      SQLite::Statement q(*db_,
                          "UPDATE runs SET status='aborted', finished_at=? WHERE id=? AND "
                          "status='running'");
      q.bind(1, utc_now());
      q.bind(2, static_cast<std::int64_t>(id));
      q.exec();
    }
    std::string sql =
        "UPDATE results SET status='crashed', message='the process died while this candidate ran' "
        "WHERE status='in_flight' AND device_id=? AND family=? AND template_hash=? AND problem=?";
    if (!alive.empty()) {
      sql += " AND (run_id IS NULL OR run_id NOT IN (";
      for (std::size_t i = 0; i < alive.size(); ++i)
        sql += (i ? "," : "") + std::to_string(alive[i]);
      sql += "))";
    }
    SQLite::Statement q(*db_, sql);
    bind_problem(q, device_id, family, template_hash, problem);
    int n = q.exec();
    tx.commit();
    return n;
  } catch (const std::exception& e) {
    fail("recording crashed candidates", e);
  }
}

std::set<std::string> Database::evaluated_configs(std::int64_t device_id, const std::string& family,
                                                  const std::string& template_hash,
                                                  const std::string& problem, bool or_measured) {
  std::set<std::string> out;
  try {
    SQLite::Statement q(
        *db_,
        "SELECT config FROM results WHERE device_id=? AND family=? AND template_hash=? AND "
        "problem=? AND (origin='tuned' OR (?5 AND status='ok'))");
    bind_problem(q, device_id, family, template_hash, problem);
    q.bind(5, or_measured ? 1 : 0);
    while (q.executeStep()) out.insert(q.getColumn(0).getString());
  } catch (const std::exception& e) {
    fail("reading evaluated configurations", e);
  }
  return out;
}

std::vector<ResultRecord> Database::results(const ResultFilter& f) {
  std::vector<ResultRecord> out;
  try {
    std::string sql = "SELECT " + result_columns() +
                      " FROM results r JOIN devices d ON d.id = r.device_id WHERE 1=1";
    if (!f.family.empty()) sql += " AND r.family = :family";
    if (!f.problem.empty()) sql += " AND r.problem = :problem";
    if (f.device_id) sql += " AND r.device_id = :device";
    if (f.run_id) sql += " AND r.run_id = :run";
    if (f.ok_only) sql += " AND r.status = 'ok'";
    sql += f.newest ? " ORDER BY r.id DESC LIMIT :newest" : " ORDER BY r.id";
    SQLite::Statement q(*db_, sql);
    if (f.newest) q.bind(":newest", static_cast<std::int64_t>(f.newest));
    if (!f.family.empty()) q.bind(":family", f.family);
    if (!f.problem.empty()) q.bind(":problem", f.problem);
    if (f.device_id) q.bind(":device", static_cast<std::int64_t>(f.device_id));
    if (f.run_id) q.bind(":run", static_cast<std::int64_t>(f.run_id));
    while (q.executeStep()) out.push_back(read_result(q));
  } catch (const std::exception& e) {
    fail("reading results", e);
  }
  return out;
}

std::pair<std::int64_t, std::int64_t> Database::result_volume() {
  try {
    std::string text_columns =
        "family, template_hash, problem, config, status, unit, message, origin, tool_version, "
        "nvrtc_version, created_at";
    if (version_ >= 2) text_columns += ", source";
    std::string sum;
    for (const auto& column : split(text_columns, ','))
      sum += (sum.empty() ? "" : " + ") + std::string("coalesce(length(CAST(") + trim(column) +
             " AS BLOB)), 0)";
    SQLite::Statement q(*db_, "SELECT count(*), coalesce(sum(" + sum + "), 0) FROM results");
    q.executeStep();
    return {q.getColumn(0).getInt64(), q.getColumn(1).getInt64()};
  } catch (const std::exception& e) {
    fail("measuring the results", e);
  }
}

std::vector<ResultRecord> Database::best_results(const std::string& family,
                                                 const std::string& template_hash,
                                                 std::int64_t device_id, const std::string& problem,
                                                 int per_problem) {
  std::vector<ResultRecord> out;
  try {
    // The filters go inside the window, so that it ranks only the rows asked for (through the
    // problem index, results_measured), not the whole table.
    std::string where = "status = 'ok'";
    if (!family.empty()) where += " AND family = :family";
    if (!template_hash.empty()) where += " AND template_hash = :hash";
    if (device_id) where += " AND device_id = :device";
    if (!problem.empty()) where += " AND problem = :problem";
    const std::string sql =
        "SELECT " + result_columns() +
        " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY device_id, family, "
        "template_hash, problem "
        "ORDER BY (origin = 'shipped'), time_median_ms, id) AS rank FROM results "
        "WHERE " +
        where + ") r JOIN devices d ON d.id = r.device_id" +
        (per_problem > 0 ? " WHERE r.rank <= " + std::to_string(per_problem) : std::string()) +
        " ORDER BY r.family, r.device_id, r.problem, r.rank";
    SQLite::Statement q(*db_, sql);
    if (!family.empty()) q.bind(":family", family);
    if (!template_hash.empty()) q.bind(":hash", template_hash);
    if (device_id) q.bind(":device", static_cast<std::int64_t>(device_id));
    if (!problem.empty()) q.bind(":problem", problem);
    while (q.executeStep()) out.push_back(read_result(q));
  } catch (const std::exception& e) {
    fail("reading best results", e);
  }
  return out;
}

std::vector<std::string> Database::measured_problems(const std::string& family,
                                                     const std::string& template_hash) {
  std::vector<std::string> out;
  try {
    if (version_ >= 5) {  // the table the triggers keep
      SQLite::Statement q(*db_,
                          "SELECT problem FROM measured_problems"
                          " WHERE family = ?1 AND template_hash = ?2 ORDER BY problem");
      q.bind(1, family);
      q.bind(2, template_hash);
      while (q.executeStep()) out.emplace_back(q.getColumn(0).getText());
      return out;
    }
    // A file of an older schema, open read-only: a skip scan of the index, one seek per problem.
    // SELECT DISTINCT read every row's entry (3978 for 120 problems of the shipped GEMM presets:
    // 0.35 to 0.8 ms of a first call).
    SQLite::Statement q(*db_,
                        "WITH RECURSIVE p(problem) AS ("
                        " SELECT (SELECT min(problem) FROM results"
                        "  WHERE family = ?1 AND template_hash = ?2 AND status = 'ok')"
                        " UNION ALL"
                        " SELECT (SELECT min(problem) FROM results"
                        "  WHERE family = ?1 AND template_hash = ?2 AND status = 'ok'"
                        "  AND problem > p.problem)"
                        " FROM p WHERE p.problem IS NOT NULL)"
                        " SELECT problem FROM p WHERE problem IS NOT NULL");
    q.bind(1, family);
    q.bind(2, template_hash);
    while (q.executeStep()) out.emplace_back(q.getColumn(0).getText());
  } catch (const std::exception& e) {
    fail("reading measured problems", e);
  }
  return out;
}

Measurements Database::measurements(const std::string& family, const std::string& template_hash,
                                    const std::vector<std::string>& problems) {
  Measurements out;
  try {
    // The columns a ranking reads, through the index, with no join, sort or window: this runs
    // on a first call (a grid's winners measured on each shape are thousands of rows). The
    // devices, a few rows, are read apart.
    {
      // With the memory each was measured on: a model carrying a measurement to another GPU
      // reads the measuring GPU's bandwidth (a file before v7, open read-only, has no bus width).
      SQLite::Statement q(*db_, std::string("SELECT id, name, cc_major, cc_minor, sm_count, ") +
                                    (version_ >= 7 ? "memory_clock_khz, memory_bus_bits"
                                                   : "memory_clock_khz, NULL") +
                                    " FROM devices");
      while (q.executeStep()) {
        DeviceRecord& d = out.devices.emplace_back();
        d.id = q.getColumn(0).getInt64();
        d.name = q.getColumn(1).getText();
        d.cc_major = q.getColumn(2).getInt();
        d.cc_minor = q.getColumn(3).getInt();
        d.sm_count = q.getColumn(4).getInt();
        d.memory_clock_khz = q.getColumn(5).getInt();
        d.memory_bus_bits = q.getColumn(6).getInt();
      }
    }
    // One pass through the index (v6: it holds every column read here), read with SQLite's own
    // calls (no column objects), in the rows' order, which the ranking's ties follow. The capacity
    // is reserved generously: memory reserved and never touched costs nothing, where growing the
    // vector allocated, faulted in and copied each larger block again.
    out.rows.reserve(problems.size() * 64);
    sqlite3* h = db_->getHandle();
    sqlite3_stmt* raw = nullptr;
    const char* sql =
        "SELECT id, device_id, config, time_median_ms, metric, unit, origin FROM results"
        " WHERE family = ?1 AND template_hash = ?2 AND problem = ?3 AND status = 'ok'"
        " ORDER BY id";
    if (int rc = sqlite3_prepare_v2(h, sql, -1, &raw, nullptr); rc != SQLITE_OK)
      throw SQLite::Exception(h, rc);
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> st(raw, sqlite3_finalize);
    auto text = [&](int column) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(raw, column));
      return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(raw, column)))
               : std::string_view();
    };
    sqlite3_bind_text(raw, 1, family.data(), static_cast<int>(family.size()), SQLITE_STATIC);
    sqlite3_bind_text(raw, 2, template_hash.data(), static_cast<int>(template_hash.size()),
                      SQLITE_STATIC);
    for (std::size_t i = 0; i < problems.size(); ++i) {
      const std::string& problem = problems[i];
      sqlite3_reset(raw);
      sqlite3_bind_text(raw, 3, problem.data(), static_cast<int>(problem.size()), SQLITE_STATIC);
      int rc;
      while ((rc = sqlite3_step(raw)) == SQLITE_ROW) {
        const std::int64_t device_id = sqlite3_column_int64(raw, 1);
        auto device = std::find_if(out.devices.begin(), out.devices.end(),
                                   [&](const DeviceRecord& d) { return d.id == device_id; });
        if (device == out.devices.end()) continue;  // the foreign key holds in files we write
        Measurements::Row& r = out.rows.emplace_back();
        r.id = sqlite3_column_int64(raw, 0);
        r.problem = i;
        r.device = &*device;
        r.config = text(2);
        r.time_median_ms = sqlite3_column_double(raw, 3);
        r.metric = sqlite3_column_double(raw, 4);
        r.unit = text(5);
        r.shipped = text(6) == "shipped";
      }
      if (rc != SQLITE_DONE) throw SQLite::Exception(h, rc);
    }
  } catch (const std::exception& e) {
    fail("reading measurements", e);
  }
  return out;
}

std::vector<ResultRecord> Database::best_results_for_problem(const std::string& family,
                                                             const std::string& template_hash,
                                                             const std::string& problem,
                                                             const DeviceInfo& device, int limit) {
  std::vector<ResultRecord> out;
  try {
    SQLite::Statement q(
        *db_, "SELECT " + result_columns() +
                  " FROM results r JOIN devices d ON d.id = r.device_id"
                  " WHERE r.family = ? AND r.template_hash = ? AND r.problem = ?"
                  " AND r.status = 'ok' AND d.name = ? AND d.cc_major = ? AND d.cc_minor = ?"
                  " AND d.sm_count = ?"
                  " ORDER BY (r.origin = 'shipped'), r.time_median_ms, r.id LIMIT ?");
    q.bind(1, family);
    q.bind(2, template_hash);
    q.bind(3, problem);
    q.bind(4, device.name);
    q.bind(5, device.limits.cc_major);
    q.bind(6, device.limits.cc_minor);
    q.bind(7, device.limits.sm_count);
    q.bind(8, limit);
    while (q.executeStep()) out.push_back(read_result(q));
  } catch (const std::exception& e) {
    fail("reading results", e);
  }
  return out;
}

std::optional<CachedBinary> Database::find_binary(const std::string& key) {
  try {
    SQLite::Statement q(*db_, "SELECT cubin, lowered_names, resources FROM binaries WHERE key=?");
    q.bind(1, key);
    if (!q.executeStep()) return std::nullopt;
    CachedBinary b;
    const auto blob = q.getColumn(0);
    const char* data = static_cast<const char*>(blob.getBlob());
    b.cubin.assign(data, data + blob.getBytes());
    b.lowered_names = split(q.getColumn(1).getString(), '\n');
    b.resources_json = q.getColumn(2).getString();
    return b;
  } catch (const std::exception& e) {
    fail("reading the binary cache", e);
  }
}

void Database::put_binary(const std::string& key, const std::string& arch, const CachedBinary& b) {
  if (read_only()) return;
  try {
    std::string names;
    for (const auto& n : b.lowered_names) names += (names.empty() ? "" : "\n") + n;
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(
        *db_,
        "INSERT OR REPLACE INTO binaries(key, arch, lowered_names, resources, cubin, created_at) "
        "VALUES(?,?,?,?,?,?)");
    q.bind(1, key);
    q.bind(2, arch);
    q.bind(3, names);
    q.bind(4, b.resources_json);
    q.bind(5, b.cubin.data(), static_cast<int>(b.cubin.size()));
    q.bind(6, utc_now());
    q.exec();
    tx.commit();
  } catch (const std::exception& e) {
    fail("writing the binary cache", e);
  }
}

std::size_t Database::limit_binaries(std::uint64_t max_bytes) {
  if (read_only()) return 0;
  try {
    // length() of a blob reads its size from the record, not its pages.
    SQLite::Statement q(
        *db_, "SELECT key, length(cubin) FROM binaries ORDER BY created_at DESC, rowid DESC");
    std::uint64_t kept = 0;
    std::vector<std::string> old;
    while (q.executeStep()) {
      kept += static_cast<std::uint64_t>(q.getColumn(1).getInt64());
      if (kept > max_bytes) old.push_back(q.getColumn(0).getString());
    }
    if (old.empty()) return 0;
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement del(*db_, "DELETE FROM binaries WHERE key=?");
    for (const auto& key : old) {
      del.bind(1, key);
      del.exec();
      del.reset();
    }
    tx.commit();
    return old.size();
  } catch (const std::exception& e) {
    fail("trimming the binary cache", e);
  }
}

bool Database::has_binary(const std::string& key) {
  try {
    SQLite::Statement q(*db_, "SELECT 1 FROM binaries WHERE key=?");
    q.bind(1, key);
    return q.executeStep();
  } catch (const std::exception& e) {
    fail("reading the binary cache", e);
  }
}

std::int64_t Database::binary_count() {
  try {
    return db_->execAndGet("SELECT count(*) FROM binaries").getInt64();
  } catch (const std::exception& e) {
    fail("counting binaries", e);
  }
}

bool better_result(const ResultRecord& incoming, const ResultRecord& existing) {
  const bool incoming_own = incoming.origin != "shipped";
  const bool existing_own = existing.origin != "shipped";
  if (incoming_own != existing_own) return incoming_own;
  const bool incoming_ok = incoming.status == status::kOk;
  const bool existing_ok = existing.status == status::kOk;
  if (incoming_ok != existing_ok) return incoming_ok;
  return incoming_ok && incoming.time_median_ms < existing.time_median_ms;
}

MergeCounts Database::merge_results(const std::vector<ResultRecord>& rows) {
  MergeCounts counts;
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // Devices are matched by identity, never by id: ids of another file mean nothing here.
    std::map<std::tuple<std::string, int, int, int>, std::int64_t> device_ids;
    SQLite::Statement find_device(
        *db_, "SELECT id FROM devices WHERE name=? AND cc_major=? AND cc_minor=? AND sm_count=?");
    SQLite::Statement add_device(*db_,
                                 "INSERT INTO devices(name, cc_major, cc_minor, sm_count, uuid, "
                                 "driver_version, memory_clock_khz, memory_bus_bits, first_seen) "
                                 "VALUES(?,?,?,?,?,?,?,?,?)");
    // A device known here without its memory's clock and bus width takes those of the rows.
    SQLite::Statement fill_memory(*db_,
                                  "UPDATE devices SET memory_clock_khz=?, memory_bus_bits=? "
                                  "WHERE id=? AND (IFNULL(memory_clock_khz, 0) <= 0 OR "
                                  "IFNULL(memory_bus_bits, 0) <= 0)");
    SQLite::Statement existing(
        *db_,
        "SELECT status, time_median_ms, origin FROM results WHERE device_id=? AND family=? AND "
        "template_hash=? AND problem=? AND config=?");
    SQLite::Statement upsert(*db_, kUpsert);
    for (const ResultRecord& in : rows) {
      const DeviceRecord& d = in.device;
      auto identity = std::make_tuple(d.name, d.cc_major, d.cc_minor, d.sm_count);
      auto dev = device_ids.find(identity);
      if (dev == device_ids.end()) {
        find_device.reset();
        find_device.bind(1, d.name);
        find_device.bind(2, d.cc_major);
        find_device.bind(3, d.cc_minor);
        find_device.bind(4, d.sm_count);
        std::int64_t id = 0;
        const bool memory_known = d.memory_clock_khz > 0 && d.memory_bus_bits > 0;
        if (find_device.executeStep()) {
          id = find_device.getColumn(0).getInt64();
          if (memory_known) {
            fill_memory.reset();
            fill_memory.bind(1, d.memory_clock_khz);
            fill_memory.bind(2, d.memory_bus_bits);
            fill_memory.bind(3, id);
            fill_memory.exec();
          }
        } else {
          add_device.reset();
          add_device.bind(1, d.name);
          add_device.bind(2, d.cc_major);
          add_device.bind(3, d.cc_minor);
          add_device.bind(4, d.sm_count);
          add_device.bind(5, d.uuid);
          add_device.bind(6, d.driver_version);
          if (memory_known) {
            add_device.bind(7, d.memory_clock_khz);
            add_device.bind(8, d.memory_bus_bits);
          } else {
            add_device.bind(7);  // NULL: unknown
            add_device.bind(8);
          }
          add_device.bind(9, utc_now());
          add_device.exec();
          id = db_->getLastInsertRowid();
        }
        dev = device_ids.emplace(identity, id).first;
      }
      ResultRecord row = in;
      row.device_id = dev->second;
      row.run_id = 0;  // runs of another file are not ours
      existing.reset();
      existing.bind(1, static_cast<std::int64_t>(row.device_id));
      existing.bind(2, row.family);
      existing.bind(3, row.template_hash);
      existing.bind(4, row.problem);
      existing.bind(5, row.config);
      if (existing.executeStep()) {
        ResultRecord here;
        here.status = existing.getColumn(0).getString();
        here.time_median_ms = existing.getColumn(1).getDouble();
        here.origin = existing.getColumn(2).getString();
        if (!better_result(row, here)) {
          ++counts.kept;
          continue;
        }
        ++counts.replaced;
      } else {
        ++counts.added;
      }
      existing.reset();  // release the read cursor before writing the same table
      upsert.reset();
      upsert.clearBindings();
      bind_result(upsert, row);
      upsert.exec();
    }
    tx.commit();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("writing results from elsewhere", e);
  }
  return counts;
}

PruneCounts Database::prune_stale(const std::map<std::string, std::string>& current_hashes) {
  PruneCounts counts;
  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    // Stale: a family known here with another template hash. Rows of families this process
    // does not know (a family file not named) are kept.
    std::string current = "0", known = "''";
    for (std::size_t i = 0; i < current_hashes.size(); ++i) {
      current += " OR (family=? AND template_hash=?)";
      known += ",?";
    }
    current = "family IN (" + known + ") AND NOT (" + current + ")";
    auto bind_current = [&](SQLite::Statement& q) {
      int i = 1;
      for (const auto& entry : current_hashes) q.bind(i++, entry.first);
      for (const auto& [family, hash] : current_hashes) {
        q.bind(i++, family);
        q.bind(i++, hash);
      }
    };
    SQLite::Statement results(*db_, "DELETE FROM results WHERE " + current);
    bind_current(results);
    counts.results = static_cast<std::size_t>(results.exec());
    SQLite::Statement runs(*db_, "DELETE FROM runs WHERE " + current +
                                     " AND id NOT IN (SELECT run_id FROM results WHERE run_id "
                                     "IS NOT NULL)");
    bind_current(runs);
    counts.runs = static_cast<std::size_t>(runs.exec());
    counts.binaries = static_cast<std::size_t>(db_->exec("DELETE FROM binaries"));
    tx.commit();
  } catch (const std::exception& e) {
    fail("pruning stale results", e);
  }
  return counts;
}

CheckReport Database::check() {
  CheckReport report;
  try {
    std::vector<std::string> problems;
    SQLite::Statement integrity(*db_, "PRAGMA integrity_check(20)");
    while (integrity.executeStep()) {
      std::string line = integrity.getColumn(0).getString();
      if (line != "ok") problems.push_back(line);
    }
    SQLite::Statement foreign(*db_, "PRAGMA foreign_key_check");
    while (foreign.executeStep())
      problems.push_back("row " + foreign.getColumn(1).getString() + " of table " +
                         foreign.getColumn(0).getString() + " refers to a missing row of " +
                         foreign.getColumn(2).getString());
    if (version_ >= 5) {  // the table the triggers keep, against the rows it lists
      const char* const kOk =
          "SELECT DISTINCT family, template_hash, problem FROM results WHERE status = 'ok'";
      const char* const kListed = "SELECT family, template_hash, problem FROM measured_problems";
      const std::int64_t missing =
          db_->execAndGet(std::string("SELECT count(*) FROM (") + kOk + " EXCEPT " + kListed + ")")
              .getInt64();
      const std::int64_t extra =
          db_->execAndGet(std::string("SELECT count(*) FROM (") + kListed + " EXCEPT " + kOk + ")")
              .getInt64();
      if (missing > 0 || extra > 0)
        problems.push_back("the table measured_problems lacks " + std::to_string(missing) +
                           " problem(s) with an ok result and lists " + std::to_string(extra) +
                           " without one");
    }
    if (!problems.empty()) {
      std::string all;
      for (const auto& p : problems) all += p + "\n";
      const std::string count = std::to_string(problems.size());
      throw Error(ErrorCode::kDatabase,
                  "database " + path_ + ": the file is damaged (" + count +
                      " problem(s), first: " + problems.front() + ")",
                  all);
    }
    report.schema_version = schema_version();
    report.application_id = db_->execAndGet("PRAGMA application_id").getInt();
    auto count = [&](const char* sql) { return db_->execAndGet(sql).getInt64(); };
    report.devices = count("SELECT count(*) FROM devices");
    report.runs = count("SELECT count(*) FROM runs");
    report.results = count("SELECT count(*) FROM results");
    report.ok = count("SELECT count(*) FROM results WHERE status='ok'");
    report.in_flight = count("SELECT count(*) FROM results WHERE status='in_flight'");
    report.binaries = count("SELECT count(*) FROM binaries");
    SQLite::Statement templates(
        *db_, "SELECT family, template_hash, count(*) FROM results GROUP BY family, template_hash");
    while (templates.executeStep())
      report.results_by_template[{templates.getColumn(0).getString(),
                                  templates.getColumn(1).getString()}] =
          templates.getColumn(2).getInt64();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail("checking integrity", e);
  }
  return report;
}

}  // namespace ktune
