// Version of the C++ core, reported to Python as xla._core.__version__.
#ifndef XLA_CSRC_VERSION_H_
#define XLA_CSRC_VERSION_H_

namespace xla_core {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace xla_core

#endif  // XLA_CSRC_VERSION_H_
