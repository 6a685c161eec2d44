// ktune db subcommands: export, import, merge, prune, check; each prints a one-line summary.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "ktune/error.hpp"

namespace ktune::cli {
namespace fs = std::filesystem;

namespace {

// A database written to; when this open created it, the shipped presets go in first (as for
// tune and the runtime), so that a later import or merge competes with them like anywhere else.
std::unique_ptr<Database> open_for_writing(const Common& common) {
  auto db = std::make_unique<Database>(common.resolved_db());
  PresetSummary p = load_presets_if_new(*db);
  if (p.presets > 0 && !common.quiet)
    std::cerr << "ktune: new database " << db->path() << ": " << p.rows
              << " shipped result(s) loaded from " << p.loaded << " of " << p.presets
              << " preset(s)"
              << (p.seeds ? " (" + std::to_string(p.seeds) +
                                " of earlier templates, kept as re-tuning seeds only)"
                          : std::string())
              << "\n";
  return db;
}

void require_existing(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorCode::kDatabase, "database " + path + ": no such file");
}

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

int cmd_db_export(const Common& common, const std::string& family, bool all, bool best,
                  const std::string& output) {
  const std::string path = common.resolved_db();
  Database db(path, Database::Mode::kReadOnly);
  ExportOptions options;
  options.family = family;
  options.all = all;
  options.best = best;
  ExportResult out = export_results(db, options);
  const std::string what = std::to_string(out.results) + " result(s) (" +
                           (all    ? "every row"
                            : best ? "the best per device and problem"
                                   : "ok rows of the current templates") +
                           (family.empty() ? "" : ", family " + family) + ") from " + path;
  if (output.empty() || output == "-") {
    std::cout << out.json << std::flush;
    if (!common.quiet) std::cerr << "ktune: exported " << what << "\n";
    return kExitOk;
  }
  // Written beside the target and renamed: a failed export never leaves half a file behind.
  const std::string tmp = output + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file)
      throw Error(ErrorCode::kInvalidArgument,
                  "-o: cannot write " + tmp + ": " + std::strerror(errno));
    file << out.json;
    file.flush();
    if (!file) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(ErrorCode::kInvalidArgument, "-o: writing " + tmp + " failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, output, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::kInvalidArgument, "-o: cannot create " + output + ": " + ec.message());
  }
  std::cout << "exported " << what << " to " << output << "\n";
  return kExitOk;
}

int cmd_db_import(const Common& common, const std::string& file, bool shipped) {
  auto db = open_for_writing(common);
  ImportSummary s = import_file(*db, file, shipped);
  std::cout << "imported " << (file == "-" ? "stdin" : file) << " into " << db->path() << " as "
            << (shipped ? "shipped" : "imported") << ": " << s.entries << " entr"
            << (s.entries == 1 ? "y" : "ies") << "; " << counts_text(s.written)
            << skipped_text(s.stale, s.in_flight) << "\n";
  return kExitOk;
}

int cmd_db_merge(const Common& common, const std::string& other) {
  auto db = open_for_writing(common);
  MergeSummary s = merge_database(*db, other);
  std::cout << "merged " << other << " into " << db->path() << ": " << s.rows << " row(s); "
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
  require_existing(path);
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
  if (r.in_flight > 0 && !common.quiet)
    std::cerr << "ktune: rows in flight belong to a tuning run that is going on or died; the "
                 "next tune of the same problem records them as crashed\n";
  return kExitOk;
}

}  // namespace ktune::cli
