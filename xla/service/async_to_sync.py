"""AsyncToSync: asynchronous start/done pairs become their synchronous
instruction (XLA's ``ConvertAsyncCollectivesToSync``, applied to every
pair), for backends that run everything in order: dumps from XLA:GPU and
TPU carry these pairs, and replaying them on the CPU runs the same
computation.

* ``all-reduce-start``/``-done``, ``all-gather-start``/``-done`` and
  ``collective-permute-start``/``-done`` become ``all-reduce``,
  ``all-gather`` and ``collective-permute`` with the start's operands and
  attributes and the done's shape;
* ``async-start``/``async-update``/``async-done`` (an op wrapped in its
  ``calls`` computation) become a ``call`` of that computation, which the
  call inliner then inlines;
* ``copy-start``/``copy-done`` become a ``copy``.

A pair is converted when everything that uses the start is its done (or,
for ``async-start``, a chain of ``async-update``s ending in it); other
uses of the start's tuple (reading the operand it aliases, or a context)
leave the pair alone, and the backend names the op; so does an
instruction that waits on the start or the done through a control
dependency. Control predecessors of the start and the done become the new
instruction's.
"""
from xla.hlo.ir import HloInstruction
from xla.service.hlo_pass import HloPass
from xla.service.pass_utils import control_successor_ids

# start opcode -> (done opcode, synchronous opcode)
PAIRS = {
    "all-reduce-start": ("all-reduce-done", "all-reduce"),
    "all-gather-start": ("all-gather-done", "all-gather"),
    "collective-permute-start": ("collective-permute-done", "collective-permute"),
    "async-start": ("async-done", "call"),
    "copy-start": ("copy-done", "copy"),
}


def _chain(start):
    """[start, updates..., done] for a pair whose start (and every update in
    between) has no other user; None otherwise."""
    done_opcode = PAIRS[start.opcode][0]
    chain = [start]
    while True:
        users = chain[-1].users
        if len(users) != 1:
            return None
        (user,) = users
        chain.append(user)
        if user.opcode == done_opcode:
            return chain
        if start.opcode != "async-start" or user.opcode != "async-update":
            return None


_GENERIC = ("metadata", "frontend_attributes", "sharding")


def _sync_attrs(start):
    attrs = {k: v for k, v in start.attrs.items() if k != "control-predecessors"}
    if start.opcode == "async-start":
        return {"to_apply": attrs["calls"]} | {k: v for k, v in attrs.items() if k in _GENERIC}
    if start.opcode == "copy-start":
        return {k: v for k, v in attrs.items() if k in _GENERIC}
    return attrs


class AsyncToSync(HloPass):
    name = "async-to-sync"

    def run(self, module):
        changed = False
        for comp in module.computations:
            successors = control_successor_ids(comp)
            for start in list(comp.instructions):
                if start.opcode not in PAIRS or start.parent is not comp:
                    continue
                if start.opcode == "async-start" and start.attr("calls") is None:
                    continue
                chain = _chain(start)
                if chain is None:
                    continue
                done = chain[-1]
                if any(id(node) in successors for node in chain):
                    continue  # something waits on the start or the done itself
                sync_opcode = PAIRS[start.opcode][1]
                sync = HloInstruction(sync_opcode, done.shape, list(start.operands),
                                      name=module.unique_name(sync_opcode),
                                      attrs=_sync_attrs(start))
                preds = tuple(dict.fromkeys(start.control_predecessors + done.control_predecessors))
                if preds:
                    sync.attrs["control-predecessors"] = preds
                comp.insert_before(start, sync)
                comp.replace_instruction(done, sync)
                for node in reversed(chain[:-1]):
                    comp.remove_instruction(node)
                changed = True
        return changed
