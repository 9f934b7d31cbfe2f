"""A PEP 517 build backend for this package, standard library only.

pip builds in an isolated environment and would fetch setuptools from an
index; this one needs nothing, so ``pip install ./clients/python`` works
offline. It builds a pure-Python wheel of the ``sandcap`` package.
"""
import base64
import hashlib
import os
import zipfile

NAME = "sandcap"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
TAG = "py3-none-any"

METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: Client for sandcap sandboxes: the local API daemon, or the sandcap CLI
License: MIT
Requires-Python: >=3.9
"""
WHEEL = f"""Wheel-Version: 1.0
Generator: sandcap-build-backend
Root-Is-Purelib: true
Tag: {TAG}
"""


def _files():
    pkg = os.path.join(HERE, NAME)
    for root, _dirs, files in os.walk(pkg):
        for f in sorted(files):
            if f.endswith(".py") or f == "py.typed":
                full = os.path.join(root, f)
                yield full, os.path.relpath(full, HERE)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{arcname},sha256={digest.decode()},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(METADATA)
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(WHEEL)
    return DIST_INFO


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{NAME}-{VERSION}-{TAG}.whl"
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in _files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            record.append(_record_line(arc, data))
        for fname, text in (("METADATA", METADATA), ("WHEEL", WHEEL)):
            arc = f"{DIST_INFO}/{fname}"
            z.writestr(arc, text)
            record.append(_record_line(arc, text.encode()))
        record.append(f"{DIST_INFO}/RECORD,,")
        z.writestr(f"{DIST_INFO}/RECORD", "\n".join(record) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    import tarfile

    name = f"{NAME}-{VERSION}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "build_backend.py"):
            t.add(os.path.join(HERE, rel), f"{NAME}-{VERSION}/{rel}")
        for full, arc in _files():
            t.add(full, f"{NAME}-{VERSION}/{arc}")
        info = tarfile.TarInfo(f"{NAME}-{VERSION}/PKG-INFO")
        data = METADATA.encode()
        info.size = len(data)
        import io

        t.addfile(info, io.BytesIO(data))
    return name
