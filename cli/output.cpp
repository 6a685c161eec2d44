// Output files and standard output for the CLI (see output.hpp).
#include "cli/output.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "ktune/error.hpp"

namespace ktune::cli {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void io_error(const std::string& message, int error) {
  throw Error(ErrorCode::kIo, message + ": " + std::strerror(error));
}

// write(2) until everything is written; returns 0 or the errno of the failure.
int write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

// Large data goes to the descriptor directly, so that a failure keeps the system's reason.
void write_stdout(std::string_view data, const std::string& option) {
  check_stdout(option);  // what the command printed before, in order
  if (const int error = write_all(STDOUT_FILENO, data))
    io_error(option + ": writing standard output failed", error);
}

}  // namespace

void check_stdout(const std::string& what) {
  errno = 0;
  std::cout.flush();
  bool failed = !std::cout;
  int error = failed ? errno : 0;
  if (std::fflush(stdout) != 0) {
    failed = true;
    if (!error) error = errno;
  }
  failed = failed || std::ferror(stdout);
  if (!failed) return;
  // The reason is known only when the failing write was the last call.
  if (error) io_error(what + ": writing standard output failed", error);
  throw Error(ErrorCode::kIo, what + ": writing standard output failed (some output was lost)");
}

void write_output(const std::string& path, std::string_view data, const std::string& option,
                  const std::vector<std::string>& protect) {
  if (path.empty()) throw Error(ErrorCode::kInvalidArgument, option + ": empty file name");
  if (path == "-" || path == "/dev/stdout") return write_stdout(data, option);
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) io_error(option + ": cannot reach " + path, errno);
  if (exists && S_ISDIR(st.st_mode))
    throw Error(ErrorCode::kInvalidArgument, option + ": " + path + " is a directory");
  std::error_code ec;
  for (const std::string& p : protect)
    if (exists && fs::exists(p, ec) && fs::equivalent(path, p, ec))
      throw Error(
          ErrorCode::kInvalidArgument,
          option + ": " + path + " is the database the data comes from; choose another file");

  if (exists && !S_ISREG(st.st_mode)) {
    // A FIFO or a device takes the data where it is: renaming a file over it would replace it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) io_error(option + ": cannot open " + path, errno);
    const int error = write_all(fd, data);
    const int closed = ::close(fd) == 0 ? 0 : errno;
    if (error || closed) io_error(option + ": writing " + path + " failed", error ? error : closed);
    return;
  }

  // The file a link points to is the one replaced; the link stays.
  fs::path target = fs::path(path);
  if (exists) {
    fs::path resolved = fs::canonical(target, ec);
    if (!ec) target = resolved;
  }
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string temp = (folder / ("." + target.filename().string() + ".ktune-XXXXXX")).string();
  const int fd = ::mkstemp(temp.data());  // O_EXCL: never an existing file or a planted link
  if (fd < 0) io_error(option + ": cannot create a file in " + folder.string(), errno);
  // The permissions an ordinary write would give: the old file's, else 0666 less the umask.
  mode_t mode = st.st_mode & 07777;
  if (!exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  int error = ::fchmod(fd, mode) == 0 ? 0 : errno;
  if (!error) error = write_all(fd, data);
  if (!error && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && !error) error = errno;
  if (!error && ::rename(temp.c_str(), target.c_str()) != 0) error = errno;
  if (error) {
    ::unlink(temp.c_str());
    io_error(option + ": writing " + path + " failed", error);
  }
}

}  // namespace ktune::cli
