// kernlathe._kernlathe: the runtime library (include/kernlathe/) as a Python extension. It mirrors the C++ API
// (Runtime, Kernel, selection with its rung and reason) and hands plain values to Python (dicts, lists, ints), which
// kernlathe/runtime.py turns into the public classes. Buffers arrive here as device addresses: finding the address
// of a DLPack or __cuda_array_interface__ object, and refusing host memory, is kernlathe/_arrays.py's job (with
// device_of_dlpack below for objects that only speak DLPack). No CUDA header is included: the module imports on a
// machine without an NVIDIA driver, and a Runtime there raises KernlatheError when a GPU is needed.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernlathe/database.h"
#include "kernlathe/runtime.h"
#include "tuner/common/error.h"
#include "tuner/runtime/kernel_plan.h"
#include "tuner/spec/model.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kernlathe::python {

namespace {

nb::object value_object(const Value& value) {
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return nb::int_(*integer);
  if (const auto* real = std::get_if<double>(&value)) return nb::float_(*real);
  if (const auto* flag = std::get_if<bool>(&value)) return nb::bool_(*flag);
  return nb::str(std::get<std::string>(value).c_str());
}

nb::dict configuration_dict(const ConfigurationValues& configuration) {
  nb::dict result;
  for (const auto& [name, value] : configuration) result[name.c_str()] = value_object(value);
  return result;
}

nb::dict problem_dict(const Problem& problem) {
  nb::dict result;
  for (const auto& [name, value] : problem) result[name.c_str()] = value;
  return result;
}

const char* rung_identifier(Rung rung) {
  switch (rung) {
    case Rung::exact: return "exact";
    case Rung::same_arch_nearest_problem: return "same_arch_nearest_problem";
    case Rung::same_arch_any_problem: return "same_arch_any_problem";
    case Rung::same_major_arch: return "same_major_arch";
    case Rung::problem_default: return "problem_default";
    case Rung::default_configuration: return "default_configuration";
    case Rung::none: return "none";
  }
  return "?";
}

nb::dict selection_dict(const Selection& selection) {
  nb::dict result;
  result["configuration"] = configuration_dict(selection.configuration);
  result["rung"] = rung_identifier(selection.rung);
  result["rung_text"] = rung_name(selection.rung);
  result["reason"] = selection.reason;
  result["problem_distance"] = selection.problem_distance;
  if (selection.entry) {
    const DatabaseEntry& entry = *selection.entry;
    nb::dict taken;
    taken["device_name"] = entry.device_name;
    taken["arch"] = entry.arch;
    taken["driver"] = entry.driver;
    taken["problem"] = problem_dict(entry.problem);
    taken["median_ms"] = entry.time.median_ms;
    taken["spread"] = entry.time.spread;
    taken["samples"] = entry.time.samples;
    taken["gflops"] = entry.gflops;
    taken["gbps"] = entry.gbps;
    taken["date"] = entry.date;
    taken["tool_version"] = entry.tool_version;
    result["entry"] = taken;
  } else {
    result["entry"] = nb::none();
  }
  return result;
}

nb::dict device_dict(const DeviceIdentity& device) {
  nb::dict properties;
  for (const auto& [name, value] : device.properties) properties[name.c_str()] = value_object(value);
  nb::dict result;
  result["name"] = device.name;
  result["arch"] = device.arch();
  result["properties"] = properties;
  return result;
}

nb::dict description_dict(const KernelDatabase& database) {
  const KernelDescription& description = database.description;
  nb::list problem;
  for (const auto& [symbol, default_value] : description.problem) problem.append(nb::make_tuple(symbol, default_value));
  nb::list arguments;
  for (const ArgumentDescription& argument : description.arguments) {
    nb::dict item;
    item["name"] = argument.name;
    item["kind"] = argument.kind;
    item["dtype"] = argument.dtype;
    item["role"] = argument.role;
    item["count"] = argument.count;
    item["value"] = argument.value;
    item["scratch"] = argument.scratch;
    arguments.append(item);
  }
  nb::list parameters;
  for (const ParameterDescription& parameter : description.parameters) parameters.append(parameter.name);
  nb::dict result;
  result["kernel"] = description.kernel;
  result["template"] = description.template_name;
  result["problem"] = problem;
  result["arguments"] = arguments;
  result["parameters"] = parameters;
  result["constraints"] = description.constraints;
  result["default_configuration"] = configuration_dict(description.default_configuration);
  result["default_origin"] = description.default_origin;
  result["entries"] = database.entries.size();
  return result;
}

// Python ints become integer scalars, floats real ones, bools 0/1: the runtime converts to the argument's dtype.
void set_scalar(Arguments& arguments, const std::string& name, nb::handle value) {
  if (nb::isinstance<nb::bool_>(value)) arguments.set(name, static_cast<std::int64_t>(nb::cast<bool>(value)));
  else if (nb::isinstance<nb::int_>(value)) arguments.set(name, nb::cast<std::int64_t>(value));
  else if (nb::isinstance<nb::float_>(value)) arguments.set(name, nb::cast<double>(value));
  else throw nb::type_error(("scalar argument " + name + " must be an int or a float").c_str());
}

using Pointers = std::vector<std::pair<std::string, std::uintptr_t>>;

Arguments make_arguments(const Pointers& pointers, const nb::list& scalars) {
  Arguments arguments;
  for (const auto& [name, address] : pointers) arguments.set(name, reinterpret_cast<const void*>(address));
  for (nb::handle item : scalars) {
    nb::tuple pair = nb::cast<nb::tuple>(item);
    set_scalar(arguments, nb::cast<std::string>(pair[0]), pair[1]);
  }
  return arguments;
}

CUstream_st* stream_of(std::uintptr_t stream) { return reinterpret_cast<CUstream_st*>(stream); }

// A prepared launch (Kernel::prepare) called from Python with a fixed shape: prepared(stream, *addresses, *scalars),
// the values in the order of the names it was prepared with; the stream and the addresses are ints (torch's raw
// current stream, tensor.data_ptr()), scalars ints or floats (anything with __float__). Nothing but ints and floats
// crosses here, no names and no DLPack: kernlathe.torch's eager path, held to 3 us per call over Kernel::launch
// (issue 34).
constexpr std::size_t inline_values = 8;  // values kept on the stack; more take the heap

std::uintptr_t address_argument(PyObject* item, std::size_t position, const char* what) {
  if (!PyLong_Check(item)) {
    throw nb::type_error(("prepared launch: value " + std::to_string(position) + " (" + what + ") must be an int, not " +
                          Py_TYPE(item)->tp_name).c_str());
  }
  unsigned long long value = PyLong_AsUnsignedLongLong(item);
  if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) throw nb::python_error();
  return static_cast<std::uintptr_t>(value);
}

