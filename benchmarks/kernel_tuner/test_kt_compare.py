"""Tests of the Kernel Tuner comparison that need no GPU: tune's instantiation written again (checked against
tune's own cubin cache keys), the restrictions against `tune space`, arguments, verification, and a whole Kernel
Tuner run through a CuPy stand-in that compiles with the real NVRTC and runs NumPy models of the kernels.

  TUNE_BINARY=build/tune python3 -m unittest benchmarks/kernel_tuner/test_kt_compare.py
Needs: the tune binary, NVRTC (libnvrtc.so.13 on the library path), PyYAML, NumPy and kernel_tuner==1.5.0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
# The CuPy stand-in goes first on the path, before Kernel Tuner imports CuPy.
sys.path[:0] = [str(HERE / "test_support"), str(HERE)]

import cupy  # noqa: E402  (the stand-in)
import numpy  # noqa: E402

import kernel_tuner_inputs as inputs  # noqa: E402
import kt_compare  # noqa: E402
import tune_spec  # noqa: E402

TUNE = Path(os.environ.get("TUNE_BINARY", REPOSITORY / "build" / "tune")).resolve()


def space(spec: str, problem: str = "") -> tuple[dict, list[dict], tune_spec.KernelSpec]:
    case = kt_compare.Case("test", spec, problem, "exhaustive")
    summary, configurations = kt_compare.Tune(TUNE, "sm_90").space(case)
    loaded = tune_spec.load_spec(REPOSITORY / spec, summary["parameters"], tune_spec.parse_problem_overrides(problem))
    return summary, configurations, loaded


class Instantiation(unittest.TestCase):
    def test_prelude_and_name_of_a_transpose_configuration(self):
        _, _, spec = space("kernels/transpose.yaml")
        instance = tune_spec.Instantiator(spec, tune_spec.SM90_PROFILE).instantiate(
            {"TILE": 32, "BLOCK_ROWS": 8, "LAYOUT": "swizzled"})
        self.assertTrue(instance.source.startswith(
            "#define TILE 32\n#define BLOCK_ROWS 8\n#define LAYOUT_swizzled 1\n#define LAYOUT 2\n"
            "#define THREADS 256\n#define TILE_BYTES 4096\n#line 1 \"transpose.cu\"\n// Transpose"))
        self.assertEqual(instance.name_expression, "transpose<32, 8, 2>")
        self.assertEqual(instance.block, (32, 8, 1))
        self.assertEqual(instance.grid, (256, 256, 1))
        self.assertEqual(instance.shared_memory, 0)

    def test_macro_and_template_argument_spellings(self):
        self.assertEqual(tune_spec.define_line("FLAG", True, -1), "#define FLAG 1\n")
        self.assertEqual(tune_spec.define_line("BIG", 2 ** 40, -1), "#define BIG 1099511627776LL\n")
        self.assertEqual(tune_spec.define_line("LOW", -(2 ** 63), -1), "#define LOW (-9223372036854775807LL - 1)\n")
        self.assertEqual(tune_spec.define_line("RATIO", 2.0, -1), "#define RATIO 2.0\n")
        self.assertEqual(tune_spec.define_line("KIND", "two-pass", -1), "#define KIND_two_pass 1\n")
        self.assertEqual(tune_spec.template_argument_text(False), "false")
        self.assertEqual(tune_spec.float_text(0.1), "0.10000000000000001")

    def test_functions_follow_tune(self):
        evaluate = lambda text: tune_spec.Expression(text, "test").evaluate({})
        self.assertEqual(evaluate("ceil_div(7, 2)"), 4)
        self.assertEqual(evaluate("ceil_div(-7, 2)"), -3)
        self.assertEqual(evaluate("ilog2(1024)"), 10)
        self.assertEqual(evaluate("is_pow2(96)"), False)
        self.assertEqual(evaluate("round(2.5)"), 2)
        self.assertEqual(evaluate("-7 // 2"), -4)

    def _assert_cache_keys_match(self, spec_file: str, problem: str):
        """tune's cubin cache, filled by compiling every configuration, holds exactly the keys of our sources."""
        _, configurations, spec = space(spec_file, problem)
        instantiator = tune_spec.Instantiator(spec, tune_spec.SM90_PROFILE)
        options = tune_spec.tune_compile_options(spec, "sm_90")
        version = kt_compare.nvrtc_version()
        ours = {tune_spec.cubin_cache_key(instantiator.instantiate(c), instantiator.headers, options, "sm_90", version)
                for c in configurations}
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run([str(TUNE), "compile-check", spec_file, "--problem", problem, "--arch", "sm_90", "--all"],
                           check=True, capture_output=True, cwd=REPOSITORY, env={**os.environ, "XDG_CACHE_HOME": cache})
            theirs = {name[:-6] for name in os.listdir(Path(cache) / "kernlathe" / "cubins") if name.endswith(".cubin")}
        self.assertEqual(len(ours), len(configurations))
        self.assertEqual(ours, theirs)

    def test_sources_are_byte_for_byte_tunes_transpose(self):
        self._assert_cache_keys_match("kernels/transpose.yaml", "ROWS=8192,COLS=8192")

    def test_sources_are_byte_for_byte_tunes_vector_add_small(self):
        self._assert_cache_keys_match("benchmarks/kernel_tuner/specs/vector_add_small.yaml", "N=67108864")

    def test_a_changed_prelude_changes_the_key(self):
        _, configurations, spec = space("kernels/transpose.yaml")
        instance = tune_spec.Instantiator(spec, tune_spec.SM90_PROFILE).instantiate(configurations[0])
        options = tune_spec.tune_compile_options(spec, "sm_90")
        key = tune_spec.cubin_cache_key(instance, [], options, "sm_90", "13.0")
        instance.source = instance.source.replace("#define THREADS", "#define  THREADS")
        self.assertNotEqual(key, tune_spec.cubin_cache_key(instance, [], options, "sm_90", "13.0"))


