"""Module extension for MODULE.bazel (Bzlmod); Bazel 4 uses WORKSPACE instead.

Kept apart from the repository rules because Bazel 4 has no module_extension.
"""

load("//third_party:eigen_configure.bzl", "system_eigen")
load("//third_party:gtest_configure.bzl", "system_gtest")
load("//third_party:python_configure.bzl", "python_configure")

def _local_config_impl(_ctx):
    python_configure(name = "local_python")
    system_gtest(name = "system_gtest")
    system_eigen(name = "system_eigen")

local_config = module_extension(implementation = _local_config_impl)
