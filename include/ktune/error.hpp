// The one error type of ktune: a reason code, a message, and the details (logs, options) attached.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace ktune {

enum class ErrorCode {
  kInvalidArgument,  // a caller's argument is wrong; the message names it
  kNoDriver,         // libcuda.so.1 could not be loaded
  kNoDevice,         // the driver is there but no (such) CUDA device
  kCuda,             // a CUDA driver call failed
  kCompile,          // NVRTC rejected a source; details hold the log and the options
  kDatabase,         // the tuning database could not be opened, read or written
  kIo,               // an output file or stream could not be written (disk full, closed pipe)
  kUnsupported,      // valid request this build or device cannot serve
  kInternal,         // a bug in ktune
};

std::string_view to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message, std::string details = {})
      : std::runtime_error(message), code_(code), details_(std::move(details)) {}
  ErrorCode code() const noexcept { return code_; }
  // Long diagnostic text: an NVRTC log with the options used, a SQLite message with the file.
  const std::string& details() const noexcept { return details_; }
  // For CUDA errors: the CUresult; 0 otherwise.
  int cuda_result() const noexcept { return cuda_result_; }
  Error& with_cuda_result(int r) noexcept {
    cuda_result_ = r;
    return *this;
  }

 private:
  ErrorCode code_;
  std::string details_;
  int cuda_result_ = 0;
};

}  // namespace ktune
