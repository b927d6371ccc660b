#pragma once
// The commit this build of the tuner comes from, so that a record, a benchmark's output or `tune --version` names
// the code that measured it even where the binaries run away from their checkout (a GPU host given built binaries).

#include <string>

namespace kernlathe {

// The checkout's commit when the binaries were built, 12 hex digits, followed by "+changes" when tracked files
// differed from it; empty when they were not built from a git checkout.
std::string build_commit();

// "0.1.0 (commit 0123456789ab)", or the version alone where build_commit() is empty.
std::string version_text();

}  // namespace kernlathe
