"""The CPU runtime's ISA variants (kernels.h): one cc_library per variant of
the same sources, each with its compiler flags, its namespace and its own
copy of Eigen's namespace."""

load("@rules_cc//cc:defs.bzl", "cc_library")

# Narrowest first: the dispatcher (isa.cc) and the link order rely on it.
# The flags are x86-64's; on other CPUs only the baseline is built (with
# the target's default ISA). The dispatcher's __builtin_cpu_supports
# checks (isa.cc) name the same features.
ISA_VARIANTS = [
    ("baseline", None),
    ("avx2", ["-mavx2", "-mfma"]),
    ("avx512", ["-mavx2", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl"]),
]

def isa_variant_libraries(name, srcs, hdrs, copts = [], deps = []):
    """One cc_library `<name>_<isa>` per ISA variant of `srcs`; returns their labels.

    Each compiles `srcs` with -DXLA_CPU_ISA_NAMESPACE=isa_<isa> and
    -DEigen=xla_eigen_<isa> (isa_variant.h) and the variant's flags. The
    variants other than the baseline are x86-64 only (:x86_64).
    """
    labels = []
    for isa, flags in ISA_VARIANTS:
        variant_copts = copts + [
            "-DXLA_CPU_ISA_NAMESPACE=isa_" + isa,
            "-DEigen=xla_eigen_" + isa,
        ]
        library = "%s_%s" % (name, isa)
        if flags == None:
            cc_library(
                name = library,
                srcs = srcs,
                hdrs = hdrs,
                copts = variant_copts,
                deps = deps,
            )
        else:
            cc_library(
                name = library,
                srcs = select({":x86_64": srcs, "//conditions:default": []}),
                hdrs = hdrs,
                copts = variant_copts + select({":x86_64": flags, "//conditions:default": []}),
                deps = deps,
            )
        labels.append(":" + library)
    return labels
