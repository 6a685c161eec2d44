// Writing the CLI's data out: files replaced whole or not at all, special files in place,
// standard output checked, so that no command reports success for data that never arrived.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ktune/version.hpp"

namespace ktune::cli {

// Writes `data` to `path`, as the option `option` ("-o", "--csv") named it:
// - "-" and /dev/stdout: standard output;
// - an existing FIFO or device (/dev/null, /dev/full, a terminal): written in place;
// - otherwise (a regular file, or none yet): a temporary file created exclusively, with an
//   unpredictable name, in the target's folder, synced, then renamed over the target, so that a
//   failure leaves the old file as it was. A link is followed: its target is replaced.
// Refuses a directory and any file of `protect` (the database the data came from) with
// Error(kInvalidArgument); a failed write is Error(kIo) with the system's reason.
void write_output(const std::string& path, std::string_view data, const std::string& option,
                  const std::vector<std::string>& protect = {});

// Flushes standard output and throws Error(kIo) if anything written to it was lost (a full disk,
// a closed terminal): `what` names the command.
void check_stdout(const std::string& what);

// The commit a benchmark CSV's rows name: the git description this build recorded (the code that
// ran), else $KTUNE_COMMIT (a build made outside git, named by whoever made it), else "unknown".
// Two builds run in one call with one $KTUNE_COMMIT (an A/B of a lookup change) each write their
// own.
inline std::string csv_commit() {
  if (const char* built = build_commit(); built && *built) return built;
  const char* named = std::getenv("KTUNE_COMMIT");
  return named && *named ? named : "unknown";
}

}  // namespace ktune::cli
