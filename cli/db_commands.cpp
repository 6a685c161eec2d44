// ktune db subcommands: export, import, merge, prune, check; each prints a one-line summary.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "ktune/error.hpp"

namespace ktune::cli {
namespace fs = std::filesystem;

namespace {

// A database written to: when this open creates it, the shipped presets go in first (as for tune
// and the runtime), so that a later import or merge competes with them like anywhere else. When
// the command then fails, the file it created is removed: a failed command creates nothing.
class WriteTarget {
 public:
  explicit WriteTarget(const Common& common) : path_(common.resolved_db()) {
    std::error_code ec;
    existed_ = fs::exists(fs::symlink_status(path_, ec));
    PresetSummary loaded;
    db_ = open_for_writing(path_, &loaded);
    report_presets(*db_, loaded, common.quiet);
  }
  ~WriteTarget() {
    if (done_ || existed_) return;
    db_.reset();
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(path_ + suffix, ec);
  }
  WriteTarget(const WriteTarget&) = delete;
  WriteTarget& operator=(const WriteTarget&) = delete;
  Database& db() { return *db_; }
  void done() { done_ = true; }

 private:
  std::string path_;
  bool existed_ = false;
  bool done_ = false;
  std::unique_ptr<Database> db_;
};

std::string counts_text(const MergeCounts& c) {
  return std::to_string(c.added) + " added, " + std::to_string(c.replaced) + " replaced, " +
         std::to_string(c.kept) + " kept (the row here was as good or better)";
}

std::string skipped_text(std::size_t stale, std::size_t in_flight) {
  std::string out;
  if (stale)
    out += "; " + std::to_string(stale) +
           " skipped: measured with another template version (not in this ktune's space)";
  if (in_flight)
    out += "; " + std::to_string(in_flight) + " skipped: still in flight where they came from";
  return out;
}

}  // namespace

int cmd_db_export(const Common& common, const std::string& family, bool all, bool best, bool own,
                  bool compact, const std::string& output) {
  const std::string path = common.resolved_db();
  auto db = open_for_reading(path);
  ExportOptions options;
  options.family = family;
  options.all = all;
  options.best = best;
  options.own = own;
  options.compact = compact;
  ExportResult out = export_results(*db, options);
  const std::string what = std::to_string(out.results) + " result(s) (" +
                           (all    ? "every row"
                            : best ? "the best per device and problem"
                                   : "ok rows of the current templates") +
                           (own ? ", measured here" : "") +
                           (family.empty() ? "" : ", family " + family) + ") from " + db->path();
  if (db->in_memory() && !common.quiet)
    std::cerr << "ktune: no database at " << path << ": exporting the shipped results\n";
  write_output(output.empty() ? "-" : output, out.json, "db export -o", {path});
  if (output.empty() || output == "-" || output == "/dev/stdout") {
    if (!common.quiet) std::cerr << "ktune: exported " << what << "\n";
  } else {
    std::cout << "exported " << what << " to " << output << "\n";
  }
  return kExitOk;
}

int cmd_db_import(const Common& common, const std::string& file, bool shipped) {
  // The whole file is read and checked before the database is opened (or created).
  ImportSource import = read_import(file, shipped);
  WriteTarget target(common);
  ImportSummary s = write_import(target.db(), std::move(import));
  target.done();
  std::cout << "imported " << (file == "-" ? "stdin" : file) << " into " << target.db().path()
            << " as " << (shipped ? "shipped" : "imported") << ": " << s.entries << " entr"
            << (s.entries == 1 ? "y" : "ies") << "; " << counts_text(s.written)
            << skipped_text(s.stale, s.in_flight) << "\n";
  return kExitOk;
}

int cmd_db_import_kerneltuner(const Common& common, const std::string& file,
                              const KernelTunerImport& options) {
  // The whole cache is read, converted and checked before the database is opened (or created).
  ImportSource import = read_kerneltuner(file, options);
  const std::size_t skipped = import.parsed.skipped;
  WriteTarget target(common);
  ImportSummary s = write_import(target.db(), std::move(import));
  target.done();
  std::cout << "imported Kernel Tuner cache " << file << " into " << target.db().path() << " as "
            << options.family << " " << options.problem << ": " << s.entries << " configuration"
            << (s.entries == 1 ? "" : "s") << "; " << counts_text(s.written);
  if (skipped)
    std::cout << "; " << skipped << " Kernel Tuner failure" << (skipped == 1 ? "" : "s")
              << " of configurations " << options.family << " refuses anyway not recorded";
  std::cout << "\n";
  return kExitOk;
}

int cmd_db_merge(const Common& common, const std::string& other) {
  // The other database is read and every row checked before this one is opened (or created).
  MergeSource source = read_merge_source(other, common.resolved_db());
  WriteTarget target(common);
  MergeSummary s = write_merge(target.db(), source);
  target.done();
  std::cout << "merged " << other << " into " << target.db().path() << ": " << s.rows << " row(s); "
            << counts_text(s.written) << skipped_text(s.stale, s.in_flight)
            << "; binaries are never merged\n";
  return kExitOk;
}

int cmd_db_prune(const Common& common, bool stale) {
  if (!stale)
    throw Error(ErrorCode::kInvalidArgument,
                "db prune: say what to prune: --stale (results of templates that changed since "
                "they were measured, their runs, and the binary cache)");
  const std::string path = common.resolved_db();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw Error(ErrorCode::kDatabase, "database " + path + ": no such file");
  Database db(path);
  PruneCounts c = prune_stale(db);
  std::cout << "pruned " << db.path() << ": " << c.results << " stale result(s), " << c.runs
            << " run(s), " << c.binaries << " cached binar" << (c.binaries == 1 ? "y" : "ies")
            << " (compiled again on use)\n";
  return kExitOk;
}

int cmd_db_check(const Common& common) {
  const std::string path = common.resolved_db();
  // Read-only: checking never migrates or repairs anything.
  Database db(path, Database::Mode::kReadOnly);
  CheckSummary s = check_database(db);
  const CheckReport& r = s.report;
  std::cout << db.path() << ": ok (integrity and foreign keys; schema v" << r.schema_version
            << (r.schema_version < Database::kSchemaVersion ? ", migrated on the next write" : "")
            << "; " << r.devices << " device(s), " << r.results << " result(s): " << r.ok << " ok, "
            << s.stale << " stale, " << r.in_flight << " in flight; " << r.runs << " run(s), "
            << r.binaries << " cached binar" << (r.binaries == 1 ? "y" : "ies") << ")\n";
  if (s.other_families > 0 && !common.quiet)
    std::cerr << "ktune: " << s.other_families
              << " result(s) belong to families not loaded here (kept; name their family file "
                 "with --family-file to read them)\n";
  if (r.in_flight > 0 && !common.quiet)
    std::cerr << "ktune: rows in flight belong to a tuning run that is going on or died; the "
                 "next tune of the same problem records them as crashed\n";
  return kExitOk;
}

}  // namespace ktune::cli
