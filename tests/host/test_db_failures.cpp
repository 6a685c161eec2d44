// Host tests: the database under hostile conditions: a read-only directory, and a disk that
// fills up mid-run (a SQLite VFS shim registered as the default fails writes with SQLITE_FULL
// past a byte budget). Each gives a clear error naming the file and damages nothing stored.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "db/database.hpp"
#include "ktune/error.hpp"
#include "temp_dir.hpp"

namespace ktune {
namespace {

namespace fs = std::filesystem;

DeviceInfo test_device() {
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.limits = DeviceLimits::for_arch(9, 0);
  d.limits.sm_count = 132;
  return d;
}

ResultRecord row(std::int64_t device, int i) {
  ResultRecord r;
  r.device_id = device;
  r.family = "elementwise";
  r.template_hash = "0123456789abcdef";
  r.problem = "align=16;dtype=f32;n=1024;op=copy";
  r.config = "BLOCK=" + std::to_string(i);
  r.status = "ok";
  r.time_median_ms = 1 + i;
  r.message = std::string(512, 'x');  // rows of some size, so the budget runs out
  return r;
}

void expect_unwritable(const std::string& path) {
  try {
    Database db(path);
    db.ensure_device(test_device());
    FAIL() << "wrote " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDatabase);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(DbFailures, ReadOnlyLocationIsAClearErrorNamingTheFile) {
  // /proc takes no new files, for root too.
  expect_unwritable("/proc/ktune-test/tuning.db");
  if (geteuid() == 0) return;  // root ignores directory permissions: /proc covered it
  testing::TempDir dir;
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  expect_unwritable((locked / "tuning.db").string());
}

// A VFS that forwards to the default one and fails writes once `budget` bytes were written.
std::atomic<long long> g_budget{-1};
sqlite3_vfs* g_base = nullptr;
sqlite3_vfs g_full_vfs;
sqlite3_io_methods g_methods;
const sqlite3_io_methods* g_base_methods = nullptr;

struct ShimFile {
  sqlite3_file base;   // our methods
  sqlite3_file* real;  // the default VFS's file, allocated after this struct
};

int shim_write(sqlite3_file* f, const void* data, int amount, sqlite3_int64 offset) {
  if (g_budget >= 0 && (g_budget -= amount) < 0) return SQLITE_FULL;
  auto* s = reinterpret_cast<ShimFile*>(f);
  return s->real->pMethods->xWrite(s->real, data, amount, offset);
}

int shim_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* s = reinterpret_cast<ShimFile*>(f);
  s->real = reinterpret_cast<sqlite3_file*>(s + 1);
  const int rc = g_base->xOpen(g_base, name, s->real, flags, out_flags);
  if (rc != SQLITE_OK) {
    s->base.pMethods = nullptr;
    return rc;
  }
  if (!g_base_methods) {
    g_base_methods = s->real->pMethods;
    g_methods = *g_base_methods;
    // Every method forwards to the real file, except writes, which may fail.
    g_methods.xClose = [](sqlite3_file* file) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xClose(shim->real);
    };
    g_methods.xRead = [](sqlite3_file* file, void* p, int n, sqlite3_int64 o) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xRead(shim->real, p, n, o);
    };
    g_methods.xWrite = shim_write;
    g_methods.xTruncate = [](sqlite3_file* file, sqlite3_int64 size) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xTruncate(shim->real, size);
    };
    g_methods.xSync = [](sqlite3_file* file, int flags) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xSync(shim->real, flags);
    };
    g_methods.xFileSize = [](sqlite3_file* file, sqlite3_int64* size) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xFileSize(shim->real, size);
    };
    g_methods.xLock = [](sqlite3_file* file, int lock) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xLock(shim->real, lock);
    };
    g_methods.xUnlock = [](sqlite3_file* file, int lock) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xUnlock(shim->real, lock);
    };
    g_methods.xCheckReservedLock = [](sqlite3_file* file, int* out) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xCheckReservedLock(shim->real, out);
    };
    g_methods.xFileControl = [](sqlite3_file* file, int op, void* arg) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xFileControl(shim->real, op, arg);
    };
    g_methods.xSectorSize = [](sqlite3_file* file) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xSectorSize(shim->real);
    };
    g_methods.xDeviceCharacteristics = [](sqlite3_file* file) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xDeviceCharacteristics(shim->real);
    };
    g_methods.xShmMap = [](sqlite3_file* file, int page, int size, int extend, void volatile** p) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xShmMap(shim->real, page, size, extend, p);
    };
    g_methods.xShmLock = [](sqlite3_file* file, int offset, int n, int flags) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xShmLock(shim->real, offset, n, flags);
    };
    g_methods.xShmBarrier = [](sqlite3_file* file) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      shim->real->pMethods->xShmBarrier(shim->real);
    };
    g_methods.xShmUnmap = [](sqlite3_file* file, int del) {
      auto* shim = reinterpret_cast<ShimFile*>(file);
      return shim->real->pMethods->xShmUnmap(shim->real, del);
    };
    g_methods.xFetch = nullptr;  // no memory-mapped reads through the shim
    g_methods.xUnfetch = nullptr;
    g_methods.iVersion = 2;
  }
  s->base.pMethods = &g_methods;
  return SQLITE_OK;
}

class FullDisk {
 public:
  FullDisk() {
    g_base = sqlite3_vfs_find(nullptr);
    g_full_vfs = *g_base;
    g_full_vfs.zName = "ktune-full-disk";
    g_full_vfs.szOsFile = static_cast<int>(sizeof(ShimFile)) + g_base->szOsFile;
    g_full_vfs.xOpen = shim_open;
    g_full_vfs.pAppData = nullptr;
    sqlite3_vfs_register(&g_full_vfs, 1);  // the default from now on
  }
  ~FullDisk() {
    sqlite3_vfs_unregister(&g_full_vfs);
    g_budget = -1;
  }
};

TEST(DbFailures, DiskFullMidRunIsAClearErrorAndKeepsWhatWasCommitted) {
  testing::TempDir dir;
  const std::string path = dir.file("tuning.db");
  FullDisk full_disk;
  std::int64_t device = 0;
  int stored = 0;
  {
    Database db(path);
    device = db.ensure_device(test_device());
    for (; stored < 20; ++stored) db.put_result(row(device, stored));
    g_budget = 64 * 1024;  // the disk fills up after 64 KiB more
    try {
      for (int i = stored; i < 100000; ++i, ++stored) db.put_result(row(device, i));
      FAIL() << "never ran out of space";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDatabase);
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos) << e.what();
    }
  }
  g_budget = -1;  // space again
  Database db(path, Database::Mode::kReadOnly);
  const CheckReport report = db.check();  // throws when integrity fails
  // Every row committed before the disk filled up is there; the failed one is not half-written.
  EXPECT_EQ(report.results, stored);
  EXPECT_EQ(db.results({}).size(), static_cast<std::size_t>(stored));
}

}  // namespace
}  // namespace ktune
