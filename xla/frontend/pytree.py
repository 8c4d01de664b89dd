"""Pytrees: nested tuples, lists, dicts (and namedtuples, None) of leaves.

``flatten(tree) -> (leaves, treedef)`` and ``treedef.unflatten(leaves)``,
as JAX defines them: dict entries in sorted key order, ``None`` an empty
node (no leaf). A TreeDef is hashable, so it can be part of a cache key.
"""


class TreeDef:
    __slots__ = ("kind", "meta", "children")

    def __init__(self, kind, meta, children):
        self.kind = kind          # 'leaf', 'none', 'tuple', 'list', 'dict', 'namedtuple'
        self.meta = meta          # dict keys / namedtuple class
        self.children = children  # tuple of TreeDef

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def _key(self):
        return (self.kind, self.meta, self.children)

    def __eq__(self, other):
        return isinstance(other, TreeDef) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children))
            return "{" + inner + "}"
        if self.kind == "list":
            return "[" + inner + "]"
        if self.kind == "namedtuple":
            return f"{self.meta.__name__}({inner})"
        return "(" + inner + ("," if len(self.children) == 1 else "") + ")"

    def unflatten(self, leaves):
        it = iter(leaves)
        out = self._build(it)
        rest = list(it)
        if rest:
            raise ValueError(f"unflatten got {len(rest)} more leaves than the tree {self!r} holds")
        return out

    def _build(self, it):
        if self.kind == "leaf":
            try:
                return next(it)
            except StopIteration:
                raise ValueError(f"unflatten ran out of leaves for tree {self!r}") from None
        if self.kind == "none":
            return None
        values = [c._build(it) for c in self.children]
        if self.kind == "tuple":
            return tuple(values)
        if self.kind == "list":
            return values
        if self.kind == "dict":
            return dict(zip(self.meta, values))
        return self.meta(*values)


LEAF = TreeDef("leaf", None, ())


def flatten(tree):
    leaves = []
    treedef = _flatten(tree, leaves)
    return leaves, treedef


def _flatten(tree, leaves):
    if tree is None:
        return TreeDef("none", None, ())
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return TreeDef("namedtuple", type(tree), tuple(_flatten(v, leaves) for v in tree))
    if isinstance(tree, tuple):
        return TreeDef("tuple", None, tuple(_flatten(v, leaves) for v in tree))
    if isinstance(tree, list):
        return TreeDef("list", None, tuple(_flatten(v, leaves) for v in tree))
    if isinstance(tree, dict):
        try:
            keys = tuple(sorted(tree))
        except TypeError:
            keys = tuple(tree)
        return TreeDef("dict", keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return LEAF


def tree_map(fn, tree):
    leaves, treedef = flatten(tree)
    return treedef.unflatten([fn(x) for x in leaves])


def tree_leaves(tree):
    return flatten(tree)[0]
