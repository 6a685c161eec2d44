// The tuning database: one SQLite file (WAL) of devices, runs, one row per candidate, binaries.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "platform/device.hpp"
#include "platform/kernel_cache.hpp"

namespace SQLite {
class Database;
}

namespace ktune {

// Result status, as stored. in_flight is written before a candidate runs; a row still in flight
// when its run is resumed was the one running when the process died, and becomes crashed.
namespace status {
inline constexpr const char* kOk = "ok";
inline constexpr const char* kCompileError = "compile_error";
inline constexpr const char* kLaunchError = "launch_error";
inline constexpr const char* kFault = "fault";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kWrongResult = "wrong_result";
inline constexpr const char* kInvalid = "invalid";
inline constexpr const char* kInFlight = "in_flight";
inline constexpr const char* kCrashed = "crashed";
}  // namespace status

struct DeviceRecord {
  std::int64_t id = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  std::string uuid;
  int driver_version = 0;
  // The memory's clock and bus width as the driver gave them where the GPU was measured (0:
  // unknown): a model of memory-bound time reads the bandwidth from them, and a lookup made without
  // the GPU (ktune explain --gpu) needs them to answer as the runtime on that GPU does.
  int memory_clock_khz = 0;
  int memory_bus_bits = 0;
  std::string identity() const;
};

struct ResultRecord {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t device_id = 0;
  std::string family;
  std::string template_hash;
  std::string problem;
  std::string config;
  std::string status;
  double time_min_ms = 0, time_median_ms = 0, time_max_ms = 0;
  int repeats = 0;
  double metric = 0;
  std::string unit;
  int registers = -1;
  int spill_bytes = 0;
  int smem_bytes = 0;
  double compile_ms = 0;
  std::string message;
  std::string origin = "tuned";  // tuned | shipped | imported
  // Where a row from elsewhere came from ("import:FILE", "merge:FILE", "preset:NAME"); empty for
  // rows measured here.
  std::string source;
  std::string tool_version;
  std::string nvrtc_version;
  int driver_version = 0;
  std::string created_at;
  DeviceRecord device;  // filled by queries that join devices
};

// The ok results the lookup's model ranks from (Database::measurements), each with what it reads
// alone: a ResultRecord is 576 bytes and three allocations a row, which a first call's few hundred
// rows faulted in.
struct Measurements {
  struct Row {
    std::int64_t id = 0;
    std::size_t problem = 0;               // its index in the problems asked for
    const DeviceRecord* device = nullptr;  // in `devices`
    double time_median_ms = 0;
    double metric = 0;
    bool shipped = false;  // origin "shipped"
    std::string config;
    std::string unit;
  };
  std::vector<DeviceRecord> devices;  // id, name, compute capability, SMs
  std::vector<Row> rows;

  Measurements() = default;
  Measurements(Measurements&&) = default;  // the rows point into `devices`: moved, not copied
  Measurements& operator=(Measurements&&) = default;
  Measurements(const Measurements&) = delete;
  Measurements& operator=(const Measurements&) = delete;
};

struct RunRecord {
  std::int64_t id = 0;
  std::int64_t device_id = 0;
  std::string family, template_hash, problem, strategy, budget, status, started_at, finished_at;
  std::int64_t seed = 0;
  int gpu_ordinal = -1;  // the physical GPU measured on (-1: not recorded, e.g. a replay)
  std::string gpu_uuid;
};

// What merge_results did with the rows it was given.
struct MergeCounts {
  std::size_t added = 0;     // key absent here: inserted
  std::size_t replaced = 0;  // key present, the incoming row was better
  std::size_t kept = 0;      // key present, the row here was as good or better
};

struct PruneCounts {
  std::size_t results = 0;   // rows of another template version or of a family that is gone
  std::size_t runs = 0;      // runs of those template versions that no result refers to
  std::size_t binaries = 0;  // the whole binary cache (rebuilt on use)
};

struct CheckReport {
  int schema_version = 0;
  int application_id = 0;
  std::int64_t devices = 0, runs = 0, results = 0, ok = 0, in_flight = 0, binaries = 0;
  // Result rows per (family, template hash), to tell current rows from stale ones.
  std::map<std::pair<std::string, std::string>, std::int64_t> results_by_template;
};

// True when `incoming` should replace `existing` (same key): rows measured by the user (tuned,
// imported, merged) beat shipped ones, then an ok row beats a failed one, then the lower median
// time wins. Ties keep the existing row.
bool better_result(const ResultRecord& incoming, const ResultRecord& existing);

struct ResultFilter {
  std::string family;          // empty: any
  std::string problem;         // empty: any
  std::int64_t device_id = 0;  // 0: any
  std::int64_t run_id = 0;     // 0: any
  bool ok_only = false;
  std::size_t newest = 0;  // > 0: only the newest this many rows, newest first
};

class Database final : public BinaryStore {
 public:
  static constexpr int kSchemaVersion = 7;
  static constexpr int kApplicationId = 0x6b74756e;  // "ktun"

