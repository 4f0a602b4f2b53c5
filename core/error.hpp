// tcsolve error types. Library code throws; only apps/ turns exceptions into messages and exit codes.
//
// Contract: everything tcsolve throws derives from tcsolve::Error (a std::runtime_error), except
// std::bad_alloc for host memory: InputError for malformed input data (with file and line),
// InvalidArgument for a broken precondition (the condition and the value in what()), OutputError
// for a result that could not be written, NotCompiled
// for a feature this build lacks (CUDA, CHOLMOD/MUMPS), DeviceError / OutOfDeviceMemory for the
// GPU. Library code never prints, exits or aborts on bad input; a solver that does not converge
// does not throw either: it returns a status with the partial result (solvers/result.hpp).
// Callers (the command, the Python module) map the types to exit codes / Python exceptions.
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

// An output could not be written (full disk, quota, file size limit, I/O error, a folder that
// vanished or is not writable): what() names the file and the OS reason. Nothing is left behind:
// the target keeps its previous content and no temporary file remains (io/atomic_file.hpp).
class OutputError : public Error {
 public:
  using Error::Error;
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
  // `note` (optional) says which limit was hit, e.g. TCSOLVE_DEVICE_MEMORY_LIMIT.
  OutOfDeviceMemory(std::size_t bytes_needed, const char* file, int line, const std::string& note = "")
      : DeviceError("out of GPU memory: needed " + std::to_string(bytes_needed) + " bytes" +
                        (note.empty() ? std::string() : " (" + note + ")"),
                    file, line),
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
