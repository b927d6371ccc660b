#pragma once
// Messages between the processes of a run over several hosts (`mpirun -n K tune run ...`). Rank 0 owns the
// strategy and the records; the other ranks measure (cluster_run.h). This interface is what that code sees of
// MPI, so that the same code runs over Open MPI and, in tests, over an in-process stand-in (local_communicator.h).
//
// `tune` does not link MPI: the Open MPI implementation lives in the plugin libkernlathe_mpi.so (mpi_plugin.cpp),
// built where Open MPI's development files are installed and loaded only when `tune run` finds itself started by
// mpirun, so the binary runs on machines without Open MPI.

#include <memory>
#include <optional>
#include <string>

namespace kernlathe {

struct ClusterMessage {
  int source = 0;
  int tag = 0;
  std::string bytes;
};

// Thread-safe: the run loop's lanes and a heartbeat thread use one communicator at once.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sends and returns once the bytes are on their way (buffered); never waits for the receiver to ask. Sending to
  // a process that has died is not an error here: silence is how a lost rank shows (cluster_run.h).
  virtual void send(int destination, int tag, const std::string& bytes) = 0;
  // The next message from any rank, or nothing when none has arrived; does not wait.
  virtual std::optional<ClusterMessage> poll() = 0;
};

// The world size and rank the launcher gave this process: set when `tune` runs under mpirun (Open MPI's
// OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_SIZE of other launchers); nothing for a process started alone.
struct LaunchedRank {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  // among the ranks on this host: which GPU the rank takes by default
};
std::optional<LaunchedRank> launched_by_mpirun();

// Loads libkernlathe_mpi.so (next to the executable, or in ../lib) and initialises MPI. Throws InputError naming
// what is missing when the plugin or Open MPI cannot be loaded. MPI is finalised when the communicator is
// destroyed.
std::unique_ptr<Communicator> open_mpi_communicator();

}  // namespace kernlathe
