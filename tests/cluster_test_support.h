#pragma once
// An in-process stand-in for MPI: one Communicator per rank over shared queues, so that rank 0 and the evaluator
// ranks run as threads of one test. A rank can be made to die: after it has sent a given number of results,
// everything it sends or is sent is dropped, which is what a killed process looks like to the others.

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "tuner/cluster/communicator.h"

namespace kernlathe::cluster_test {

class LocalNetwork {
 public:
  explicit LocalNetwork(int size) : inboxes_(static_cast<std::size_t>(size)) {}

  // Rank `rank` dies when it sends its (results + 1)-th message with tag `result_tag`.
  void die_after_results(int rank, int results, int result_tag) {
    std::lock_guard lock(mutex_);
    dying_[rank] = {results, result_tag};
  }
  bool dead(int rank) const {
    std::lock_guard lock(mutex_);
    return dead_.count(rank) > 0;
  }

  std::unique_ptr<Communicator> communicator(int rank) { return std::make_unique<Endpoint>(*this, rank); }

 private:
  class Endpoint final : public Communicator {
   public:
    Endpoint(LocalNetwork& network, int rank) : network_(network), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(network_.inboxes_.size()); }
    void send(int destination, int tag, const std::string& bytes) override {
      std::lock_guard lock(network_.mutex_);
      if (auto dying = network_.dying_.find(rank_); dying != network_.dying_.end() && tag == dying->second.second) {
        if (dying->second.first-- <= 0) network_.dead_.insert(rank_);
      }
      if (network_.dead_.count(rank_) || network_.dead_.count(destination)) return;
      network_.inboxes_[static_cast<std::size_t>(destination)].push_back(ClusterMessage{rank_, tag, bytes});
    }
    std::optional<ClusterMessage> poll() override {
      std::lock_guard lock(network_.mutex_);
      auto& inbox = network_.inboxes_[static_cast<std::size_t>(rank_)];
      if (inbox.empty() || network_.dead_.count(rank_)) return std::nullopt;
      ClusterMessage message = std::move(inbox.front());
      inbox.pop_front();
      return message;
    }

   private:
    LocalNetwork& network_;
    int rank_;
  };

  mutable std::mutex mutex_;
  std::vector<std::deque<ClusterMessage>> inboxes_;
  std::map<int, std::pair<int, int>> dying_;  // rank -> (results left, tag)
  std::set<int> dead_;
};

}  // namespace kernlathe::cluster_test