class Restrictions(unittest.TestCase):
    def _assert_same_space(self, spec_file: str, restrictions: str = "translated"):
        from kernel_tuner.searchspace import Searchspace

        summary, configurations, spec = space(spec_file)
        if restrictions == "translated":
            restriction = inputs.translated_restrictions(spec, tune_spec.SM90_PROFILE)
        else:
            restriction = inputs.membership_restriction(spec, configurations)
        searchspace = Searchspace(inputs.tune_parameters(spec), restriction, 1024)
        names = [p.name for p in spec.parameters]
        expected = {tuple(inputs.to_kernel_tuner_configuration(spec, c)[n] for n in names) for c in configurations}
        self.assertEqual(searchspace.size, summary["valid"])
        self.assertEqual(set(map(tuple, searchspace.list)), expected)

    def test_integer_parameters_and_derived_values(self):
        self._assert_same_space("kernels/conv3x3.yaml")

    def test_enumeration_compared_by_name(self):
        self._assert_same_space("kernels/transpose.yaml")
        self._assert_same_space("kernels/reduce_sum.yaml")

    def test_booleans_and_problem_symbols(self):
        self._assert_same_space("kernels/softmax.yaml")
        self._assert_same_space("kernels/saxpy.yaml")

    def test_conditional_parameters_of_the_gemm_space(self):
        # 2e10 combinations, 14,838 canonical configurations under 23 'when:' conditions.
        self._assert_same_space("kernels/gemm_f16.yaml")

    def test_membership(self):
        self._assert_same_space("kernels/conv3x3.yaml", "membership")

    def test_enumeration_names_become_indices(self):
        _, _, spec = space("kernels/transpose.yaml")
        self.assertIn("TILE * (TILE + (1 if LAYOUT == 1 else 0)) * 4 <= 48 * 1024",
                      inputs.translated_restrictions(spec, tune_spec.SM90_PROFILE))

    def test_a_derived_string_is_refused(self):
        _, _, spec = space("kernels/transpose.yaml")
        spec.constraints.append(tune_spec.Expression("'padded' == 'padded'", "test"))
        with self.assertRaises(tune_spec.SpecError):
            inputs.translated_restrictions(spec, tune_spec.SM90_PROFILE)