Value scalar_argument(PyObject* item, std::size_t position) {
  if (PyBool_Check(item)) return std::int64_t{item == Py_True};
  if (PyLong_Check(item)) {
    long long value = PyLong_AsLongLong(item);
    if (value == -1 && PyErr_Occurred()) throw nb::python_error();
    return std::int64_t{value};
  }
  double value = PyFloat_AsDouble(item);  // a float, or anything with __float__ (NumPy scalars, 0-d tensors)
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    throw nb::type_error(("prepared launch: value " + std::to_string(position) + " (a scalar) must be an int or a "
                          "float, not " + Py_TYPE(item)->tp_name).c_str());
  }
  return value;
}

void call_prepared(const PreparedLaunch& prepared, nb::args values) {
  const std::size_t pointer_count = prepared.pointer_count();
  const std::size_t scalar_count = prepared.scalar_count();
  if (values.size() != 1 + pointer_count + scalar_count) {
    throw nb::type_error(("prepared launch: takes the stream, " + std::to_string(pointer_count) + " addresses and " +
                          std::to_string(scalar_count) + " scalars, it was given " + std::to_string(values.size()) +
                          " values").c_str());
  }
  PyObject* tuple = values.ptr();
  std::uintptr_t stream = address_argument(PyTuple_GET_ITEM(tuple, 0), 0, "the stream");
  std::array<const void*, inline_values> pointer_storage{};
  std::array<Value, inline_values> scalar_storage{};
  std::vector<const void*> more_pointers(pointer_count > inline_values ? pointer_count : 0);
  std::vector<Value> more_scalars(scalar_count > inline_values ? scalar_count : 0);
  std::span<const void*> pointers = more_pointers.empty() ? std::span<const void*>(pointer_storage).first(pointer_count)
                                                          : std::span<const void*>(more_pointers);
  std::span<Value> scalars = more_scalars.empty() ? std::span<Value>(scalar_storage).first(scalar_count)
                                                  : std::span<Value>(more_scalars);
  for (std::size_t index = 0; index < pointer_count; ++index) {
    pointers[index] = reinterpret_cast<const void*>(address_argument(PyTuple_GET_ITEM(tuple, 1 + index), 1 + index, "an address"));
  }
  for (std::size_t index = 0; index < scalar_count; ++index) {
    std::size_t position = 1 + pointer_count + index;
    scalars[index] = scalar_argument(PyTuple_GET_ITEM(tuple, position), position);
  }
  nb::gil_scoped_release release;  // cuLaunchKernel waits when the launch queue is full
  prepared.launch(pointers, scalars, stream_of(stream));
}

