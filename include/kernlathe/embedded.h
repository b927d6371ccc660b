#pragma once
// Kernels compiled into an application: `tune export --embed` writes a C++ file that holds each kernel's database,
// its template sources and cubins for the exported archs, and registers them here from a static initialiser. A
// Runtime consults these before any file, so an application whose GPU arch was exported needs no database file, no
// source file and no NVRTC call at run time.

#include <cstddef>
#include <vector>

namespace kernlathe {

struct EmbeddedCubin {
  const char* key;           // embedded_key() of the compile request it was built from
  const char* lowered_name;  // the entry point's mangled name in the cubin
  const unsigned char* data;
  std::size_t size;
};

struct EmbeddedKernel {
  const char* name;
  const char* database_json;  // the kernel's database (format 2)
  const char* source_json;    // the kernel's source bundle (template and included files)
  const EmbeddedCubin* cubins;
  std::size_t cubin_count;
};

// Adds a kernel to the process-wide registry (thread-safe; the data must live for the whole process). Returns true
// so that a generated file can call it from a namespace-scope initialiser.
bool register_embedded_kernel(const EmbeddedKernel& kernel);
std::vector<const EmbeddedKernel*> embedded_kernels();

}  // namespace kernlathe
