"""replay_computation: run HLO modules (XLA's dumps included) on a platform.

The command-line program ``tools/replay_computation.py`` is a thin wrapper
over ``replay_file``.
"""
import os
import time

from xla.backends import registry
from xla.errors import InvalidArgumentError
from xla.hlo.parser import parse_hlo_module
from xla.tools import arrays


def read_module(path):
    """Parses the HLO text file at ``path``; parse errors name the file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise InvalidArgumentError(f"cannot read module {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{path} is not HLO text (not valid UTF-8)") from None
    return parse_hlo_module(text, filename=path)


class ReplayResult:
    def __init__(self, path, leaves, seconds):
        self.path = path
        self.leaves = leaves
        self.seconds = seconds


def replay_file(path, platform="interpreter", args_path=None, random_seed=0, num_runs=1):
    """Parses, compiles and runs one module; returns its flattened results."""
    module = read_module(path)
    executable = registry.compile(module, platform)
    shapes = [p.shape for p in module.entry.parameters]
    if args_path:
        args = arrays.load_args(args_path, shapes)
    else:
        args = arrays.random_args(shapes, seed=random_seed)
    seconds = []
    result = None
    for _ in range(max(num_runs, 1)):
        start = time.perf_counter()
        result = executable.execute(*args)
        seconds.append(time.perf_counter() - start)
    return ReplayResult(path, arrays.flatten_result(result), seconds)


def check_output_path(output, protected):
    """Refuses an output path that would overwrite one of the inputs."""
    out = os.path.realpath(output)
    for p in protected:
        if p and os.path.exists(p) and os.path.realpath(p) == out:
            raise InvalidArgumentError(f"--output={output} would overwrite the input {p}")
