// Results between databases and files: JSON export/import, merge, stale pruning, integrity check,
// and the shipped presets. Parameters and measurements only: binaries never leave or enter.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/database.hpp"

namespace ktune {

// The document: {"format": "ktune-results", "version": 1, "exported_at", "tool_version",
// "results": [...]}; db/presets/README.md describes each field of a result.
inline constexpr const char* kExchangeFormat = "ktune-results";
inline constexpr int kExchangeVersion = 1;

struct ExportOptions {
  std::string family;  // empty: every family
  // false: ok rows of the current templates (what a lookup can use); true: every row, any status,
  // stale templates included.
  bool all = false;
  // Only the best ok result per (device, family, problem) of the current templates: what the
  // lookups answer with (the form of the shipped presets). Excludes `all`.
  bool best = false;
  // Only the database's own measurements, not the shipped presets it loaded (origin `shipped`).
  bool own = false;
  // One result per line with its identity, configuration text and times only (no parameters
  // object, resources or versions): for large sets of measurements shipped as presets.
  bool compact = false;
};

struct ExportResult {
  std::string json;
  std::size_t results = 0;
};

ExportResult export_results(Database& db, const ExportOptions& options);

// A document checked entry by entry; nothing written yet.
struct ParsedResults {
  std::vector<ResultRecord> rows;  // to write: canonical keys, device identity in r.device
  std::size_t entries = 0;
  // Entries of another template version: checked for form, not imported (their parameter space
  // is not the one this ktune knows, and lookups would ignore them), except as `seeds`.
  std::size_t stale = 0;
  // Ok entries of another template version kept with `keep_stale` (counted in `stale` too, and
  // in `rows`): lookups never answer with them; the tuner evaluates them first when it re-tunes
  // their problem, as it does with the database's own rows of earlier templates.
  std::size_t seeds = 0;
  // Entries still in flight where they were exported: no outcome, not imported.
  std::size_t in_flight = 0;
  // Kernel Tuner failures of configurations the family refuses as well: nothing to record.
  std::size_t skipped = 0;
};

// Parses and validates the whole document. Throws Error(kInvalidArgument) starting with `what`
// and naming the entry and field: "import f.json: results[3].config: gemm config: unknown
// parameter FOO". Safe on hostile input: depth, size and entry count are bounded.
ParsedResults parse_results(std::string_view text, const std::string& what,
                            bool keep_stale = false);

struct ImportSummary {
  std::size_t entries = 0, stale = 0, in_flight = 0;
  std::size_t seeds = 0;  // stale ok rows written as re-tuning seeds (shipped presets only)
  MergeCounts written;
};

// Validates everything, then writes all rows in one transaction (origin "imported", or
// "shipped"; source as given), keeping the better row per key (better_result).
ImportSummary import_results(Database& db, std::string_view text, const std::string& what,
                             const std::string& source, bool shipped);
// The same for a file; source "import:<absolute path>". A missing or unreadable file is
// Error(kInvalidArgument).
ImportSummary import_file(Database& db, const std::string& path, bool shipped);

// An import in two steps, so that a command validates the whole file before it opens (and
// perhaps creates) the database: read_import() reads and checks, write_import() writes.
struct ImportSource {
  ParsedResults parsed;
  std::string source;  // "import:<absolute path>" or "import:stdin"
  bool shipped = false;
};
ImportSource read_import(const std::string& path, bool shipped);
ImportSummary write_import(Database& db, ImportSource import);

// Kernel Tuner's cache file (`tune_kernel(..., cache=FILE)`, the JSON Kernel Tuner appends each
// measured configuration to) as an import for a ktune family whose parameters match: one entry
// per configuration, checked like any import (parameters and values, the family's constraints for
// the device, the problem), so that Kernel Tuner users deploy their tuning through ktune's
// runtime. Kernel Tuner records neither the compute capability nor the SM count: the caller
// gives them.
struct KernelTunerImport {
  std::string family;       // the ktune family (a family file's, usually)
  std::string problem;      // the family's problem key the cache was tuned on
  std::string device_name;  // empty: the cache's device_name
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::map<std::string, std::string> rename;  // Kernel Tuner parameter -> the family's parameter
};
// Reads and checks the cache; nothing is written. Errors (Error(kInvalidArgument)) name the file,
// the configuration's key in the cache and the field.
ImportSource read_kerneltuner(const std::string& path, const KernelTunerImport& options);
// The same for the text of a cache (errors start with `what`); source left empty.
ImportSource parse_kerneltuner(std::string_view text, const std::string& what,
                               const KernelTunerImport& options);

struct MergeSummary {
  std::size_t rows = 0, stale = 0, in_flight = 0;
  MergeCounts written;
};

// The rows of another ktune database, read and checked like an import, nothing written yet.
struct MergeSource {
  std::string path;
  std::vector<ResultRecord> rows;  // to write, source "merge:<absolute path>"
  MergeSummary summary;            // rows, stale, in_flight counted
};

// Opens another ktune database read-only (never its binaries), refusing one whose tables are
// not ktune's (views, triggers), one beyond the limits of an import (rows, bytes of text), and
// `target_path` itself; checks every row like an import. Errors name the file and the row.
MergeSource read_merge_source(const std::string& other_path, const std::string& target_path);
// Writes what read_merge_source() found, in one transaction.
MergeSummary write_merge(Database& db, const MergeSource& source);
// Both: merges the results of another ktune database into `db`.
MergeSummary merge_database(Database& db, const std::string& other_path);

// Removes results of template versions other than the current ones (and of families that no
// longer exist), their orphaned runs, and the binary cache.
PruneCounts prune_stale(Database& db);

struct CheckSummary {
  CheckReport report;
  std::int64_t stale = 0;  // rows of another template version of a family known here
  // Rows of families this process does not know (a family file not named): never stale, never
  // pruned; the family's file makes them readable again.
  std::int64_t other_families = 0;
};

// Integrity, foreign keys, schema, counts. Throws Error(kDatabase) when the file is damaged.
CheckSummary check_database(Database& db);

struct PresetSummary {
  std::size_t presets = 0;           // files offered
  std::size_t loaded = 0;            // files imported
  std::size_t rows = 0;              // rows written, seeds included
  std::size_t seeds = 0;             // of those, ok rows of earlier templates (re-tuning seeds)
  std::vector<std::string> skipped;  // "name: why" of each file that failed validation
};

// Imports presets (name, JSON text) as shipped results, each file all or nothing: one that fails
// validation is skipped, not an error. Ok entries of an earlier template version are kept as
// re-tuning seeds: lookups ignore them, and `ktune tune` of their problem evaluates them first,
// so a re-tune after an upgrade starts from the shipped winners. Database errors still throw.
PresetSummary load_presets(Database& db,
                           const std::vector<std::pair<std::string, std::string_view>>& presets);
// The presets embedded at build time from db/presets/*.json; the digest (the SHA-256 of the text,
// computed at build time) is recorded in the database when a preset is loaded.
struct ShippedPreset {
  std::string name;
  std::string_view text;
  std::string_view digest;
};
std::vector<ShippedPreset> shipped_presets();
// Loads every shipped preset this database has not loaded in its current form: all of them into
// a new database, and after an upgrade of ktune the presets that changed. Nothing for a
// read-only database.
PresetSummary load_new_presets(Database& db);

// A database for a command that writes: created with its folder when missing, migrated, and
// given the shipped presets it lacks (`loaded` says what went in). Errors name the file.
std::unique_ptr<Database> open_for_writing(const std::string& path,
                                           PresetSummary* loaded = nullptr);
// A database for a command that only reads: the file read-only (never migrated or written, and
// readable in a folder this process cannot write). When there is no file, an in-memory database
// holding the shipped presets answers instead, and nothing is created: a fresh machine sees what
// ktune ships.
std::unique_ptr<Database> open_for_reading(const std::string& path);
// The database an application's Runtime reads. Missing: created with the shipped presets; where
// it cannot be (a read-only home), the presets from memory. Present: read-write when this
// process can write it (migrated, newer presets loaded, and the binaries the Runtime compiles
// kept for the next process), else read-only. Present but unusable (not a ktune database,
// damaged, a FIFO): never touched; `warn` hears why, and the presets from memory answer.
// `need_write` (tune-on-miss): anything but a writable file is Error(kInvalidArgument) instead.
std::unique_ptr<Database> open_for_runtime(const std::string& path, bool need_write,
                                           const std::function<void(const std::string&)>& warn);
// In memory, holding the shipped presets (what a new database starts with).
std::unique_ptr<Database> shipped_database();

}  // namespace ktune
