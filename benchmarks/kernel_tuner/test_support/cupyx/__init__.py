"""cupyx of the CuPy stand-in (see ../cupy/__init__.py)."""


def get_runtime_info():
    return "Device 0 Name: stand-in GPU\nDevice 0 PCI Bus ID: 0000:00:00.0\n"
