#pragma once
// Framed messages over pipes between the compile pool and its worker processes: an 8-byte little-endian length,
// then that many bytes (JSON text). Lengths instead of newlines because sources and logs contain newlines.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tuner/compile/instantiate.h"
#include "tuner/nvrtc/nvrtc_compiler.h"

namespace kernlathe {

// Writes the whole message, retrying on EINTR and partial writes. Returns false when the reader is gone (EPIPE)
// or the write fails otherwise.
bool write_message(int descriptor, std::string_view payload);

// Reads one whole message. nullopt on end of file at a message boundary; throws TunerError on end of file
// inside a message, an unreasonable length or a read error.
std::optional<std::string> read_message(int descriptor);

// What a worker is asked to do: the request plus where to put the cubin.
struct WorkerRequest {
  CompileRequest request;
  std::string cache_dir;
  bool use_cache = true;
};

nlohmann::json to_json(const WorkerRequest& worker_request);
WorkerRequest worker_request_from_json(const nlohmann::json& json);
nlohmann::json to_json(const CompileResult& result);
CompileResult compile_result_from_json(const nlohmann::json& json);

// JSON text that survives bytes that are not UTF-8 (they become U+FFFD) instead of throwing.
std::string dump_json(const nlohmann::json& json);

}  // namespace kernlathe
