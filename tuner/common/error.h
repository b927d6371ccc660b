#pragma once
// Errors raised inside the library. The CLI turns them into one line on stderr and an exit code:
//   InputError  -> 2 (bad spec, space, expression or command-line value)
//   NoGpuError  -> 3 (no driver, no device, device index out of range)
//   TunerError  -> 1 (anything else that stops a run)
// A failing *configuration* is never an exception: it is an Evaluation with a status (record/evaluation.h).

#include <stdexcept>
#include <string>

namespace kernlathe {

// Where in an input file a problem was found. line and column are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  // "file:line:column", "file:line" or "file", whichever is known.
  std::string to_string() const;
};

class TunerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input: the message already names the file, line and column where there is one.
class InputError : public TunerError {
 public:
  InputError(SourceLocation where, const std::string& what_is_wrong);
  explicit InputError(const std::string& message) : TunerError(message) {}
  const SourceLocation& where() const { return where_; }

 private:
  SourceLocation where_;
};

class NoGpuError : public TunerError {
 public:
  using TunerError::TunerError;
};

// Exit codes of `tune`, documented in the README.
enum ExitCode : int { exit_ok = 0, exit_failure = 1, exit_bad_input = 2, exit_no_gpu = 3 };

}  // namespace kernlathe
