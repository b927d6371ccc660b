"""How each op was chosen. kernlathe.torch records one Choice per (op, kernel, problem, route) the first time it
runs; explain() reads them back, for the whole process or for one call of a function, and with arch= or device= it
plans a function's ops on a built-in device profile without a GPU (the inputs become meta tensors)."""

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, Optional

# route: "kernel" (a tuned kernel launched), "planned" (selection on a device profile, nothing launched),
# "torch" (PyTorch computed it: a case no shipped kernel covers, or a CPU tensor), with the reason said.
ROUTES = ("kernel", "planned", "torch")


@dataclass(frozen=True)
class Choice:
    op: str
    route: str
    kernel: Optional[str]
    problem: Dict[str, int]
    reason: str
    rung: Optional[str] = None
    configuration: Optional[Dict[str, Any]] = None
    binary_source: Optional[str] = None
    device: Optional[str] = None

    def line(self):
        problem = ",".join(f"{symbol}={value}" for symbol, value in self.problem.items())
        kernel = f"{self.kernel}({problem})" if self.kernel else "-"
        where = f" [{self.rung}]" if self.rung else ""
        binary = f" binary: {self.binary_source}." if self.binary_source else ""
        return f"{self.op}: {self.route} {kernel}{where}: {self.reason}{binary}"


class Explanation(list):
    """A list of Choice; str() gives one line each."""

    def __str__(self):
        if not self:
            return "no kernlathe op ran"
        return "\n".join(choice.line() for choice in self)


_lock = threading.Lock()
_seen = {}                 # key -> Choice, in first-seen order: the whole process
_local = threading.local()  # .collectors: Explanation lists of explain(fn) calls in progress; .planning: profile
# explain(fn) calls in progress in any thread: the ops' eager path reads this module global on every call and records
# a choice it has seen only while it is non-zero (a global read, where collecting() reads a thread-local).
collectors_active = 0


def _key(choice):
    return (choice.op, choice.route, choice.kernel, tuple(sorted(choice.problem.items())))


def record(choice):
    """Called by the ops for every call (cheap when the choice was seen): keeps the first of each kind."""
    key = _key(choice)
    with _lock:
        if key not in _seen:
            _seen[key] = choice
    for collector in getattr(_local, "collectors", ()):
        if all(_key(existing) != key for existing in collector):
            collector.append(choice)


def collecting():
    """Whether an explain(fn) call is collecting in this thread (the ops then record every call, not only the first)."""
    return bool(getattr(_local, "collectors", None))


def planning():
    """The device profile explain(..., arch=/device=) is planning on, as (arch, device), or None."""
    return getattr(_local, "planning", None)


@contextmanager
def _collect(profile=None):
    global collectors_active
    collector = Explanation()
    collectors = getattr(_local, "collectors", [])
    _local.collectors = collectors + [collector]
    previous = planning()
    if profile is not None:
        _local.planning = profile
    with _lock:
        collectors_active += 1
    try:
        yield collector
    finally:
        with _lock:
            collectors_active -= 1
        _local.collectors = collectors
        _local.planning = previous


def _to_meta(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.to("meta")
    if isinstance(value, (list, tuple)):
        return type(value)(_to_meta(item) for item in value)
    if isinstance(value, dict):
        return {key: _to_meta(item) for key, item in value.items()}
    return value


def explain(fn=None, *args, arch=None, device=None, **kwargs):
    """explain(): every choice made in this process so far. explain(fn, *args, **kwargs): calls fn and returns the
    choices its kernlathe ops made. With arch="sm_90" or device="NVIDIA H200", fn runs on meta tensors and each op
    says what the runtime would select on that device profile (no GPU needed, nothing launched)."""
    if fn is None:
        with _lock:
            return Explanation(_seen.values())
    profile = (arch or "", device or "") if (arch or device) else None
    if profile is not None:
        args, kwargs = _to_meta(args), _to_meta(kwargs)
    with _collect(profile) as collector:
        fn(*args, **kwargs)
    return collector
