"""cupy.cuda of the stand-in (see __init__.py): one device with tune's sm_90 profile."""

import types

ATTRIBUTES = {1: 1024, 10: 32, 12: 65536, 16: 132, 39: 2048, 75: 9, 76: 0, 81: 228 * 1024, 82: 65536,
              97: 227 * 1024, 106: 32}


class Device:
    def __init__(self, device=0):
        self.id = device
        self.compute_capability = "90"
        self.attributes = {"MaxThreadsPerBlock": 1024}

    def use(self):
        pass

    def synchronize(self):
        pass


class Stream:
    pass


class Event:
    done = True

    def record(self, stream=None):
        pass


def get_elapsed_time(start, end):
    return 1.0


runtime = types.SimpleNamespace(
    driverGetVersion=lambda: 13000,
    getDeviceProperties=lambda device: {"uuid": bytes(16), "name": b"stand-in"},
    deviceGetAttribute=lambda attribute, device: ATTRIBUTES[attribute],
    memset=lambda *arguments: None,
)
