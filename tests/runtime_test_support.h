#pragma once
// Planted databases for the runtime's tests: a kernel "tiled" as the runtime sees a GEMM (tiles that must divide
// the problem), built the same way wherever a test needs one; each test gives what it varies.
#include <array>
#include <string>
#include <vector>

#include "kernlathe/database.h"

namespace kernlathe::runtime_test {

// Problem M = N = K = 4096 by default, one f32 output of M * N, a 256-thread block, spec hash "current", no entries.
inline KernelDatabase tiled_database_with(std::vector<ParameterDescription> parameters,
                                          std::vector<std::string> constraints, std::array<std::string, 3> grid,
                                          ConfigurationValues default_configuration, std::string template_hash) {
  KernelDatabase database;
  database.kernel = "tiled";
  KernelDescription& description = database.description;
  description.kernel = "tiled";
  description.template_name = "tiled.cu";
  description.template_hash = std::move(template_hash);
  description.spec_hash = "current";
  description.entry_point = "tiled";
  description.problem = {{"M", 4096}, {"N", 4096}, {"K", 4096}};
  description.parameters = std::move(parameters);
  description.constraints = std::move(constraints);
  description.grid = std::move(grid);
  description.block = {"256", "1", "1"};
  description.arguments = {{"c", "buffer", "f32", "out", "M * N", "", false, "", {}, {}, "", {}}};
  description.default_configuration = std::move(default_configuration);
  description.default_origin = "space defaults";
  return database;
}

}  // namespace kernlathe::runtime_test
