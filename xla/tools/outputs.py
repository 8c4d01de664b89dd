"""What the tools read and write, checked so that no command line can destroy
a file or hang on one.

* ``check_output_path`` refuses, before any work is done, an output that is
  a symbolic link, a device, FIFO, socket or directory, one of the inputs
  (by name, symbolic link or hard link), an existing file unless
  ``overwrite``, or a path in a directory that does not exist.
* ``write_atomically`` writes a temporary file in the output's directory and
  then gives it the output's name: with ``os.link`` when the output must not
  exist (so a file that appeared since the check is not replaced either), or
  ``os.replace`` over an existing regular file with ``overwrite``. Either
  way a link at the output's name is replaced, never followed, and the file
  is whole or not there (a full disk leaves nothing behind).
* ``read_input`` reads a module or argument file: a regular file or a pipe,
  never a device (``/dev/zero`` would never end) or a directory.

Errors are ``InvalidArgumentError`` naming the path and the reason; OS
errors while writing (a full disk, a permission) propagate as ``OSError``
and the tools print them in one line.
"""
import errno
import os
import stat
import tempfile

from xla.errors import InvalidArgumentError


def check_output_path(output, protected=(), overwrite=False, flag="--output"):
    """Raises InvalidArgumentError when the tools must not write ``output``
    (see the module docstring); ``protected`` are the inputs."""
    if os.path.islink(output):
        raise InvalidArgumentError(f"{flag}={output} is a symbolic link; the tools do not write "
                                   "through links")
    directory = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(directory):
        raise InvalidArgumentError(f"{flag}={output}: directory {directory} does not exist")
    if not os.path.lexists(output):
        return
    mode = os.lstat(output).st_mode
    if not stat.S_ISREG(mode):
        raise InvalidArgumentError(f"{flag}={output} is not a regular file (a directory, device, "
                                   "FIFO or socket); refusing to write it")
    for p in protected:
        if p and os.path.exists(p) and os.path.samefile(p, output):
            raise InvalidArgumentError(f"{flag}={output} is the input {p} (the same file, maybe "
                                       "through a hard link); refusing to overwrite it")
    if not overwrite:
        raise InvalidArgumentError(f"{flag}={output} exists; pass --overwrite to replace it")


def write_atomically(path, data, overwrite=False):
    """Writes ``data`` (str, bytes, or a function that writes to a binary
    file object) to ``path`` through a temporary file in the same directory:
    the file is whole or not there. Without ``overwrite`` an existing
    ``path`` is never replaced; with it, only a regular file is."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if callable(data):
                data(f)
            else:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o666 & ~_umask())
        _publish(tmp, path, overwrite)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _publish(tmp, path, overwrite):
    if not overwrite:
        try:
            os.link(tmp, path)   # fails if anything (a file, a link, a device) has the name
            return
        except FileExistsError:
            raise InvalidArgumentError(f"{path} exists; pass --overwrite to replace it") from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            # A file system without hard links: check, then rename.
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and (not overwrite or not stat.S_ISREG(mode)):
        what = "exists" if stat.S_ISREG(mode) else "is not a regular file"
        raise InvalidArgumentError(f"{path} {what}; refusing to replace it")
    os.replace(tmp, path)


def check_input_path(path, what="module"):
    """Raises InvalidArgumentError unless ``path`` is a regular file or a
    pipe (a device such as /dev/zero would never end; a directory is no file)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise InvalidArgumentError(f"cannot read {what} {path}: {e.strerror}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a device or socket"
        raise InvalidArgumentError(f"cannot read {what} {path}: it is {kind}, not a file")


def read_input(path, what="module", binary=False):
    """The contents of the input file ``path`` (str, or bytes with
    ``binary``), checked by ``check_input_path``."""
    check_input_path(path, what)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InvalidArgumentError(f"cannot read {what} {path}: {e.strerror}") from None
    if binary:
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{path} is not HLO text (not valid UTF-8)") from None
