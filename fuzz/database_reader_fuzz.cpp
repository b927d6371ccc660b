// libFuzzer target: any bytes given to the database reader (results/best/<kernel>.json, an export's database) end in
// a KernelDatabase or a DatabaseError, and selecting from whatever was read never throws and never crashes, as
// the runtime library promises an application (kernlathe/database.h).
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernlathe/database.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kernlathe::KernelDatabase database;
  try {
    database = kernlathe::parse_database(text, "fuzz.json");
  } catch (const kernlathe::DatabaseError&) {
    return 0;
  }
  const kernlathe::DeviceIdentity device{"NVIDIA H200", 9, 0, {{"sm_count", std::int64_t{132}}, {"max_threads_per_block", std::int64_t{1024}}}};
  kernlathe::Selection selection = kernlathe::select(database, device, {{"N", 4096}});
  (void)kernlathe::database_json(database);
  (void)selection;
  return 0;
}
