"""Build macros and rules shared by the project's BUILD files."""

def _py_package_impl(ctx):
    library = ctx.attr.library
    runfiles = library[DefaultInfo].default_runfiles
    return [
        # Building the target builds what the package needs at run time too
        # (a py_library alone builds only its sources, not its data).
        DefaultInfo(
            files = depset(transitive = [library[DefaultInfo].files, runfiles.files]),
            runfiles = runfiles,
        ),
        library[PyInfo],
    ]

py_package = rule(
    implementation = _py_package_impl,
    doc = "A py_library whose build output includes its data (extension modules).",
    attrs = {
        "library": attr.label(mandatory = True, providers = [PyInfo]),
    },
)

def pytest_test(name, srcs, data = [], deps = [], args = [], size = "small", **kwargs):
    """A py_test that runs the pytest files `srcs` (usually one) with //tools:pytest_runner.

    The test runs with the .venv interpreter (see //third_party:python_configure.bzl),
    depends on the `xla` package, and reports its test cases to Bazel as JUnit XML.
    """
    native.py_test(
        name = name,
        srcs = srcs + ["//tools:pytest_runner.py"],
        main = "//tools:pytest_runner.py",
        args = ["$(rootpath %s)" % src for src in srcs] + args,
        data = data,
        deps = deps + ["//xla:compiler"],
        python_version = "PY3",
        srcs_version = "PY3",
        size = size,
        **kwargs
    )
