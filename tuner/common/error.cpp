#include "tuner/common/error.h"

namespace kernlathe {

std::string SourceLocation::to_string() const {
  std::string text = file;
  if (line > 0) {
    text += ":" + std::to_string(line);
    if (column > 0) text += ":" + std::to_string(column);
  }
  return text;
}

static std::string located_message(const SourceLocation& where, const std::string& what) {
  std::string prefix = where.to_string();
  return prefix.empty() ? what : prefix + ": " + what;
}

InputError::InputError(SourceLocation where, const std::string& what_is_wrong)
    : TunerError(located_message(where, what_is_wrong)), where_(std::move(where)) {}

}  // namespace kernlathe
