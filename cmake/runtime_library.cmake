# The runtime library target, kernlathe_runtime (alias kernlathe::runtime), from the checkout this file lives in.
# Included by the project's CMakeLists.txt and by python/CMakeLists.txt (the Python package builds the runtime
# library in its own build tree, so `pip install ./python` needs no prior C++ build). The includer has found
# Threads, CUDAToolkit (for cuda.h only: nothing CUDA is linked), and the header-only targets fmt::fmt-header-only
# and nlohmann_json::nlohmann_json, and set KERNLATHE_WARNINGS.
get_filename_component(kernlathe_source_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
configure_file(${kernlathe_source_root}/cmake/version.h.in ${CMAKE_CURRENT_BINARY_DIR}/generated/kernlathe/version.h @ONLY)
file(GLOB runtime_sources CONFIGURE_DEPENDS
     ${kernlathe_source_root}/tuner/common/*.cpp ${kernlathe_source_root}/tuner/expr/*.cpp
     ${kernlathe_source_root}/tuner/nvrtc/*.cpp ${kernlathe_source_root}/tuner/driver/*.cpp
     ${kernlathe_source_root}/tuner/loader/*.cpp ${kernlathe_source_root}/tuner/runtime/*.cpp)
list(APPEND runtime_sources ${kernlathe_source_root}/tuner/spec/model.cpp)
# The timing harness (include/kernlathe/timing.h): the tuner's own measurement rule, launch gate and event timer,
# so that applications and examples time the way `tune` does.
foreach(timing_source measure/measurement.cpp measure/kernel_timer.cpp measure/launch_gate.cpp gpu/driver_handles.cpp gpu/nvml.cpp)
  list(APPEND runtime_sources ${kernlathe_source_root}/tuner/${timing_source})
endforeach()
add_library(kernlathe_runtime STATIC ${runtime_sources})
add_library(kernlathe::runtime ALIAS kernlathe_runtime)
set_target_properties(kernlathe_runtime PROPERTIES EXPORT_NAME runtime POSITION_INDEPENDENT_CODE ON)
target_include_directories(kernlathe_runtime PUBLIC
  $<BUILD_INTERFACE:${kernlathe_source_root}/include> $<BUILD_INTERFACE:${CMAKE_CURRENT_BINARY_DIR}/generated>
  $<BUILD_INTERFACE:${kernlathe_source_root}> "$<BUILD_INTERFACE:${CUDAToolkit_INCLUDE_DIRS}>"  # quoted: the toolkit may list several folders
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_options(kernlathe_runtime PRIVATE ${KERNLATHE_WARNINGS})
# Where NVRTC is looked for last, after the library search path (tuner/nvrtc/nvrtc_library.cpp).
set_source_files_properties(${kernlathe_source_root}/tuner/nvrtc/nvrtc_library.cpp PROPERTIES
  COMPILE_DEFINITIONS KERNLATHE_CUDA_LIBRARY_DIR="${CUDAToolkit_LIBRARY_DIR}")
# fmt and nlohmann-json are header-only and used inside the library alone: an application needs neither.
target_link_libraries(kernlathe_runtime
  PUBLIC Threads::Threads ${CMAKE_DL_LIBS}
  PRIVATE $<BUILD_INTERFACE:fmt::fmt-header-only> $<BUILD_INTERFACE:nlohmann_json::nlohmann_json>)
