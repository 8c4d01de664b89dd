"""Run by tests/distributed/test_mpi.py: rank 1 passes an argument of the wrong
shape, so it fails before the all-reduce rank 0 waits in; the job must end."""
import numpy as np, xla
xla.distributed.initialize()
r = xla.distributed.process_index()
exe = xla.compile("HloModule m\nadd {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b)\n}\nENTRY e {\n p = f32[2] parameter(0)\n ROOT r = f32[2] all-reduce(p), replica_groups={}, to_apply=add\n}", "cpu", num_replicas=2)
exe.execute([[np.ones(2 + r, np.float32)]])