// Seconds per Kernel::launch from a C++ loop (arguments bound and launched each time, as an application calling
// launch does): the baseline the Python per-call overhead is measured against (benchmarks/llama_layer_bench.py).
double time_launches(const Kernel& kernel, const Pointers& pointers, const nb::list& scalars, std::uintptr_t stream,
                     int count) {
  Arguments arguments = make_arguments(pointers, scalars);
  nb::gil_scoped_release release;
  auto start = std::chrono::steady_clock::now();
  for (int index = 0; index < count; ++index) kernel.launch(arguments, stream_of(stream));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / count;
}

// Seconds per PreparedLaunch::launch from a C++ loop, prepared once with the same names: what the eager path's native
// call costs without Python (benchmarks/llama_layer_bench.py prints it beside Kernel::launch's).
double time_prepared_launches(const Kernel& kernel, const Pointers& pointers, const nb::list& scalars,
                              std::uintptr_t stream, int count) {
  std::vector<std::string> pointer_names, scalar_names;
  std::vector<const void*> addresses;
  std::vector<Value> values;
  // A named Arguments: a range-for over make_arguments(...).items() would read the items of a destroyed temporary.
  const Arguments arguments = make_arguments(pointers, scalars);
  for (const Arguments::Item& item : arguments.items()) {
    if (item.is_pointer) {
      pointer_names.push_back(item.name);
      addresses.push_back(item.pointer);
    } else {
      scalar_names.push_back(item.name);
      values.push_back(item.scalar);
    }
  }
  PreparedLaunch prepared = kernel.prepare(pointer_names, scalar_names);
  nb::gil_scoped_release release;
  auto start = std::chrono::steady_clock::now();
  for (int index = 0; index < count; ++index) prepared.launch(addresses, values, stream_of(stream));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / count;
}

RuntimeOptions make_options(const std::vector<std::string>& databases, const std::string& sources,
                            const std::string& cubins, const std::string& cubin_cache, int device,
                            double nearest_problem_distance, bool use_stale_entries) {
  RuntimeOptions options;
  for (const std::string& path : databases) options.databases.emplace_back(path);
  options.sources = sources;
  options.cubins = cubins;
  options.cubin_cache = cubin_cache;
  options.device = device;
  options.select.nearest_problem_distance = nearest_problem_distance;
  options.select.use_stale_entries = use_stale_entries;
  return options;
}

