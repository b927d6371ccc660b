#include "tuner/compile/message_pipe.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "tuner/common/error.h"

namespace kernlathe {

namespace {

// Far beyond any source or cubin log; a larger length means the stream is out of step.
constexpr std::uint64_t max_message_bytes = std::uint64_t{1} << 32;

bool write_all(int descriptor, const char* bytes, std::size_t size) {
  while (size > 0) {
    ssize_t written = ::write(descriptor, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
  return true;
}

// Returns the number of bytes read: less than size only at end of file.
std::size_t read_all(int descriptor, char* bytes, std::size_t size) {
  std::size_t total = 0;
  while (total < size) {
    ssize_t count = ::read(descriptor, bytes + total, size - total);
    if (count < 0) {
      if (errno == EINTR) continue;
      throw TunerError(fmt::format("reading from a compiler pipe failed: {}", std::strerror(errno)));
    }
    if (count == 0) break;
    total += static_cast<std::size_t>(count);
  }
  return total;
}

}  // namespace

bool write_message(int descriptor, std::string_view payload) {
  unsigned char header[8];
  std::uint64_t length = payload.size();
  for (int index = 0; index < 8; ++index) header[index] = static_cast<unsigned char>((length >> (8 * index)) & 0xff);
  return write_all(descriptor, reinterpret_cast<const char*>(header), sizeof header) &&
         write_all(descriptor, payload.data(), payload.size());
}

std::optional<std::string> read_message(int descriptor) {
  unsigned char header[8];
  std::size_t header_bytes = read_all(descriptor, reinterpret_cast<char*>(header), sizeof header);
  if (header_bytes == 0) return std::nullopt;
  if (header_bytes < sizeof header) throw TunerError("compiler pipe closed inside a message header");
  std::uint64_t length = 0;
  for (int index = 0; index < 8; ++index) length |= static_cast<std::uint64_t>(header[index]) << (8 * index);
  if (length > max_message_bytes) {
    throw TunerError(fmt::format("compiler pipe message of {} bytes: out of step", length));
  }
  std::string payload(length, '\0');
  if (read_all(descriptor, payload.data(), payload.size()) < length) {
    throw TunerError("compiler pipe closed inside a message");
  }
  return payload;
}

nlohmann::json to_json(const WorkerRequest& worker_request) {
  const CompileRequest& request = worker_request.request;
  nlohmann::json headers = nlohmann::json::array();
  for (const auto& [name, contents] : request.headers) headers.push_back({name, contents});
  return {{"source_name", request.source_name},
          {"source", request.source},
          {"name_expression", request.name_expression},
          {"options", request.options},
          {"arch", request.arch},
          {"headers", headers},
          {"cache_dir", worker_request.cache_dir},
          {"use_cache", worker_request.use_cache}};
}

WorkerRequest worker_request_from_json(const nlohmann::json& json) {
  WorkerRequest worker_request;
  CompileRequest& request = worker_request.request;
  request.source_name = json.at("source_name").get<std::string>();
  request.source = json.at("source").get<std::string>();
  request.name_expression = json.at("name_expression").get<std::string>();
  request.options = json.at("options").get<std::vector<std::string>>();
  request.arch = json.at("arch").get<std::string>();
  for (const auto& header : json.at("headers")) {
    request.headers.emplace_back(header.at(0).get<std::string>(), header.at(1).get<std::string>());
  }
  worker_request.cache_dir = json.at("cache_dir").get<std::string>();
  worker_request.use_cache = json.at("use_cache").get<bool>();
  return worker_request;
}

nlohmann::json to_json(const CompileResult& result) {
  return {{"ok", result.ok},
          {"log", result.log},
          {"lowered_name", result.lowered_name},
          {"cubin_path", result.cubin_path.string()},
          {"key", result.key},
          {"compile_ms", result.compile_ms},
          {"cached", result.cached},
          {"error", result.error}};
}

CompileResult compile_result_from_json(const nlohmann::json& json) {
  CompileResult result;
  result.ok = json.at("ok").get<bool>();
  result.log = json.at("log").get<std::string>();
  result.lowered_name = json.at("lowered_name").get<std::string>();
  result.cubin_path = json.at("cubin_path").get<std::string>();
  result.key = json.at("key").get<std::string>();
  result.compile_ms = json.at("compile_ms").get<double>();
  result.cached = json.at("cached").get<bool>();
  result.error = json.at("error").get<std::string>();
  return result;
}

std::string dump_json(const nlohmann::json& json) {
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kernlathe
