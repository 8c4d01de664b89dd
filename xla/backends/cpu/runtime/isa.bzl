"""The CPU runtime's ISA variants (kernels.h): one cc_library per variant of
the same sources, each with its compiler flags, its namespace and its own
copy of Eigen's namespace."""

load("@rules_cc//cc:defs.bzl", "cc_library")

# Narrowest first: the dispatcher (isa.cc) and the link order rely on it.
# The flags are x86-64's; on other CPUs only the baseline is built (with
# the target's default ISA). The dispatcher's __builtin_cpu_supports
# checks (isa.cc) name the same features.
# avx512_vnni and avx512_vnni_bf16 add the dot-product instructions
# (VPDPBUSD; VDPBF16PS) that only the low-precision matmuls use
# (matmul_lowp.cc), and amx the AMX tiles (TDPBSUD, TDPBF16PS: Sapphire
# Rapids and later); their other kernels are avx512's (isa.cc), so only
# those units are built for them.
_AVX512 = ["-mavx2", "-mfma", "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl"]
ISA_VARIANTS = [
    ("baseline", None),
    ("avx2", ["-mavx2", "-mfma"]),
    ("avx512", _AVX512),
    ("avx512_vnni", _AVX512 + ["-mavx512vnni"]),
    ("avx512_vnni_bf16", _AVX512 + ["-mavx512vnni", "-mavx512bf16"]),
    ("amx", _AVX512 + ["-mavx512vnni", "-mavx512bf16", "-mamx-tile", "-mamx-int8", "-mamx-bf16"]),
]

# Each variant's flags by name (None: the baseline's).
ISA_FLAGS = dict(ISA_VARIANTS)

def isa_variant_libraries(name, srcs, hdrs, copts = [], deps = [], isas = None):
    """One cc_library `<name>_<isa>` per ISA variant of `srcs` (those named
    in `isas`, default all); returns their labels, narrowest first.

    Each compiles `srcs` with -DXLA_CPU_ISA_NAMESPACE=isa_<isa> and
    -DEigen=xla_eigen_<isa> (isa_variant.h) and the variant's flags. The
    variants other than the baseline are x86-64 only (:x86_64).
    """
    labels = []
    for isa, flags in ISA_VARIANTS:
        if isas != None and isa not in isas:
            continue
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

def narrowest_first(*label_lists):
    """The labels of several isa_variant_libraries calls in one list, the
    narrowest variant's first (the link order BUILD relies on)."""
    ordered = []
    for isa, _ in ISA_VARIANTS:
        for labels in label_lists:
            ordered += [label for label in labels if label.endswith("_" + isa)]
    return ordered
