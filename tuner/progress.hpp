// A progress line for long work (tuning, compiling every kernel): redrawn in place on a terminal,
// a plain line now and then in a log, so that batch jobs show signs of life without flooding.
#pragma once

#include <chrono>
#include <string>

namespace ktune {

class ProgressLine {
 public:
  // Disabled: silent. On a terminal (stderr) the line is redrawn at most 5 times a second;
  // otherwise a full line is printed every `log_interval_s` seconds ($KTUNE_PROGRESS_INTERVAL
  // overrides it; 0 prints every update).
  // `plain`: log lines even on a terminal (several lines of work share it).
  explicit ProgressLine(bool enabled, double log_interval_s = 30, bool plain = false);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // `text` is the whole line, without a newline. `force` prints it whatever the interval.
  void update(const std::string& text, bool force = false);
  // Clears the line on a terminal; a log keeps what it printed.
  void finish();

 private:
  bool enabled_;
  bool terminal_;
  double interval_s_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace ktune
