"""What the persistent compilation cache trusts (issue 13): an entry only
under the key it was written for, only in a directory of this user that no
one else can write, only a regular file, and never an object calling
functions generated code does not call."""
import os
import warnings

import numpy as np

import xla
from xla.backends.cpu import jit
from xla.frontend.disk_cache import PersistentCache


def run(f, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(x)
    return out, [str(w.message) for w in caught]


def test_an_entry_copied_under_another_key_is_refused(tmp_path):
    x = np.arange(4.0)
    xla.jit(lambda v: v * 2, disk_cache=str(tmp_path))(x)
    (entry,) = tmp_path.glob("*.xlaobj")
    saved = entry.read_bytes()
    entry.unlink()
    xla.jit(lambda v: v + 100, disk_cache=str(tmp_path))(x)   # another program's entry
    (other,) = [p for p in tmp_path.glob("*.xlaobj")]
    other.write_bytes(saved)                                 # the first program's code under it
    out, messages = run(xla.jit(lambda v: v + 100, disk_cache=str(tmp_path)), x)
    np.testing.assert_array_equal(out, x + 100)
    assert any("another key's entry" in m for m in messages), messages


def test_a_directory_others_can_write_is_not_used(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    out, messages = run(xla.jit(lambda v: v * 3, disk_cache=str(shared)), np.ones(2))
    np.testing.assert_array_equal(out, [3, 3])
    assert any("writable by others; not using it" in m for m in messages), messages
    assert not list(shared.iterdir())


def test_a_fifo_in_place_of_an_entry_does_not_hang(tmp_path):
    f = xla.jit(lambda v: v - 1, disk_cache=str(tmp_path))
    f(np.ones(2))
    (entry,) = tmp_path.glob("*.xlaobj")
    entry.unlink()
    os.mkfifo(entry)
    out, messages = run(xla.jit(lambda v: v - 1, disk_cache=str(tmp_path)), np.ones(2))
    np.testing.assert_array_equal(out, [0, 0])
    assert any("not a regular file" in m for m in messages), messages


def test_objects_calling_foreign_functions_are_refused(tmp_path):
    evil = jit.compile_to_object("""
declare i32 @system(ptr)
define void @entry(ptr %t) {
  call i32 @system(ptr null)
  ret void
}
""", 0)
    assert jit.foreign_symbols(evil) == ["system"]

    class Poisoned(PersistentCache):
        def get(self, key):
            return evil   # a valid-looking entry with foreign code, whatever is asked

    cache = Poisoned(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = xla.compile("HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n"
                          "  ROOT y = f32[3] negate(x)\n}", "cpu", cache=cache)
    assert not exe.from_disk_cache
    np.testing.assert_array_equal(exe.execute(np.float32([1, 2, 3])), [-1, -2, -3])
    assert any("calls system" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_an_entry_is_bound_to_its_buffer_layout(tmp_path, monkeypatch):
    """The driver's code addresses buffers at the offsets buffer assignment
    chose; an entry is only loaded for the same layout (were the layout to
    differ, the code would read and write the wrong memory)."""
    from xla.backends.cpu import kernel_compiler
    text = "HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n  ROOT y = f32[3] negate(x)\n}"
    cache = PersistentCache(str(tmp_path))
    assert not xla.compile(text, "cpu", cache=cache).from_disk_cache
    assert xla.compile(text, "cpu", cache=cache).from_disk_cache
    original = kernel_compiler.buffer_layout_fingerprint
    monkeypatch.setattr(kernel_compiler, "buffer_layout_fingerprint",
                        lambda assignment: original(assignment) + "-another-layout")
    exe = xla.compile(text, "cpu", cache=cache)
    assert not exe.from_disk_cache
    np.testing.assert_array_equal(exe.execute(np.float32([1, 2, 3])), [-1, -2, -3])
