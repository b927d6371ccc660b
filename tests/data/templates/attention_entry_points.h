// C entry point of the host build of templates/attention.cu's reference path that
// tests/compile_templates_on_host_test.cpp loads with dlopen. The build defines what the space would (the element
// type, AT_HEAD_DIM, AT_CAUSAL, AT_HEADS, AT_KV_GROUP, AT_LAYOUT, PATH_reference, REF_WARPS 1, REF_ROWS, THREADS 32)
// and HOST_BLOCK_SHARED_MEMORY, so the one warp of each block shares its key and value tiles. Elements travel as
// their 16-bit patterns.
#include <cstdint>

static_assert(sizeof(Element) == sizeof(std::uint16_t));

// The grid the space derives for the reference path: (batch * heads, ceil(sequence / REF_ROWS)) blocks, the last
// block's rows past the sequence left alone. Returns 1 where the space would reject the shape, 0 after the launch.
extern "C" int run_attention(int batch, int sequence, int keys, float scale, const std::uint16_t* q,
                             const std::uint16_t* k, const std::uint16_t* v, std::uint16_t* o) {
  if (batch <= 0 || sequence <= 0 || keys < sequence) return 1;
  const TensorMap unused_map{};
  launch_warps(HostDim3{static_cast<unsigned>(batch * AT_HEADS), static_cast<unsigned>((sequence + REF_ROWS - 1) / REF_ROWS), 1},
               attention, sequence, keys, scale, reinterpret_cast<const Element*>(q),
               reinterpret_cast<const Element*>(k), reinterpret_cast<const Element*>(v), reinterpret_cast<Element*>(o),
               unused_map, unused_map, unused_map);
  return 0;
}
