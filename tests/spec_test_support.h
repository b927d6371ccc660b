#pragma once
// Helpers shared by the spec module's tests.

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "tuner/common/error.h"

namespace kernlathe::spec_test {

// The message of the InputError that `action` throws; fails the test when it throws nothing or something else.
inline std::string input_error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "expected InputError, got another exception: " << error.what();
    return "";
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return "";
}

}  // namespace kernlathe::spec_test