class ArgumentsAndVerification(unittest.TestCase):
    def test_arguments_follow_the_spec(self):
        _, _, spec = space("kernels/conv3x3.yaml", "W=64,H=32")
        values = inputs.argument_values(spec, tune_spec.Instantiator(spec, tune_spec.SM90_PROFILE), numpy)
        width, height, image, weights, output = values
        self.assertEqual((width.dtype, int(width), int(height)), (numpy.int32, 64, 32))
        self.assertEqual((image.dtype, image.size, weights.size), (numpy.float32, 64 * 32, 9))
        self.assertEqual(list(image[:2]), [numpy.float32(v) for v in inputs.tune_random_values(7, 2, -1.0, 1.0,
                                                                                              numpy.float64, numpy)])
        self.assertEqual(list(weights), list(inputs.tune_random_values(8, 9, -1.0, 1.0, numpy.float32, numpy)))
        self.assertTrue(numpy.isnan(output).all())  # poisoned, as tune fills outputs before a verified run
        self.assertEqual(inputs.checked_outputs(spec), [False, False, False, False, True])

    def test_random_contents_are_tunes_generator(self):
        # Seed 0: mix(0) = 0, so element i is SplitMix64's (i + 1)-th output from state 0, published values.
        draws = inputs.tune_random_values(0, 3, 0.0, 1.0, numpy.float64, numpy)
        published = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
        self.assertEqual(list(draws), [(value >> 11) * 2.0 ** -53 for value in published])

        def element(seed, index, low, high):  # element_values.cpp random_element, on Python integers
            draw = inputs._mix((inputs._mix(seed) + (index + 1) * inputs._GOLDEN_GAMMA) & inputs._MASK64)
            return low + (high - low) * ((draw >> 11) * 2.0 ** -53)

        # Slices of 4 elements, so the counter must carry across slice boundaries.
        values = inputs.tune_random_values(51, 11, -2.0, 3.0, numpy.float64, numpy, slice_elements=4)
        self.assertEqual(list(values), [element(51, i, -2.0, 3.0) for i in range(11)])
        as_float = inputs.tune_random_values(51, 11, -2.0, 3.0, numpy.float32, numpy, slice_elements=4)
        self.assertEqual(list(as_float), [numpy.float32(element(51, i, -2.0, 3.0)) for i in range(11)])
        # Values printed by tune's own random_element (tuner/run/element_values.cpp) on [-1, 1): element 4194304
        # of seed 7 (the first of a second 2^22-element slice) and the last element of a 2^26-element buffer.
        self.assertEqual(inputs.tune_random_values(7, 4194305, -1.0, 1.0, numpy.float64, numpy)[-1],
                         0.36365163534053946)
        self.assertEqual(inputs.tune_random_values(51, 1, -1.0, 1.0, numpy.float64, numpy)[0],
                         element(51, 0, -1.0, 1.0))
        self.assertEqual(element(51, 67108863, -1.0, 1.0), -0.81635751320684791)
        integers = inputs.tune_random_values(9, 1000, -3.0, 300.0, numpy.int8, numpy)
        self.assertEqual((int(integers.min()), int(integers.max())), (-3, 127))  # floored, clamped to int8

    def test_verify_applies_tunes_tolerance(self):
        _, _, spec = space("kernels/conv3x3.yaml", "W=64,H=32")   # f32: relative 1e-5, absolute 1e-5
        verify = inputs.make_verify(spec, numpy)
        expected = numpy.array([1.0, 100.0, 0.0], dtype=numpy.float32)
        answer = [None, None, None, None, expected]
        within = expected + numpy.array([1.9e-5, 1.0e-3, 0.9e-5], dtype=numpy.float32)
        self.assertTrue(verify(answer, [None] * 4 + [within]))
        self.assertFalse(verify(answer, [None] * 4 + [expected + numpy.float32(3e-5)]))
        self.assertFalse(verify(answer, [None] * 4 + [numpy.array([1.0, 100.0, numpy.nan], numpy.float32)]))

    def test_exact_tolerance_rejects_any_difference(self):
        _, _, spec = space("kernels/transpose.yaml", "ROWS=4,COLS=4")
        verify = inputs.make_verify(spec, numpy)
        expected = numpy.arange(16, dtype=numpy.float32)
        self.assertTrue(verify([None, None, None, expected], [None, None, None, expected.copy()]))
        self.assertFalse(verify([None, None, None, expected],
                                [None, None, None, numpy.nextafter(expected, numpy.float32(99))]))

    def test_same_instantiation(self):
        self.assertTrue(inputs.same_instantiation("vector_add<256, 4, 1, false>", "vector_add<256, 4, 1, 0>"))
        self.assertFalse(inputs.same_instantiation("vector_add<256, 4, 1, false>", "vector_add<256, 4, 1, 1>"))
        self.assertFalse(inputs.same_instantiation("transpose<16, 2, 0>", "transpose<16, 2, 1>"))


