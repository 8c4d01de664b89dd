"""Builds the installable wheel: the ``xla`` package with its extension
module and data files, and the tools as console scripts.

    python tools/build_wheel.py --root . --out_dir dist      # after `make build`
    bazel build //:wheel                                      # the same, from Bazel

The wheel holds ``xla/`` (Python sources, ``_core`` extension, data files),
``xla/_cli/{replay_computation,hlo_opt,aot_compile}.py`` (copies of
``tools/``, whose ``run()`` are the console scripts), and the
``.dist-info`` (METADATA with the run-time requirements from
requirements.txt, WHEEL, entry_points.txt, RECORD with hashes). The wheel
tag is the running CPython's and platform's, which must match the
extension module's (checked). Standard library only.
"""
import argparse
import base64
import hashlib
import io
import os
import re
import sys
import sysconfig
import zipfile

NAME = "xla_compiler"
TOOLS = ("replay_computation", "hlo_opt", "aot_compile")
# requirements.txt entries the installed package needs to run (the others
# are for building and testing, or optional: mpi4py is imported only by
# xla.distributed.initialize).
RUNTIME_REQUIREMENTS = ("numpy", "llvmlite", "absl-py", "ml_dtypes")
DATA_SUFFIXES = (".py", ".c", ".txt")


def version(root):
    text = open(os.path.join(root, "xla", "version.py")).read()
    return re.search(r'__version__ = "([^"]+)"', text).group(1)


def wheel_tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{plat}"


def package_files(root, core=None):
    """(path in the wheel, path on disk) of the package's files; ``core``:
    the extension module's path when it is not in ``root``/xla (Bazel)."""
    xla_dir = os.path.join(root, "xla")
    files = []
    for dirpath, dirnames, filenames in os.walk(xla_dir, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if rel.startswith("xla/_core") and name.endswith(".so"):
                core = core or full
                continue
            if name.endswith(DATA_SUFFIXES):
                files.append((rel, full))
    if core is None:
        raise SystemExit("build_wheel: xla/_core*.so not found: run `make build` first")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    files.append((f"xla/_core{suffix}", core))
    for tool in TOOLS:
        files.append((f"xla/_cli/{tool}.py", os.path.join(root, "tools", f"{tool}.py")))
    files.append(("xla/_cli/__init__.py", None))
    return files


def requirements(root):
    pins = {}
    for line in open(os.path.join(root, "requirements.txt")):
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, _, ver = line.partition("==")
            pins[name.strip().lower()] = ver.strip()
    return [f"{n}=={pins[n.lower()]}" for n in RUNTIME_REQUIREMENTS if n.lower() in pins]


def metadata(root):
    lines = ["Metadata-Version: 2.1", f"Name: {NAME}", f"Version: {version(root)}",
             "Summary: A compiler for linear algebra in the spirit of XLA",
             "Requires-Python: >=3.11"]
    lines += [f"Requires-Dist: {r}" for r in requirements(root)]
    lines.append("Provides-Extra: distributed")
    lines.append('Requires-Dist: mpi4py; extra == "distributed"')
    return "\n".join(lines) + "\n"


def build(root, out_dir, core=None):
    root = os.path.abspath(root)
    ver = version(root)
    tag = wheel_tag()
    dist_info = f"{NAME}-{ver}.dist-info"
    path = os.path.join(out_dir, f"{NAME}-{ver}-{tag}.whl")
    os.makedirs(out_dir, exist_ok=True)
    entries = []
    for arcname, disk in package_files(root, core):
        data = b"" if disk is None else open(disk, "rb").read()
        entries.append((arcname, data, 0o755 if arcname.endswith(".so") else 0o644))
    entries.append((f"{dist_info}/METADATA", metadata(root).encode(), 0o644))
    entries.append((f"{dist_info}/WHEEL", (
        f"Wheel-Version: 1.0\nGenerator: xla build_wheel\nRoot-Is-Purelib: false\nTag: {tag}\n"
    ).encode(), 0o644))
    entries.append((f"{dist_info}/entry_points.txt", (
        "[console_scripts]\n" + "".join(f"{t} = xla._cli.{t}:run\n" for t in TOOLS)).encode(),
        0o644))
    record = io.StringIO()
    tmp = path + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write(f"{arcname},sha256={digest},{len(data)}\n")
        record.write(f"{dist_info}/RECORD,,\n")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100644) << 16
        zf.writestr(info, record.getvalue())
    os.replace(tmp, path)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--out_dir", default="dist")
    parser.add_argument("--out", default=None, help="copy the wheel to exactly this path (Bazel)")
    parser.add_argument("--core", default=None, help="the extension module (default: xla/_core*.so)")
    args = parser.parse_args(argv)
    path = build(args.root, args.out_dir, args.core)
    if args.out:
        import shutil
        shutil.copyfile(path, args.out)
    print(path)


if __name__ == "__main__":
    main()
