// C entry point of the host build of templates/attention.cu's reference path that
// tests/compile_templates_on_host_test.cpp loads with dlopen. The build defines what the space would (the element
// type, AT_HEAD_DIM, AT_CAUSAL, PATH_reference, REF_WARPS 1, REF_ROWS, THREADS 32) and HOST_BLOCK_SHARED_MEMORY, so
// the one warp of each block shares its key and value tiles. Elements travel as their 16-bit patterns.
#include <cstdint>

static_assert(sizeof(Element) == sizeof(std::uint16_t));

// The grid the space derives for the reference path: (batch * heads, sequence / REF_ROWS) blocks. Returns 1 where
// the space would reject the sequence (rows are not bounds-checked), 0 after the launch.
extern "C" int run_attention(int pairs, int sequence, float scale, const std::uint16_t* q, const std::uint16_t* k,
                             const std::uint16_t* v, std::uint16_t* o) {
  if (pairs <= 0 || sequence <= 0 || sequence % REF_ROWS != 0) return 1;
  const TensorMap unused_map{};
  launch_warps(HostDim3{static_cast<unsigned>(pairs), static_cast<unsigned>(sequence / REF_ROWS), 1}, attention,
               sequence, scale, reinterpret_cast<const Element*>(q), reinterpret_cast<const Element*>(k),
               reinterpret_cast<const Element*>(v), reinterpret_cast<Element*>(o), unused_map, unused_map,
               unused_map);
  return 0;
}
