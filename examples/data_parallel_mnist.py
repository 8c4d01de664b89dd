"""Data-parallel training of train_mnist.py's classifier across devices.

Each device takes an equal shard of every batch, computes its gradients, and
the gradients are averaged across devices (``xla.lax.pmean``, an XLA
all-reduce) before the same Adam update runs everywhere, so all devices keep
identical parameters, equal to training on the whole batch on one device.

    python examples/data_parallel_mnist.py --devices 4     # 4 devices, one process
    mpirun -n 4 python examples/data_parallel_mnist.py     # 4 processes, one device each

Under ``mpirun`` (Open MPI; as root add --allow-run-as-root, and
--oversubscribe on fewer cores than processes) each process calls
``xla.distributed.initialize()``, reads only its shard of each batch, and the
all-reduce goes over MPI. ``--out FILE`` saves the final parameters (rank 0),
so runs can be compared.
"""
import argparse
import functools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import xla  # noqa: E402
from xla import lax  # noqa: E402
from train_mnist import adam_init, adam_update, init_params, loss_fn, make_digits  # noqa: E402


@functools.partial(xla.pmap, axis_name="batch")
def train_step(params, opt, x, y):
    loss, grads = xla.value_and_grad(loss_fn)(params, x, y)
    grads = lax.pmean(grads, "batch")
    params, opt = adam_update(params, opt, grads)
    return params, opt, lax.pmean(loss, "batch")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=None,
                        help="devices in this process (default: 1 under mpirun, else 4)")
    parser.add_argument("--batch", type=int, default=128, help="global batch size")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", default=None, help="save the final parameters here (.npz)")
    args = parser.parse_args(argv)
    under_mpi = "OMPI_COMM_WORLD_SIZE" in os.environ or "PMI_SIZE" in os.environ
    if under_mpi:
        xla.distributed.initialize()
    processes, rank = xla.distributed.process_count(), xla.distributed.process_index()
    local = args.devices or (1 if under_mpi else 4)
    total = local * processes
    if args.batch % total:
        parser.error(f"--batch {args.batch} does not split over {total} devices")
    rng = np.random.default_rng(0)
    prototypes = (rng.random((10, 8, 8)) > 0.6).astype(np.float32)
    x_train, y_train = make_digits(4096, rng, prototypes)
    params = init_params(rng)
    opt = adam_init(params)

    def replicate(tree):
        return {k: replicate(v) if isinstance(v, dict) else np.stack([v] * local)
                for k, v in tree.items()}
    params, opt = replicate(params), replicate(opt)
    shard = args.batch // total
    for step in range(args.steps):
        idx = np.arange(step * args.batch, (step + 1) * args.batch) % len(x_train)
        mine = idx[rank * local * shard:(rank + 1) * local * shard]
        x = x_train[mine].reshape(local, shard, 64)
        y = y_train[mine].reshape(local, shard)
        params, opt, loss = train_step(params, opt, x, y)
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step}: loss {float(loss[0]):.4f}", flush=True)
    final = {k: np.asarray(v[0]) for k, v in params.items()}
    if rank == 0:
        print(f"{total} devices ({processes} process(es)); checksum "
              f"{sum(float(np.abs(v).sum()) for v in final.values()):.6f}")
        if args.out:
            np.savez(args.out, **final)
    return final


if __name__ == "__main__":
    main()
