#include "tuner/cluster/communicator.h"

#include <dlfcn.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {
namespace {

std::optional<int> environment_integer(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  const std::string_view view(text);
  int value = 0;
  const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size()) return std::nullopt;
  return value;
}

// What the plugin exports: a communicator over MPI_COMM_WORLD, or null with the reason in `error`.
using OpenFunction = Communicator* (*)(char* error, int error_size);
constexpr const char* plugin_name = "libkernlathe_mpi.so";
constexpr const char* open_symbol = "kernlathe_open_mpi_communicator";

}  // namespace

std::optional<LaunchedRank> launched_by_mpirun() {
  // Open MPI first, then the PMI variables that MPICH, Slurm and PMIx launchers set.
  const std::pair<const char*, const char*> sources[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"}, {"PMIX_SIZE", "PMIX_RANK"}, {"PMI_SIZE", "PMI_RANK"}};
  for (const auto& [size_name, rank_name] : sources) {
    std::optional<int> size = environment_integer(size_name);
    std::optional<int> rank = environment_integer(rank_name);
    if (!size || !rank) continue;
    LaunchedRank launched;
    launched.size = *size;
    launched.rank = *rank;
    launched.local_rank = environment_integer("OMPI_COMM_WORLD_LOCAL_RANK").value_or(
        environment_integer("MPI_LOCALRANKID").value_or(0));
    return launched;
  }
  return std::nullopt;
}

std::unique_ptr<Communicator> open_mpi_communicator() {
  const std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path candidates[] = {executable.parent_path() / plugin_name,
                                              executable.parent_path().parent_path() / "lib" / plugin_name};
  std::string tried;
  for (const std::filesystem::path& candidate : candidates) {
    if (!std::filesystem::exists(candidate)) {
      tried += (tried.empty() ? "" : ", ") + candidate.string();
      continue;
    }
    // RTLD_GLOBAL: Open MPI's own components, which it opens later, look for libmpi's symbols globally.
    void* library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (library == nullptr)
      throw InputError(fmt::format("cannot load {} (is Open MPI installed here?): {}", candidate.string(), ::dlerror()));
    auto open = reinterpret_cast<OpenFunction>(::dlsym(library, open_symbol));
    if (open == nullptr) throw InputError(fmt::format("{} lacks {}", candidate.string(), open_symbol));
    char error[512] = {};
    Communicator* communicator = open(error, static_cast<int>(sizeof error));
    if (communicator == nullptr) throw InputError(fmt::format("MPI could not be started: {}", error));
    return std::unique_ptr<Communicator>(communicator);  // the library stays loaded until the process ends
  }
  throw InputError(fmt::format("tune was started by mpirun, but {} is not installed beside it (looked for {}): "
                               "build kernlathe where Open MPI's development files are (libopenmpi-dev)",
                               plugin_name, tried));
}

}  // namespace kernlathe
