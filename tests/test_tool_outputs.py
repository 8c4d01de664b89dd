"""The tools never destroy a file (issue 13): no writing through symbolic
links, into devices, FIFOs or directories, over an input (even through a
hard link), or over an existing file unless --overwrite; and errors are one
line, exit status 1."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODULE = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  ROOT y = f32[4] add(x, x)\n}\n"


def tool(name, *args):
    out = subprocess.run([sys.executable, str(ROOT / "tools" / f"{name}.py"), *map(str, args)],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return out


def test_outputs_that_would_destroy_a_file_are_refused(tmp_path):
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    link = tmp_path / "hard.hlo"
    os.link(module, link)
    sym = tmp_path / "sym.npz"
    sym.symlink_to(tmp_path / "target.npz")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        ("hlo_opt", [f"--output={link}", module], "is the input"),
        ("hlo_opt", [f"--output={tmp_path}", module], "not a regular file"),
        ("replay_computation", ["--platform=interpreter", f"--output={sym}", module],
         "symbolic link"),
        ("replay_computation", ["--platform=interpreter", f"--output={fifo}", module],
         "not a regular file"),
        ("replay_computation", ["--platform=interpreter", "--output=/dev/null", module],
         "not a regular file"),
        ("hlo_opt", [f"--output={tmp_path / 'missing' / 'o.hlo'}", module], "does not exist"),
    ]
    for name, args, why in cases:
        out = tool(name, *args)
        assert out.returncode == 1, (name, args, out.stdout, out.stderr)
        assert why in out.stderr and "Traceback" not in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert module.read_text() == MODULE and not (tmp_path / "target.npz").exists()
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_existing_outputs_need_overwrite_and_writes_are_whole(tmp_path):
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    out_file = tmp_path / "o.hlo"
    assert tool("hlo_opt", f"--output={out_file}", module).returncode == 0
    first = out_file.read_text()
    refused = tool("hlo_opt", f"--output={out_file}", module)
    assert refused.returncode == 1 and "pass --overwrite" in refused.stderr
    assert tool("hlo_opt", "--overwrite", f"--output={out_file}", module).returncode == 0
    assert out_file.read_text() == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp.")]


def test_bad_inputs_are_one_error_and_exit_1(tmp_path):
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    import numpy as np
    np.savez(tmp_path / "obj.npz", arg0=np.array([object()], dtype=object))
    np.savez(tmp_path / "good.npz", arg0=np.ones(4, np.float32))
    (tmp_path / "trunc.npz").write_bytes((tmp_path / "good.npz").read_bytes()[:100])
    big = tmp_path / "big.hlo"
    big.write_text(MODULE.replace("f32[4]", "f32[1000000000000]"))
    huge = tmp_path / "huge.hlo"
    huge.write_text(MODULE.replace("f32[4]", "f32[9223372036854775808]"))
    digits = tmp_path / "digits.hlo"
    digits.write_text("HloModule m\nENTRY e {\n  ROOT c = s32[] constant(" + "9" * 5000 + ")\n}\n")
    cases = [
        ([f"--args={tmp_path / 'obj.npz'}", module], "cannot read arg0"),
        ([f"--args={tmp_path / 'trunc.npz'}", module], "cannot read arguments"),
        (["--random_seed=-1", module], "--random_seed must be in [0, 2^32)"),
        (["--random_seed=4294967296", module], "--random_seed must be in [0, 2^32)"),
        (["--platform=", module], "unknown platform"),
        ([big], "cannot make a random argument 0"),
        ([huge], "does not fit in 64 bits"),
        ([digits], "expected an integer value of type s32"),
    ]
    for args, why in cases:
        platform = [] if any(str(a).startswith("--platform") for a in args) else ["--platform=cpu"]
        out = tool("replay_computation", *platform, *args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert why in out.stderr and "Traceback" not in out.stderr, (args, out.stderr)


def one_line_error(out, why):
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert why in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_aot_compile_outputs_are_checked_and_atomic(tmp_path):
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (out_dir / "m.o").symlink_to(victim)
    one_line_error(tool("aot_compile", f"--out_dir={out_dir}", module), "symbolic link")
    assert victim.read_text() == "keep me" and not (out_dir / "m.h").exists()
    (out_dir / "m.o").unlink()
    assert tool("aot_compile", f"--out_dir={out_dir}", module).returncode == 0
    header = (out_dir / "m.h").read_text()
    one_line_error(tool("aot_compile", f"--out_dir={out_dir}", module), "pass --overwrite")
    assert tool("aot_compile", "--overwrite", f"--out_dir={out_dir}", module).returncode == 0
    assert (out_dir / "m.h").read_text() == header
    assert not [p for p in out_dir.iterdir() if p.name.startswith(".tmp.")]
    one_line_error(tool("aot_compile", f"--out_dir={victim}", module), "is not a directory")


def test_replay_output_needs_overwrite(tmp_path):
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    out = tmp_path / "o.npz"
    out.write_bytes(b"precious")
    one_line_error(tool("replay_computation", f"--output={out}", module), "pass --overwrite")
    assert out.read_bytes() == b"precious"
    assert tool("replay_computation", "--overwrite", f"--output={out}", module).returncode == 0
    import numpy as np
    with np.load(out) as data:
        assert data["out0"].shape == (4,)


def test_a_full_device_leaves_no_file(tmp_path):
    """A write that fails half way (simulated: a file size limit, so the
    write fails with EFBIG as on a full disk) is one line, exit 1, and
    neither the output nor a temporary file is left."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    module = tmp_path / "m.hlo"
    module.write_text(MODULE.replace("f32[4]", "f32[100000]"))
    for name, args in [("replay_computation", [f"--output={tmp_path / 'o.npz'}"]),
                       ("hlo_opt", ["--format=html", f"--output={tmp_path / 'o.html'}"])]:
        out = subprocess.run([sys.executable, str(ROOT / "tools" / f"{name}.py"), *args,
                              str(module)], capture_output=True, text=True, timeout=120,
                             env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1"),
                             preexec_fn=limit)
        one_line_error(out, "File too large")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.hlo"]


