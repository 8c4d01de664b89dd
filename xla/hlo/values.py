"""Values of HLO programs on the host: an array value is a NumPy array, a
tuple value a Python tuple of values (nested as the shape is)."""


def flatten_result(value):
    """The leaves of a (nested tuple) value, depth-first: the order of
    snapshots' ``out0..``, of ``Executable.execute_buffers``' results and of
    ``replay_computation``'s outputs."""
    if isinstance(value, tuple):
        out = []
        for v in value:
            out.extend(flatten_result(v))
        return out
    return [value]
