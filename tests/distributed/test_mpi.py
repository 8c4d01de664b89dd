"""Multi-process runs under mpirun (Open MPI from Debian, mpi4py from PyPI;
both installed by `make setup`): JAX's fixtures and pmap's collectives with
one device per process, and the data-parallel example, which must train to
the parameters the same program reaches on 4 devices in one process."""
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "data_parallel_mnist.py"


def mpirun(n, *args, timeout=300):
    launcher = shutil.which("mpirun")
    assert launcher, "mpirun not found: `make setup` installs openmpi-bin"
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    out = subprocess.run([launcher, "--oversubscribe", "-n", str(n), sys.executable, *map(str, args)],
                         env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"mpirun -n {n} failed:\n{out.stdout}\n{out.stderr[-4000:]}"
    return out.stdout


def test_collectives_and_fixtures_on_four_processes():
    out = mpirun(4, HERE / "mpi_worker.py", "fixtures", "cpu")
    for name in ("pmap_collectives", "pmap_mlp_step", "pmap_int_psum", "sharded_dot"):
        for rank in range(4):
            assert f"rank {rank} ok {name} cpu" in out, out


def test_pmap_collectives_on_two_processes():
    out = mpirun(2, HERE / "mpi_worker.py", "collectives", "cpu")
    assert "rank 0 ok collectives cpu" in out and "rank 1 ok collectives cpu" in out, out


@pytest.mark.parametrize("processes", [2, 4])
def test_data_parallel_example_matches_one_process(tmp_path, processes):
    one = tmp_path / "one.npz"
    many = tmp_path / "many.npz"
    subprocess.run([sys.executable, str(EXAMPLE), "--devices", str(processes), "--steps", "4",
                    "--out", str(one)], check=True, capture_output=True, timeout=300)
    out = mpirun(processes, EXAMPLE, "--steps", "4", "--out", many)
    assert f"{processes} devices ({processes} process(es))" in out, out
    a, b = np.load(one), np.load(many)
    assert sorted(a.files) == ["b1", "b2", "w1", "w2"]
    for k in a.files:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_failing_process_ends_the_job_instead_of_hanging():
    launcher = shutil.which("mpirun")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT)] + sys.path))
    out = subprocess.run([launcher, "--oversubscribe", "-n", "2", sys.executable,
                          str(HERE / "mpi_failing_worker.py")], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode != 0
    assert "process 1 failed, aborting the MPI job: InvalidArgumentError: argument 0" in out.stderr
