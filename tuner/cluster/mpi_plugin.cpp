// libkernlathe_mpi.so: the Communicator of communicator.h over Open MPI's MPI_COMM_WORLD. `tune` loads it only
// when started by mpirun (communicator.cpp), so that `tune` itself needs no MPI library to start.
//
// MPI is initialised with MPI_THREAD_SERIALIZED and every call is made under one mutex: the lanes of the run loop
// and the heartbeat thread share the communicator. Sends are non-blocking and completed by later calls, so that a
// large message (a cubin) never blocks the sender while the receiver is busy measuring.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>

#include "tuner/cluster/communicator.h"

namespace kernlathe {
namespace {

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(int rank, int size) : rank_(rank), size_(size) {}
  ~MpiCommunicator() override {
    std::lock_guard lock(mutex_);
    // What is still in flight to a live rank is delivered; a dead one's sends are cancelled.
    for (Outgoing& outgoing : outgoing_) {
      int done = 0;
      for (int attempt = 0; attempt < 2000 && !done; ++attempt) MPI_Test(&outgoing.request, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Cancel(&outgoing.request);
        MPI_Request_free(&outgoing.request);
      }
    }
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void send(int destination, int tag, const std::string& bytes) override {
    std::lock_guard lock(mutex_);
    complete_sends();
    outgoing_.push_back(Outgoing{bytes, MPI_REQUEST_NULL});
    Outgoing& outgoing = outgoing_.back();
    MPI_Isend(outgoing.bytes.data(), static_cast<int>(outgoing.bytes.size()), MPI_BYTE, destination, tag,
              MPI_COMM_WORLD, &outgoing.request);
  }

  std::optional<ClusterMessage> poll() override {
    std::lock_guard lock(mutex_);
    complete_sends();
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status) != MPI_SUCCESS || !arrived)
      return std::nullopt;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    ClusterMessage message;
    message.source = status.MPI_SOURCE;
    message.tag = status.MPI_TAG;
    message.bytes.resize(static_cast<std::size_t>(count));
    MPI_Recv(message.bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    return message;
  }

 private:
  struct Outgoing {
    std::string bytes;  // kept until the send completes
    MPI_Request request;
  };
  // Drops the sends that have completed, oldest first (a deque keeps the others' buffers in place).
  void complete_sends() {
    for (Outgoing& outgoing : outgoing_) {
      int done = 0;
      if (outgoing.request != MPI_REQUEST_NULL) MPI_Test(&outgoing.request, &done, MPI_STATUS_IGNORE);
    }
    while (!outgoing_.empty() && outgoing_.front().request == MPI_REQUEST_NULL) outgoing_.pop_front();
  }

  int rank_;
  int size_;
  std::mutex mutex_;
  std::deque<Outgoing> outgoing_;
};

}  // namespace
}  // namespace kernlathe

extern "C" __attribute__((visibility("default"))) kernlathe::Communicator* kernlathe_open_mpi_communicator(
    char* error, int error_size) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::snprintf(error, static_cast<std::size_t>(error_size), "MPI_Init_thread failed");
    return nullptr;
  }
  if (provided < MPI_THREAD_SERIALIZED) {
    std::snprintf(error, static_cast<std::size_t>(error_size),
                  "this MPI library offers no MPI_THREAD_SERIALIZED (it offered level %d)", provided);
    MPI_Finalize();
    return nullptr;
  }
  // A rank that dies must not take the others down with an error here: silence is handled by cluster_run.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return new kernlathe::MpiCommunicator(rank, size);
}
