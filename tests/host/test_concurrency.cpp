// Host tests: four tuner processes write one database file at once. None may fail with a locked
// database, and every row must be there afterwards. Measurements are replayed from a synthetic
// recording (no GPU; processes, SQLite file and tuning loop are real).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "db/database.hpp"
#include "families/registry.hpp"
#include "synthetic_recording.hpp"
#include "temp_dir.hpp"
#include "tests/ktune_cli.hpp"

extern char** environ;

namespace ktune {
namespace {

TEST(Concurrency, FourTunersWriteOneDatabaseAndLoseNothing) {
  testing::TempDir dir;
  const std::string recording = dir.file("rec.db"), target = dir.file("shared.db");
  const std::vector<std::string> problems = {
      "align=16;dtype=f32;n=1048576;op=copy", "align=16;dtype=f32;n=1048576;op=add",
      "align=16;dtype=f64;n=1048576;op=copy", "align=16;dtype=f64;n=1048576;op=complex_copy"};
  std::vector<std::int64_t> runs;
  std::size_t expected = 0;
  {
    Database rec(recording);
    for (const auto& key : problems) {
      runs.push_back(testing::record_synthetic(rec, key));
      expected += SearchSpace(find_family("elementwise"), Problem::parse("elementwise", key),
                              DeviceLimits::for_arch(9, 0))
                      .size();
    }
  }
  std::vector<pid_t> pids;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<std::string> args = {testing::ktune_cli().c_str(),
                                     "tune",
                                     "--db",
                                     target,
                                     "--replay-from",
                                     recording,
                                     "--replay",
                                     std::to_string(runs[i]),
                                     "--strategy",
                                     "exhaustive",
                                     "--max-evals",
                                     "0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    const std::string err = dir.file("err" + std::to_string(i));
    posix_spawn_file_actions_addopen(&io, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&io, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, testing::ktune_cli().c_str(), &io, nullptr, argv.data(), environ),
              0);
    posix_spawn_file_actions_destroy(&io);
    pids.push_back(pid);
  }
  for (std::size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
    std::ifstream in(dir.file("err" + std::to_string(i)));
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "tuner " << i << ": " << text.str();
    EXPECT_EQ(text.str().find("locked"), std::string::npos) << text.str();
  }
  Database db(target, Database::Mode::kReadOnly);
  std::size_t own = 0, in_flight = 0;
  for (const auto& r : db.results({})) {
    if (r.origin == "shipped") continue;  // a new database starts with the shipped presets
    ++own;
    in_flight += r.status == status::kInFlight;
  }
  EXPECT_EQ(own, expected);
  EXPECT_EQ(in_flight, 0u);
  EXPECT_EQ(db.runs().size(), runs.size());
  const CheckReport report = db.check();  // throws if integrity or foreign keys fail
  EXPECT_EQ(report.in_flight, 0);
}

}  // namespace
}  // namespace ktune