  // kMemory: a private database in memory (path() is a label for messages), created empty.
  enum class Mode { kReadWrite, kReadOnly, kMemory };
  // Opens (creating the file and its directory in read-write mode) and migrates the schema.
  // Throws Error(kDatabase) naming the file: not a regular file (a FIFO would block the open for
  // ever), not a database, another application's, corrupt, a schema version ktune never wrote,
  // not writable. The file's identity is checked before anything is written to it: a refused
  // file is left exactly as it was. Read-only opens work in folders this process cannot write.
  explicit Database(const std::string& path, Mode mode = Mode::kReadWrite);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& path() const { return path_; }
  bool read_only() const { return mode_ == Mode::kReadOnly; }
  bool in_memory() const { return mode_ == Mode::kMemory; }
  int schema_version();
  // True when this open created the schema in an empty file (the moment to load shipped presets).
  bool created() const { return created_; }
  // Things the user should hear about once, noted while opening (a network filesystem's journal).
  const std::vector<std::string>& notices() const { return notices_; }

  // Shipped presets this database holds, by name: the digest of the file's text when it was
  // loaded (empty for a file of an earlier schema).
  std::map<std::string, std::string> preset_digests();
  void record_preset(const std::string& name, const std::string& digest);

  // Devices. ensure_device records the memory's clock and bus width where the row has none (a row
  // of shipped results or of an earlier version).
  std::int64_t ensure_device(const DeviceInfo& info);
  std::optional<DeviceRecord> find_device(const DeviceInfo& info);
  std::vector<DeviceRecord> devices();

  // Runs
  std::int64_t begin_run(const RunRecord& run);
  void finish_run(std::int64_t run_id, const std::string& status);
  std::vector<RunRecord> runs();
  std::optional<RunRecord> find_run(std::int64_t id);  // nullopt: no such run