def transpose_model(grid, block, arguments, shared):
    rows, cols, source, destination = arguments
    destination[:] = source.reshape(int(rows), int(cols)).T.ravel()


def vector_add_model(grid, block, arguments, shared):
    n, a, b, c = arguments
    c[:int(n)] = a[:int(n)] + b[:int(n)]


def conv3x3_model(grid, block, arguments, shared):
    width, height, image, weights, output = arguments
    padded = numpy.pad(image.reshape(int(height), int(width)).astype(numpy.float64), 1)
    result = sum(float(weights[3 * dy + dx]) * padded[dy:dy + int(height), dx:dx + int(width)]
                 for dy in range(3) for dx in range(3))
    output[:] = result.ravel().astype(numpy.float32)


class KernelTunerRun(unittest.TestCase):
    """The timed process's work (kernel_tuner_inputs.run) through Kernel Tuner with the CuPy stand-in."""

    def setUp(self):
        cupy.KERNEL_MODELS.update(transpose=transpose_model, vector_add=vector_add_model, conv3x3=conv3x3_model)
        cupy.COMPILED.clear()

    def _run(self, case: kt_compare.Case, restrictions: str = "translated") -> tuple[dict, list[dict]]:
        summary, configurations = kt_compare.Tune(TUNE, "sm_90").space(case)
        plan = kt_compare.kernel_tuner_plan(case, summary, configurations, restrictions)
        return inputs.run(plan), configurations

    def _tune_lowered_names(self, case: kt_compare.Case) -> set[str]:
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run([str(TUNE), "compile-check", case.spec, "--problem", case.problem, "--arch", "sm_90",
                            "--all"], check=True, capture_output=True, cwd=REPOSITORY,
                           env={**os.environ, "XDG_CACHE_HOME": cache})
            folder = Path(cache) / "kernlathe" / "cubins"
            return {path.read_text() for path in folder.glob("*.name")}

    def test_exhaustive_transpose_compiles_tunes_kernels(self):
        case = kt_compare.Case("transpose", "kernels/transpose.yaml", "ROWS=96,COLS=160", "exhaustive",
                               kernel_tuner_name="transpose<TILE, BLOCK_ROWS, LAYOUT>")
        result, configurations = self._run(case)
        self.assertEqual((result["evaluated"], result["failed"]), (45, 0))
        self.assertIn(result["best_configuration"], configurations)
        # Every kernel Kernel Tuner compiled is one tune compiles (same mangled name), and all of tune's were.
        self.assertEqual({lowered for _, lowered in cupy.COMPILED}, self._tune_lowered_names(case))

    def test_exhaustive_vector_add_small(self):
        case = kt_compare.Case("vector_add_small", "benchmarks/kernel_tuner/specs/vector_add_small.yaml", "N=4096",
                               "exhaustive")
        result, _ = self._run(case, "membership")
        self.assertEqual((result["evaluated"], result["failed"]), (36, 0))
        self.assertEqual({lowered for _, lowered in cupy.COMPILED}, self._tune_lowered_names(case))

    def test_random_sample_of_conv3x3(self):
        case = kt_compare.Case("conv3x3", "kernels/conv3x3.yaml", "W=64,H=32", "random", budget=12, seed=3)
        result, configurations = self._run(case)
        self.assertEqual((result["evaluated"], result["failed"]), (12, 0))
        compiled = [name for name, _ in cupy.COMPILED]
        self.assertEqual(len(set(compiled[1:])), 12)  # the reference, then twelve distinct configurations

    def test_a_wrong_result_stops_the_run(self):
        def wrong_for_swizzled(grid, block, arguments, shared):
            transpose_model(grid, block, arguments, shared)
            if cupy.COMPILED[-1][0].endswith(", 2>"):
                arguments[3][0] += 1
        cupy.KERNEL_MODELS["transpose"] = wrong_for_swizzled
        case = kt_compare.Case("transpose", "kernels/transpose.yaml", "ROWS=32,COLS=32", "exhaustive",
                               kernel_tuner_name="transpose<TILE, BLOCK_ROWS, LAYOUT>")
        with tempfile.TemporaryDirectory() as folder:
            working_folder = os.getcwd()
            os.chdir(folder)  # Kernel Tuner writes the failing configuration's source here
            try:
                with self.assertRaisesRegex(RuntimeError, "verification failed"):
                    self._run(case)
            finally:
                os.chdir(working_folder)


if __name__ == "__main__":
    unittest.main()
