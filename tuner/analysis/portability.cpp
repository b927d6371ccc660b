#include "tuner/analysis/portability.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "tuner/record/csv_record.h"

namespace kernlathe {
namespace {

// One GPU's recording, indexed for look-ups by configuration.
struct Indexed {
  const Recording* recording = nullptr;
  std::unordered_map<std::string, const Evaluation*> by_configuration;
  std::vector<double> valid_times;  // sorted
  const Evaluation* best = nullptr;

  explicit Indexed(const Recording& source) : recording(&source) {
    for (const Evaluation& evaluation : source.evaluations) {
      by_configuration[configuration_key(evaluation.configuration)] = &evaluation;
      if (!is_valid_measurement(evaluation)) continue;
      valid_times.push_back(evaluation.time.median_ms);
      if (best == nullptr || evaluation.time.median_ms < best->time.median_ms) best = &evaluation;
    }
    std::sort(valid_times.begin(), valid_times.end());
  }

  PortabilityCell cell(const std::string& key) const {
    PortabilityCell cell;
    const auto found = by_configuration.find(key);
    if (found == by_configuration.end()) return cell;
    const Evaluation& evaluation = *found->second;
    if (!is_valid_measurement(evaluation)) {
      cell.state = PortabilityCell::State::failed;
      cell.status = evaluation.status;
      return cell;
    }
    cell.state = PortabilityCell::State::measured;
    cell.time_ms = evaluation.time.median_ms;
    cell.fraction_of_optimum = best->time.median_ms / evaluation.time.median_ms;
    cell.rank = 1 + static_cast<std::size_t>(std::lower_bound(valid_times.begin(), valid_times.end(), cell.time_ms) -
                                             valid_times.begin());
    return cell;
  }
};

}  // namespace

std::vector<PortabilityGroup> analyse_portability(const std::vector<Recording>& recordings) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> families;
  for (std::size_t index = 0; index < recordings.size(); ++index) {
    auto& members = families[recordings[index].family];
    if (members.empty()) order.push_back(recordings[index].family);
    members.push_back(index);
  }

  std::vector<PortabilityGroup> groups;
  for (const std::string& family : order) {
    PortabilityGroup group;
    for (std::size_t index : families[family]) {
      const Recording& recording = recordings[index];
      const auto same_device = std::find(group.devices.begin(), group.devices.end(), recording.device);
      if (same_device != group.devices.end()) {
        const Recording& kept = recordings[group.recordings[static_cast<std::size_t>(same_device - group.devices.begin())]];
        group.notes.push_back(fmt::format("{} left out: {} of the same GPU is compared", recording.source.string(),
                                          kept.source.string()));
        continue;
      }
      group.recordings.push_back(index);
      group.devices.push_back(recording.device);
    }
    if (group.recordings.size() < 2) continue;
    const Recording& first = recordings[group.recordings.front()];
    group.kernel = first.kernel;
    group.problem = first.problem;
    for (const Parameter& parameter : first.parameters) group.parameter_names.push_back(parameter.name);

    std::vector<Indexed> indexed;
    for (std::size_t index : group.recordings) indexed.emplace_back(recordings[index]);
    for (const Indexed& gpu : indexed) {
      group.best.push_back(gpu.best->configuration);
      group.optimum_ms.push_back(gpu.best->time.median_ms);
      group.valid.push_back(gpu.valid_times.size());
    }
    for (const Indexed& row : indexed) {
      const std::string key = configuration_key(row.best->configuration);
      std::vector<PortabilityCell> cells;
      for (const Indexed& column : indexed) cells.push_back(column.cell(key));
      group.matrix.push_back(std::move(cells));
    }

    // The portable default: valid on every GPU, the largest worst fraction of optimum (ties: the larger sum).
    double best_worst = -1, best_sum = -1;
    for (const Evaluation& candidate : indexed.front().recording->evaluations) {
      if (!is_valid_measurement(candidate)) continue;
      const std::string key = configuration_key(candidate.configuration);
      std::vector<PortabilityCell> cells;
      double worst = std::numeric_limits<double>::infinity(), sum = 0;
      for (const Indexed& gpu : indexed) {
        cells.push_back(gpu.cell(key));
        if (cells.back().state != PortabilityCell::State::measured) break;
        worst = std::min(worst, cells.back().fraction_of_optimum);
        sum += cells.back().fraction_of_optimum;
      }
      if (cells.size() < indexed.size() || cells.back().state != PortabilityCell::State::measured) continue;
      ++group.valid_everywhere;
      if (worst > best_worst || (worst == best_worst && sum > best_sum)) {
        best_worst = worst;
        best_sum = sum;
        group.portable_default = PortableDefault{candidate.configuration, std::move(cells), worst};
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

}  // namespace kernlathe
