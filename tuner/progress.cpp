// Progress lines on stderr (see progress.hpp).
#include "tuner/progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ktune {

ProgressLine::ProgressLine(bool enabled, double log_interval_s, bool plain)
    : enabled_(enabled),
      terminal_(!plain && isatty(STDERR_FILENO) != 0),
      interval_s_(log_interval_s) {
  if (terminal_) interval_s_ = 0.2;
  if (const char* e = std::getenv("KTUNE_PROGRESS_INTERVAL"); e && *e && !terminal_) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end && *end == '\0' && v >= 0 && v < 1e6) interval_s_ = v;
  }
  last_ = std::chrono::steady_clock::now();
}

ProgressLine::~ProgressLine() { finish(); }

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - last_).count() < interval_s_) return;
  last_ = now;
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    drawn_ = true;
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (enabled_ && terminal_ && drawn_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace ktune