  // Results: one row per (device, family, template hash, problem, config).
  // Inserts the row as in_flight, committed before the candidate runs; returns its id.
  std::int64_t mark_in_flight(const ResultRecord& r);
  // Writes the measured outcome into the row (committed at once).
  void store_result(const ResultRecord& r);
  // Inserts or replaces a whole row (import, shipped presets, tests).
  std::int64_t put_result(const ResultRecord& r);
  // Rows still in flight for this key set become crashed; returns how many.
  int mark_crashed(std::int64_t device_id, const std::string& family,
                   const std::string& template_hash, const std::string& problem);
  // Configurations already evaluated (any status) for this key set. With `or_measured`, also
  // those that an ok row from elsewhere (shipped, imported) measured on this device: for
  // `ktune tune --measure-winners`, which wants a measurement of each pair, whoever made it.
  std::set<std::string> evaluated_configs(std::int64_t device_id, const std::string& family,
                                          const std::string& template_hash,
                                          const std::string& problem, bool or_measured = false);
  std::vector<ResultRecord> results(const ResultFilter& filter);
  // How much results() of every row would read: (rows, bytes of text), without reading them.
  std::pair<std::int64_t, std::int64_t> result_volume();
  // Best ok result per (device, family, problem) for the given template hash (all when empty),
  // of one device and one problem where given. The user's own results take precedence over
  // shipped ones. `per_problem`: the best that many of each (0: every ok row), best first.
  std::vector<ResultRecord> best_results(const std::string& family,
                                         const std::string& template_hash,
                                         std::int64_t device_id = 0,
                                         const std::string& problem = "", int per_problem = 1);
  // The problems with an ok result of one family and template hash, in byte order (std::string's
  // order: the lookup binary-searches them): from the table of them that triggers keep (schema
  // v5), or in an older file open read-only through the index.
  std::vector<std::string> measured_problems(const std::string& family,
                                             const std::string& template_hash);
  // Every ok result of one family and template hash for these problems, the problems' in the
  // order given, each problem's in no order: the measurements the lookup's model ranks from.
  Measurements measurements(const std::string& family, const std::string& template_hash,
                            const std::vector<std::string>& problems);
  // The `limit` best ok results of one problem on one device (name, compute capability, SMs),
  // the user's own before shipped ones: the runtime's exact lookup, through the index.
  std::vector<ResultRecord> best_results_for_problem(const std::string& family,
                                                     const std::string& template_hash,
                                                     const std::string& problem,
                                                     const DeviceInfo& device, int limit);

  // Binary cache
  // The binary cache (KernelCache's store): nothing is written to a read-only database.
  std::optional<CachedBinary> find_binary(const std::string& key) override;
  void put_binary(const std::string& key, const std::string& arch,
                  const CachedBinary& binary) override;
  bool accepts_binaries() const override { return !read_only(); }
  std::int64_t binary_count();
  // Whether the cache holds this key (without reading the binary).
  bool has_binary(const std::string& key);
  // Keeps the binary cache within `max_bytes` of code, removing the oldest binaries first (they
  // compile again on use). Returns how many were removed; nothing on a read-only database.
  std::size_t limit_binaries(std::uint64_t max_bytes);

  // Rows from elsewhere (import, merge, presets), written in one transaction: each row's device is
  // found or created by the identity in r.device (r.device_id is ignored), run ids are dropped,
  // and a row whose key exists replaces it only when better_result() says so.
  MergeCounts merge_results(const std::vector<ResultRecord>& rows);
  // Deletes results whose template hash is not `current_hashes[family]` (families missing from
  // the map are gone), their orphaned runs, and the binary cache. One transaction.
  PruneCounts prune_stale(const std::map<std::string, std::string>& current_hashes);
  // integrity_check and foreign_key_check, then counts. Throws Error(kDatabase) naming the file
  // and the first problems when the file is damaged.
  CheckReport check();

 private:
  std::vector<RunRecord> read_runs(std::int64_t id);  // id 0: every run
  void open_file();
  void check_identity();
  void choose_journal();
  void migrate();
  [[noreturn]] void fail(const std::string& what, const std::exception& e) const;

  std::string result_columns() const;
  std::string device_select() const;  // SELECT of read_device's columns FROM devices

  std::string path_;
  Mode mode_;
  int version_ = 0;  // schema version of the file (older than current only when read-only)
  bool created_ = false;
  std::vector<std::string> notices_;
  std::unique_ptr<SQLite::Database> db_;
};

// $KTUNE_DB, else $XDG_CACHE_HOME/ktune/tuning.db, else $HOME/.cache/ktune/tuning.db.
std::string database_default_path();

// The name of the network filesystem holding `folder` (NFS, CIFS, Lustre, GPFS...), or "" for a
// local one. SQLite's WAL needs shared memory between processes, which these do not give:
// databases there use a rollback journal. $KTUNE_DB_JOURNAL=delete or =wal overrides the choice.
std::string network_filesystem(const std::string& folder);

}  // namespace ktune
