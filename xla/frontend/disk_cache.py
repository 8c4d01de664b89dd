"""The persistent compilation cache: native code on disk, shared by processes.

``xla.jit`` compiles for the cpu backend through a ``PersistentCache``: the
optimized HLO module is hashed (sha256) together with the package version,
a hash of the compiler's own source and extension (so any change to the
compiler invalidates old entries), the target (LLVM triple, CPU name and
features) and the options, and the object code LLVM produced is stored under
that key. A new process that traces the same function to the same optimized
module loads the object and skips LLVM IR emission, optimization and code
generation entirely.

Where: ``XLA_FLAGS=--xla_persistent_cache_dir=DIR``, else
``$XLA_PY_CACHE_DIR``, else ``$XDG_CACHE_HOME/xla-py``, else
``~/.cache/xla-py``. ``XLA_FLAGS=--noxla_enable_persistent_cache`` or
``XLA_PY_DISK_CACHE=0`` turns it off; so does
``xla.jit(..., disk_cache=False)``, and ``disk_cache="/some/dir"`` picks a
directory for one function (and turns it on whatever the flags say).

Entry file ``<key>.xlaobj``: the magic ``XLAPYOBJ``, a format version
(u32), the payload length (u64) and the payload's sha256 (32 bytes), then
the payload (the object file). A truncated or corrupt entry fails the
check, is reported once as a warning naming the file, and is compiled again
and rewritten. Writes go to a temporary file in the same directory and are
renamed into place (``os.replace`` is atomic), so concurrent processes
writing the same entry never leave a broken file.
"""
import hashlib
import os
import struct
import tempfile
import threading
import warnings

MAGIC = b"XLAPYOBJ"
FORMAT_VERSION = 2
_HEADER = struct.Struct("<8sIQ32s")
_KEY_BYTES = 32   # sha256 of the entry's own key, so an entry copied under another key is refused

_source_hash = None
_lock = threading.Lock()


def default_directory():
    from xla.debug_options import debug_options
    explicit = debug_options().xla_persistent_cache_dir or os.environ.get("XLA_PY_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "xla-py")


def enabled_by_environment():
    from xla.debug_options import debug_options
    if not debug_options().xla_enable_persistent_cache:
        return False
    return os.environ.get("XLA_PY_DISK_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def compiler_fingerprint():
    """A hash of the package's Python sources and its C++ extension."""
    global _source_hash
    with _lock:
        if _source_hash is None:
            from xla.version import __version__
            root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # xla/
            h = hashlib.sha256(__version__.encode())
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith((".py", ".so", ".c")):
                        path = os.path.join(dirpath, name)
                        h.update(os.path.relpath(path, root).encode())
                        with open(path, "rb") as f:
                            h.update(f.read())
            _source_hash = h.hexdigest()
        return _source_hash


class PersistentCache:
    """Object code by key in one directory (see the module docstring)."""

    def __init__(self, directory=None):
        self.directory = directory or default_directory()
        self.hits = 0
        self.misses = 0
        self._warned = set()

    def key(self, optimized_module_text, target, options=""):
        h = hashlib.sha256()
        for part in (compiler_fingerprint(), target, options, optimized_module_text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def path(self, key):
        return os.path.join(self.directory, f"{key}.xlaobj")

    def _warn_once(self, what, message):
        if what in self._warned:
            return
        self._warned.add(what)
        warnings.warn(message, RuntimeWarning, stacklevel=4)

    def trusted(self):
        """Whether the directory may be read and written: it (if it exists)
        belongs to this user and no one else may write it; otherwise the
        cache is not used (warned once): anyone who can write it could make
        this process run their code."""
        try:
            st = os.stat(self.directory)
        except OSError:
            return True   # missing or unreachable: reading and writing report it
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            self._warn_once(self.directory, f"xla persistent cache: {self.directory} is not owned by "
                                            "this user or is writable by others; not using it")
            return False
        return True

    def get(self, key):
        """The stored payload, or None (missing, untrusted, or corrupt: then
        warned once). Only a regular file owned by this user in a trusted
        directory is read, opened without following links or blocking."""
        import stat
        path = self.path(key)
        if not self.trusted():
            self.misses += 1
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError as e:
            self._warn_once(path, f"xla persistent cache: cannot read {path}: {e}; compiling instead")
            self.misses += 1
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                self._warn_once(path, f"xla persistent cache: {path} is not a regular file of this "
                                      "user; ignoring it")
                self.misses += 1
                return None
            with os.fdopen(fd, "rb") as f:
                fd = None
                data = f.read()
        finally:
            if fd is not None:
                os.close(fd)
        payload = self._check(data, key)
        if payload is None:
            self.discard(key, "truncated, corrupt or another key's entry")
            return None
        self.hits += 1
        return payload

    @staticmethod
    def _check(data, key):
        if len(data) < _HEADER.size + _KEY_BYTES:
            return None
        magic, version, length, digest = _HEADER.unpack_from(data)
        stored_key = data[_HEADER.size:_HEADER.size + _KEY_BYTES]
        payload = data[_HEADER.size + _KEY_BYTES:]
        if magic != MAGIC or version != FORMAT_VERSION or length != len(payload) or \
                hashlib.sha256(stored_key + payload).digest() != digest or \
                stored_key != hashlib.sha256(key.encode()).digest():
            return None
        return payload

    def discard(self, key, why):
        """Reports a bad entry once and removes it (it is recompiled and rewritten)."""
        path = self.path(key)
        self._warn_once(path, f"xla persistent cache: ignoring {path} ({why}); compiling again")
        self.misses += 1
        try:
            os.remove(path)
        except OSError:
            pass

    def put(self, key, payload):
        """Stores ``payload`` atomically; failures warn once and are otherwise ignored."""
        path = self.path(key)
        key_bytes = hashlib.sha256(key.encode()).digest()
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, len(payload),
                              hashlib.sha256(key_bytes + payload).digest())
        if not self.trusted():
            return
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".xlaobj", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(header)
                    f.write(key_bytes)
                    f.write(payload)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.remove(tmp)
                except OSError:
                    pass
                raise
        except OSError as e:
            self._warn_once(self.directory, f"xla persistent cache: cannot write to {self.directory}: "
                                            f"{e}; compiled code is not cached")


_caches = {}


def cache_for(setting):
    """The PersistentCache a jit option selects: None when off; ``True`` or
    None means the default directory (if the environment allows it)."""
    if setting is False:
        return None
    if setting in (None, True):
        if not enabled_by_environment():
            return None
        directory = default_directory()
    else:
        directory = os.fspath(setting)
    cache = _caches.get(directory)
    if cache is None:
        cache = _caches[directory] = PersistentCache(directory)
    return cache
