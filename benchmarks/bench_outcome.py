"""What a benchmark's Python part failed or missed, counted the way benchmarks/common.sh counts a shell script's.

    outcome = Outcome("torch_reference")
    outcome.failed("flash backend: CUDA error ...")    # a step that could not be measured; the script goes on
    outcome.missed("softmax 16384x4096: 88.1% of copy, floor 90%")
    outcome.finish()                                    # final line; exit 1 if anything failed or missed, else 0

Where the Python part runs under a benchmark script (BENCH_LEDGER set by benchmarks/common.sh), each record is also
appended to that ledger, so the script's final line names it and the step is not counted twice.
Bad usage exits 2 (Outcome.usage), as the shell scripts do.
"""
import os
import sys


class Outcome:
    def __init__(self, name):
        self.name = name
        self.records = []  # (kind, what), kind "failed" or "missed"

    def _record(self, kind, what):
        self.records.append((kind, what))
        print(f"{self.name}: {kind.upper()}: {what}", file=sys.stderr)
        ledger = os.environ.get("BENCH_LEDGER")
        if ledger:
            with open(ledger, "a") as file:
                file.write(f"{kind}\t{what}\n")

    def failed(self, what):
        self._record("failed", what)

    def missed(self, what):
        self._record("missed", what)

    def count(self, kind):
        return sum(1 for record_kind, _ in self.records if record_kind == kind)

    def final_line(self):
        if not self.records:
            return f"{self.name}: every step ran and every floor held"
        listed = "; ".join(what for _, what in self.records)
        return f"{self.name}: {self.count('failed')} failed step(s), {self.count('missed')} missed floor(s): {listed}"

    def finish(self, stream=None):
        """Prints the final line (stdout unless another stream is named) and exits 1 if anything was recorded."""
        print(self.final_line(), file=stream or sys.stdout)
        sys.exit(1 if self.records else 0)

    def usage(self, message, usage_text):
        print(f"{self.name}: {message}\n{usage_text}", file=sys.stderr)
        sys.exit(2)