def test_more_bad_command_lines_are_one_error(tmp_path):
    import numpy as np
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    snapshot = tmp_path / "snap.npz"
    np.savez(snapshot, hlo_module=np.array(MODULE), arg0=np.ones(4, np.float32))
    (tmp_path / "trunc_snap.npz").write_bytes(snapshot.read_bytes()[:300])
    np.savez(tmp_path / "obj_snap.npz", hlo_module=np.array([MODULE], dtype=object))
    broadcast = tmp_path / "broadcast.hlo"
    broadcast.write_text("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                         "  ROOT y = f32[1000000000000] broadcast(x), dimensions={}\n}\n")
    dynamic = tmp_path / "dynamic.hlo"
    dynamic.write_text("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = f32[?] parameter(1)\n"
                       "  ROOT t = (f32[4], f32[?]) tuple(x, y)\n}\n")
    np.savez(tmp_path / "dyn_args.npz", arg0=np.ones(4, np.float32), arg1=np.ones(3, np.float32))
    overflow = tmp_path / "overflow.hlo"   # 2^64 bytes: an OverflowError traceback on the CPU
    overflow.write_text("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n"
                        "  ROOT y = f32[4294967296,4294967296] broadcast(x), dimensions={}\n}\n")
    cases = [
        # Reading a device never ends (the process was killed for memory).
        ("replay_computation", ["--platform=interpreter", "/dev/zero"], "is a device or socket"),
        ("hlo_opt", ["/dev/zero"], "is a device or socket"),
        ("replay_computation", ["--platform=interpreter", tmp_path], "is a directory"),
        ("replay_computation", ["--platform=interpreter", tmp_path / "trunc_snap.npz"],
         "cannot read snapshot"),
        ("replay_computation", ["--platform=interpreter", tmp_path / "obj_snap.npz"],
         "cannot read hlo_module"),
        # An empty --compare compared with nothing, silently.
        ("replay_computation", ["--platform=interpreter", "--compare=", module], "unknown platform"),
        ("replay_computation", ["--platform=interpreter", "--compare=cpu", "--rtol=-1", module],
         "must be >= 0"),
        ("hlo_opt", ["--platform=", module], "unknown platform"),
        # Out of memory was a NumPy traceback on both backends.
        ("replay_computation", ["--platform=interpreter", broadcast], "not enough memory for y"),
        ("replay_computation", ["--platform=cpu", broadcast], "cannot allocate a buffer"),
        ("replay_computation", ["--platform=cpu", f"--args={tmp_path / 'dyn_args.npz'}", dynamic],
         "unbounded dynamic dimension in f32[?] (dynamic shapes run with a bound"),
        ("replay_computation", ["--platform=cpu", overflow], "more than an int64 counts"),
        ("hlo_opt", ["--platform=cpu", overflow], "more than an int64 counts"),
    ]
    for name, args, why in cases:
        out = tool(name, *args)
        assert out.returncode == 1, (name, args, out.stdout, out.stderr)
        assert why in out.stderr and "Traceback" not in out.stderr, (name, args, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_file_that_appears_after_the_check_is_not_replaced(tmp_path):
    from xla.errors import InvalidArgumentError
    from xla.tools.outputs import check_output_path, write_atomically
    out = tmp_path / "o.txt"
    check_output_path(str(out), [], overwrite=False)   # nothing there yet
    out.write_text("written meanwhile")
    import pytest
    with pytest.raises(InvalidArgumentError, match="exists"):
        write_atomically(str(out), "new")
    assert out.read_text() == "written meanwhile"
    out.unlink()
    out.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InvalidArgumentError, match="exists"):
        write_atomically(str(out), "new")
    with pytest.raises(InvalidArgumentError, match="not a regular file"):
        write_atomically(str(out), "new", overwrite=True)
    assert not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.txt"]


def test_dumps_replace_links_and_fifos_never_write_through_them(tmp_path):
    """A dump file's name taken by a symbolic link or a FIFO (in a shared
    dump directory): the dump replaces the name; the link's target is not
    written and the compilation does not wait on the FIFO."""
    module = tmp_path / "m.hlo"
    module.write_text(MODULE)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (dumps / "module_0000.m.before_optimizations.txt").symlink_to(victim)
    os.mkfifo(dumps / "module_0000.m.interpreter_after_optimizations.txt")
    out = tool("replay_computation", "--platform=interpreter", f"--xla_dump_to={dumps}", module)
    assert out.returncode == 0, out.stderr
    assert victim.read_text() == "keep me"
    for name in ("module_0000.m.before_optimizations.txt",
                 "module_0000.m.interpreter_after_optimizations.txt"):
        path = dumps / name
        assert path.is_file() and not path.is_symlink() and "HloModule m" in path.read_text()
