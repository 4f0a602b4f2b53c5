// tcsolve error types. Library code throws; only apps/ turns exceptions into messages and exit codes.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tcsolve {

// Base of every tcsolve exception.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Malformed or unsupported input data. what() reads "FILE:LINE: message" (or "FILE: byte N: ...").
class InputError : public Error {
 public:
  InputError(const std::string& file, std::int64_t line, const std::string& msg)
      : Error(file + (line > 0 ? ":" + std::to_string(line) : std::string()) + ": " + msg),
        file_(file), line_(line) {}
  const std::string& file() const { return file_; }
  std::int64_t line() const { return line_; }

 private:
  std::string file_;
  std::int64_t line_;
};

// A caller broke a documented precondition (wrong shapes, k > n, unknown option value...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A feature that this build does not contain (e.g. CUDA in a CPU-only build).
class NotCompiled : public Error {
 public:
  using Error::Error;
};

// A failed CUDA runtime or library call; carries the call text and its source location.
class DeviceError : public Error {
 public:
  DeviceError(const std::string& what_failed, const char* file, int line)
      : Error(what_failed + " (" + file + ":" + std::to_string(line) + ")") {}
};

// Not enough device memory for a request; says how much was needed.
class OutOfDeviceMemory : public DeviceError {
 public:
  OutOfDeviceMemory(std::size_t bytes_needed, const char* file, int line)
      : DeviceError("out of GPU memory: needed " + std::to_string(bytes_needed) + " bytes", file,
                    line),
        bytes_needed_(bytes_needed) {}
  std::size_t bytes_needed() const { return bytes_needed_; }

 private:
  std::size_t bytes_needed_;
};

// Throws InvalidArgument with the failing condition when cond is false.
#define TCSOLVE_REQUIRE(cond, msg)                                                      \
  do {                                                                                  \
    if (!(cond)) throw ::tcsolve::InvalidArgument(std::string(msg) + " [" #cond "]");   \
  } while (0)

}  // namespace tcsolve
