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
