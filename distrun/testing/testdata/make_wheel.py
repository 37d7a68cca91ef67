"""Writes a pure-Python wheel, NAME-VERSION-py3-none-any.whl, into OUTDIR.

    make_wheel.py NAME VERSION OUTDIR

The package NAME (a module of that name, '-' read as '_') holds one
function, greeting(), that returns "NAME VERSION from a wheelhouse". The
wheel is what pip installs from a --find-links folder in the tests of
`distrun wrap --pip`: a package no index has, so it can only come from
the wheelhouse. Standard library only (zipfile), as the wheel format
(PEP 427) asks: METADATA, WHEEL and a RECORD of every file's hash.
"""
import base64
import hashlib
import os
import sys
import zipfile


def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "%s,sha256=%s,%d" % (path, digest.decode(), len(data))


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: make_wheel.py NAME VERSION OUTDIR")
    name, version, outdir = sys.argv[1:]
    module = name.replace("-", "_")
    info = "%s-%s.dist-info" % (module, version)
    files = {
        module + "/__init__.py": (
            "def greeting():\n    return %r\n" % ("%s %s from a wheelhouse" % (name, version))
        ).encode(),
        info + "/METADATA": (
            "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
        ).encode(),
        info + "/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: make_wheel.py\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n"
        ).encode(),
    }
    records = [record_line(path, data) for path, data in files.items()]
    records.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(records) + "\n").encode()
    os.makedirs(outdir, exist_ok=True)
    wheel = os.path.join(outdir, "%s-%s-py3-none-any.whl" % (module, version))
    with zipfile.ZipFile(wheel + ".tmp", "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    os.replace(wheel + ".tmp", wheel)
    print(wheel)


if __name__ == "__main__":
    main()
