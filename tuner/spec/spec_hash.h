#pragma once
// What a result was measured against, as one 16-hex-digit content hash: the spec file, the space file (less its
// problem defaults) and the template with every file it includes (an edit of any of them makes earlier results
// stale). Best-cache entries
// carry the kernel's hash; record rows carry it narrowed to the problem and the arch they were measured at, so a
// resumed run skips only rows of the same kernel, problem and GPU architecture.

#include <optional>
#include <string>
#include <string_view>

#include "tuner/spec/model.h"

namespace kernlathe {

// The text of a space file without its top-level `problem_defaults:` block: the key's line and every line after it
// up to the next top-level key, blank lines and comments at the margin that come last (just above that key) staying
// with the key. Problem defaults change no configuration and no measurement, so adding or editing them stales no
// stored entry; a text without the block comes back unchanged. (In a space written inline in a spec, the block sits
// under `space:` and is hashed with the spec.)
std::string without_problem_defaults(std::string_view space_text);

// "H=8192,W=8192" in the spec's declared order.
std::string problem_text(const KernelSpec& spec);

// Without arch: the kernel's hash (spec, space, template and includes), stored beside every best-cache entry. With
// arch: that identity with problem_text(spec) and the arch too, written on every record row. Throws InputError
// when a file cannot be read.
std::string spec_hash(const KernelSpec& spec, std::optional<std::string_view> arch = std::nullopt);

}  // namespace kernlathe
