#pragma once
// A tuning run over several processes, each with its GPU (`mpirun -n K tune run spec ...`).
//
// Rank 0 runs tune() as on one host: the strategy, the compile pool, the records, the final round and the best
// cache are its own, and its --devices its local lanes. Every other rank opens its GPUs (its --devices, else GPU
// <local rank> unless --device says), runs the reference configuration on each, says so, then measures what rank 0
// sends each GPU: a configuration with its cubin, compiled once on rank 0. On rank 0 each GPU of another rank is a
// lane of the run loop (measurement_lanes.h) through a RemoteMeasurer, so ranks and local GPUs are scheduled alike,
// and GPUs of another model are tuned apart, as with --devices.
//
// Every rank sends a heartbeat every `heartbeat_seconds`. A rank silent for `silence_seconds` is lost: rank 0
// reports it and gives the configuration it was measuring to another rank (its lane throws; the run loop does the
// rest). An evaluator rank that stops hearing rank 0 ends with an error. At the end rank 0 sends every rank the
// configuration chosen for its GPU model, so that every rank of a model ends with the same one.
//
// Open MPI's mpirun ends the whole job when one process dies, unless it is started with --enable-recovery: with
// it the other ranks go on as described (README "Several GPUs and hosts").

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuner/cluster/communicator.h"
#include "tuner/session/tuning_session.h"

namespace kernlathe {

struct ClusterOptions {
  double heartbeat_seconds = 0.5;
  double silence_seconds = 10;         // a rank silent this long is lost
  double preparation_seconds = 600;    // what a rank may take to open its GPU and run the reference
};

// What an evaluator rank ends with.
struct EvaluatorOutcome {
  std::string label;                     // "rank 2, gpu 0"
  std::string device_name;
  std::optional<nlohmann::json> chosen;  // the configuration rank 0 chose for this GPU model (name -> value)
  std::string kernel;
  std::string failure;                   // set when rank 0 ended the run without a choice, and why
  std::uint64_t measured = 0;            // configurations this rank measured
};

// Rank 0's side. Its post office thread receives every message and keeps the time each rank was last heard from.
class ClusterCoordinator {
 public:
  ClusterCoordinator(Communicator& communicator, ClusterOptions options);
  ~ClusterCoordinator();  // tells the ranks not yet told that the run ended without a choice, then stops the thread
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  // For TuneOptions::remote_devices: waits for every other rank's greeting (its GPU) and returns one measurer per
  // rank that sent one in time. needs_compilation: whether the run compiles (false for a replay).
  RemoteDevices remote_devices(bool needs_compilation);

  // Sends each rank the winner of its GPU model's report (report.devices holds the rank's label), or, for a rank
  // in no report, the reason. Called once, after tune_each_model().
  void finish(const std::vector<TuneReport>& reports);
  // Ends the run on every rank with an error (rank 0 failed).
  void abort(const std::string& reason);

  struct Mailbox;

 private:
  void post_office();
  // Sends the end of the run to one GPU of a rank (message "every_slot": all of them), once.
  void tell_done(int rank, int slot, const nlohmann::json& message);

  Communicator& communicator_;
  ClusterOptions options_;
  std::shared_ptr<Mailbox> mailbox_;
  std::vector<std::vector<std::string>> labels_;  // by rank, then slot, from the greetings (none: no greeting)
  std::vector<std::vector<bool>> told_slots_;     // by rank, then slot: sent the end of the run
  std::vector<bool> told_;                        // by rank: every slot told, so heartbeats stop
  std::thread thread_;
};

// Every other rank's side: serves rank 0 until it ends the run. options are the command line's, as on rank 0;
// devices: the GPUs this rank measures on (its --devices, else the GPU of its local rank), each a lane of rank 0's
// run loop, measured by a thread of its own. Returns one outcome per device. Throws TunerError when rank 0 stops
// answering or every device of the rank has failed, InputError or NoGpuError when the spec or every GPU cannot be
// opened (rank 0 is told first); a device that fails alone is reported to rank 0 and the others go on.
std::vector<EvaluatorOutcome> serve_as_evaluator(Communicator& communicator, const TuneOptions& options,
                                                 const std::vector<int>& devices, const ClusterOptions& cluster);

}  // namespace kernlathe
