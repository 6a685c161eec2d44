"""A PEP 517 build backend for the ktune package that needs nothing but the standard library.

pip builds packages in an isolated environment and installs their build requirements there; a
machine without a package index (the GPU machines, CI) cannot fetch setuptools. This backend
writes the wheel itself: the pure-Python package, its metadata, and libktune.so when
$KTUNE_LIBRARY names one at build time (then the wheel is tagged for this platform).
"""
import base64
import hashlib
import os
import platform
import re
import zipfile

NAME = "ktune"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version():
    with open(os.path.join(HERE, "ktune", "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: autotuned CUDA kernels from PyTorch, CuPy and any CUDA array\n"
            "Requires-Python: >=3.9\nLicense: see the ktune repository\n")


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    library = os.environ.get("KTUNE_LIBRARY", "")
    if library and not os.path.isfile(library):
        raise RuntimeError(f"KTUNE_LIBRARY={library}: no such file")
    tag = f"py3-none-linux_{platform.machine()}" if library else "py3-none-any"
    name = f"{NAME}-{version}-{tag}.whl"
    info = f"{NAME}-{version}.dist-info"
    files = []
    for folder, _, names in os.walk(os.path.join(HERE, "ktune")):
        for n in sorted(names):
            if n.endswith(".py"):
                full = os.path.join(folder, n)
                with open(full, "rb") as f:
                    files.append((os.path.relpath(full, HERE), f.read()))
    if library:
        with open(library, "rb") as f:
            files.append(("ktune/libktune.so", f.read()))
    files.append((f"{info}/METADATA", _metadata(version).encode()))
    wheel = (f"Wheel-Version: 1.0\nGenerator: ktune_build\nRoot-Is-Purelib: {'false' if library else 'true'}\n"
             f"Tag: {tag}\n")
    files.append((f"{info}/WHEEL", wheel.encode()))
    record = [_record_line(p, d) for p, d in files] + [f"{info}/RECORD,,"]
    files.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            info_ = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info_.external_attr = 0o644 << 16
            z.writestr(info_, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    raise NotImplementedError("ktune is installed from its source folder: pip install ./python")
