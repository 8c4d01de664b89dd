"""Offline stand-in for @rules_cc//cc:defs.bzl on Bazel 4.

Bazel 4's built-in @bazel_tools loads its C++ rules from @rules_cc, which it
would otherwise download. In Bazel 4 those rules are native, so each macro
here calls the native rule. The tag marks the call as coming from rules_cc,
which --incompatible_load_cc_rules_from_bzl checks.
"""

_RULES_CC_TAG = "__CC_RULES_MIGRATION_DO_NOT_USE_WILL_BREAK__"

def _tagged(attrs):
    attrs["tags"] = list(attrs.get("tags") or []) + [_RULES_CC_TAG]
    return attrs

def cc_binary(**attrs):
    native.cc_binary(**_tagged(attrs))

def cc_test(**attrs):
    native.cc_test(**_tagged(attrs))

def cc_library(**attrs):
    native.cc_library(**_tagged(attrs))

def cc_import(**attrs):
    native.cc_import(**_tagged(attrs))

def cc_proto_library(**attrs):
    native.cc_proto_library(**_tagged(attrs))

def cc_toolchain(**attrs):
    native.cc_toolchain(**_tagged(attrs))

def cc_toolchain_suite(**attrs):
    native.cc_toolchain_suite(**_tagged(attrs))

def fdo_profile(**attrs):
    native.fdo_profile(**_tagged(attrs))

def fdo_prefetch_hints(**attrs):
    native.fdo_prefetch_hints(**_tagged(attrs))

def objc_library(**attrs):
    native.objc_library(**_tagged(attrs))

def objc_import(**attrs):
    native.objc_import(**_tagged(attrs))
