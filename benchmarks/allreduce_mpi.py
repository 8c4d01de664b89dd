"""All-reduce across processes: a compiled XLA all-reduce against MPI's own
Allreduce (mpi4py), and the scaling of a data-parallel training step.

    mpirun -n 4 .venv/bin/python benchmarks/allreduce_mpi.py [--max-mb 256] [--repeats 5]
    # as root: add --allow-run-as-root; on fewer cores than processes: --oversubscribe
    .venv/bin/python benchmarks/allreduce_mpi.py --scaling   # launches 1, 2, 4 processes

Sizes from 4 KB to --max-mb per process (f32). For each, the best of
--repeats timed runs (after one warm-up) of: ``mpi4py`` ``Allreduce`` on a
NumPy buffer, and a compiled module that is one ``all-reduce`` (sum) run with
``execute`` on this process's device, including its argument and result
handling. Bandwidth is XLA's "bus bandwidth" convention for all-reduce:
bytes * 2 (P - 1) / P / seconds. The ratio column is ours / MPI's; the goal
is above 0.9 at large sizes. ``--scaling`` times examples/data_parallel_mnist.py's
step on 1, 2 and 4 processes at a fixed global batch (more processes: less
work each, plus the all-reduce).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MODULE = """HloModule allreduce
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  p = f32[SIZE] parameter(0)
  ROOT r = f32[SIZE] all-reduce(p), replica_groups={}, to_apply=add
}"""


def best(fn, repeats, comm):
    fn()
    times = []
    for _ in range(repeats):
        comm.Barrier()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    # The slowest process decides a collective's time.
    return comm.allreduce(min(times), op=__import__("mpi4py").MPI.MAX)


def bandwidth(args):
    import xla
    from mpi4py import MPI
    xla.distributed.initialize()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if rank == 0:
        print(f"all-reduce (sum, f32) over {size} processes, {os.cpu_count()} cores; best of "
              f"{args.repeats}")
        print(f"{'bytes':>12} {'MPI GB/s':>10} {'XLA GB/s':>10} {'XLA/MPI':>8}")
    nbytes = 4096
    while nbytes <= args.max_mb * 2 ** 20:
        n = nbytes // 4
        x = np.full(n, rank + 1, np.float32)
        out = np.empty_like(x)
        t_mpi = best(lambda: comm.Allreduce(x, out), args.repeats, comm)
        exe = xla.compile(MODULE.replace("SIZE", str(n)), "cpu", num_replicas=size)
        result = exe.execute([[x]])[0]
        assert float(result[0]) == size * (size + 1) / 2
        t_xla = best(lambda: exe.execute([[x]]), args.repeats, comm)
        bus = nbytes * 2 * (size - 1) / size
        if rank == 0:
            print(f"{nbytes:>12} {bus / t_mpi / 1e9:>10.3f} {bus / t_xla / 1e9:>10.3f} "
                  f"{t_mpi / t_xla:>8.2f}", flush=True)
        nbytes *= 4


def scaling(args):
    launcher = shutil.which("mpirun")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    print(f"examples/data_parallel_mnist.py, global batch 512, {args.steps} steps, "
          f"{os.cpu_count()} cores")
    for n in (1, 2, 4):
        cmd = [launcher, "--oversubscribe", "-n", str(n), sys.executable,
               os.path.join(ROOT, "examples", "data_parallel_mnist.py"), "--batch", "512",
               "--steps", str(args.steps)]
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        print(f"{n} process(es): {time.perf_counter() - t:6.2f} s wall (including start-up and "
              "compilation)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    (scaling if args.scaling else bandwidth)(args)


if __name__ == "__main__":
    main()