// A built-in device profile (tuner/spec/model.h): a board by the name the driver reports, or an arch's representative.
DeviceIdentity profile_identity(const std::string& arch, const std::string& device_name) {
  if (!device_name.empty()) {
    DeviceProperties board = named_device_profile(device_name);
    if (!arch.empty() && board.arch_name() != arch)
      throw InputError("device '" + device_name + "' is " + board.arch_name() + ", not " + arch);
    return runtime_identity(board);
  }
  return runtime_identity(device_profile(arch));
}

// The DLPack device of an object (kDLCPU 1, kDLCUDA 2, ...), its address and its size in bytes, through nanobind's
// DLPack import: for objects that have neither __cuda_array_interface__ nor a torch tensor's data_ptr.
nb::tuple dlpack_buffer(nb::handle object) {
  nb::ndarray<> array = nb::cast<nb::ndarray<>>(object);
  std::size_t bytes = array.size() * array.itemsize();
  return nb::make_tuple(array.device_type(), array.device_id(), reinterpret_cast<std::uintptr_t>(array.data()), bytes);
}

}  // namespace

}  // namespace kernlathe::python

using namespace kernlathe;
using namespace kernlathe::python;

NB_MODULE(_kernlathe, module) {
  module.doc() = "kernlathe's runtime library: tuned GPU kernels, selected by a fallback ladder and launched";
  // A Runtime held by a module-level variable of the application is still alive when the interpreter tears the
  // extension down; nanobind would report it as a leak at every exit.
  nb::set_leak_warnings(false);
  module.def("version", [] { return std::string(kernlathe::version()); });

  nb::exception<RuntimeError> kernlathe_error(module, "KernlatheError", PyExc_RuntimeError);
  nb::exception<DatabaseError>(module, "DatabaseError", kernlathe_error);
  nb::register_exception_translator([](const std::exception_ptr& error, void*) {
    try {
      std::rethrow_exception(error);
    } catch (const InputError& input) {
      PyErr_SetString(PyExc_ValueError, input.what());
    }
  });

  module.def("known_archs", &known_device_profiles);
  module.def("known_devices", &known_device_names);
  module.def("dlpack_buffer", &dlpack_buffer, "object"_a);
  module.def("read_database", [](const std::string& path) { return description_dict(read_database(path)); }, "path"_a);

  nb::class_<PreparedLaunch>(module, "PreparedLaunch")
      .def("__call__", &call_prepared, "values"_a)
      .def_prop_ro("pointer_count", &PreparedLaunch::pointer_count)
      .def_prop_ro("scalar_count", &PreparedLaunch::scalar_count);

  nb::class_<Kernel>(module, "Kernel")
      .def_prop_ro("name", &Kernel::name)
      .def_prop_ro("problem", [](const Kernel& kernel) { return problem_dict(kernel.problem()); })
      .def_prop_ro("selection", [](const Kernel& kernel) { return selection_dict(kernel.selection()); })
      .def_prop_ro("shape", [](const Kernel& kernel) {
        const LaunchShape& shape = kernel.shape();
        return nb::make_tuple(nb::make_tuple(shape.grid[0], shape.grid[1], shape.grid[2]),
                              nb::make_tuple(shape.block[0], shape.block[1], shape.block[2]), shape.dynamic_shared_bytes);
      })
      .def_prop_ro("binary_source", [](const Kernel& kernel) { return std::string(binary_source_name(kernel.binary_source())); })
      .def_prop_ro("compile_ms", &Kernel::compile_ms)
      .def_prop_ro("load_ms", &Kernel::load_ms)
      .def_prop_ro("first_use", [](const Kernel& kernel) {
        const Kernel::FirstUseTimes& times = kernel.first_use();
        nb::dict result;
        result["plan_ms"] = times.plan_ms;
        result["binary_ms"] = times.binary_ms;
        result["module_load_ms"] = times.module_load_ms;
        result["total_ms"] = times.total_ms;
        return result;
      })
      .def_prop_ro("arguments", [](const Kernel& kernel) {
        nb::list result;
        for (const Kernel::ApplicationArgument& argument : kernel.application_arguments()) {
          nb::dict item;
          item["name"] = argument.description.name;
          item["kind"] = argument.description.kind;
          item["dtype"] = argument.description.dtype;
          item["role"] = argument.description.role;
          item["count"] = argument.count;
          item["element_bytes"] = argument.element_bytes;
          item["default"] = argument.description.kind == "scalar" ? value_object(argument.default_value) : nb::none();
          result.append(item);
        }
        return result;
      })
      .def("launch", [](const Kernel& kernel, const Pointers& pointers, const nb::list& scalars, std::uintptr_t stream) {
        Arguments arguments = make_arguments(pointers, scalars);
        nb::gil_scoped_release release;
        kernel.launch(arguments, stream_of(stream));
      }, "pointers"_a, "scalars"_a, "stream"_a)
      .def("prepare", [](const Kernel& kernel, const std::vector<std::string>& pointer_names,
                         const std::vector<std::string>& scalar_names) {
        return kernel.prepare(pointer_names, scalar_names);
      }, "pointer_names"_a, "scalar_names"_a, nb::keep_alive<0, 1>())
      .def("time_launches", &time_launches, "pointers"_a, "scalars"_a, "stream"_a, "count"_a)
      .def("time_prepared_launches", &time_prepared_launches, "pointers"_a, "scalars"_a, "stream"_a, "count"_a);

  nb::class_<Runtime>(module, "Runtime")
      .def("__init__", [](Runtime* runtime, const std::vector<std::string>& databases, const std::string& sources,
                          const std::string& cubins, const std::string& cubin_cache, int device,
                          double nearest_problem_distance, bool use_stale_entries) {
        new (runtime) Runtime(make_options(databases, sources, cubins, cubin_cache, device, nearest_problem_distance,
                                           use_stale_entries));
      }, "databases"_a, "sources"_a, "cubins"_a, "cubin_cache"_a, "device"_a, "nearest_problem_distance"_a,
         "use_stale_entries"_a)
      .def("kernel", [](Runtime& runtime, const std::string& name, const Problem& problem) -> const Kernel& {
        nb::gil_scoped_release release;  // first use may compile with NVRTC for seconds
        return runtime.kernel(name, problem);
      }, "name"_a, "problem"_a, nb::rv_policy::reference_internal)
      .def("select", [](Runtime& runtime, const std::string& name, const Problem& problem) {
        return selection_dict(runtime.select(name, problem));
      }, "name"_a, "problem"_a)
      .def("select_on", [](Runtime& runtime, const std::string& name, const Problem& problem, const std::string& arch,
                           const std::string& device_name, double nearest_problem_distance, bool use_stale_entries) {
        DeviceIdentity device = profile_identity(arch, device_name);
        SelectOptions options;
        options.nearest_problem_distance = nearest_problem_distance;
        options.use_stale_entries = use_stale_entries;
        nb::dict result = selection_dict(select_usable(runtime.database(name), device, problem, options));
        result["device"] = device_dict(device);
        result["problem"] = problem_dict(complete_problem(runtime.database(name).description, problem));
        return result;
      }, "name"_a, "problem"_a, "arch"_a, "device_name"_a, "nearest_problem_distance"_a, "use_stale_entries"_a)
      .def("device", [](Runtime& runtime) { return device_dict(runtime.device()); })
      .def("kernels", &Runtime::kernels)
      .def("warnings", &Runtime::warnings)
      .def("description", [](Runtime& runtime, const std::string& name) { return description_dict(runtime.database(name)); },
           "name"_a);
}
