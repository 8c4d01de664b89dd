# Entry points: `make demo`, `make test`. See README.md.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV := $(ROOT)/.venv
PYTHON := $(VENV)/bin/python
BAZEL ?= bazel
# Plain, sparse Bazel output under CI (CI=true): see .bazelrc.
BAZEL_FLAGS := $(if $(filter true 1,$(CI)),--config=ci)
# Bazel 4.2.3 and the rules_java it needs offline, GoogleTest for the C++
# tests, Eigen (header-only) for the CPU runtime's dot and convolution, and a
# C++ compiler; an AArch64 cross compiler with its C library and qemu's user
# mode emulator, to link and run ahead-of-time compiled objects for aarch64
# (tests/cpu/test_aot.py); headless Chromium, to check that the HTML graph
# view draws (tests/debugging/test_graph_views_render.py); Open MPI, for
# multi-process runs (tests/distributed/test_mpi.py).
APT_PACKAGES := bazel-bootstrap bazel-rules-java libgtest-dev libeigen3-dev g++ \
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user chromium openmpi-bin valgrind
EXAMPLES := $(patsubst $(ROOT)/%,%,$(sort $(wildcard $(ROOT)/examples/*.hlo)))

.PHONY: setup system-packages build pth test demo clean wheel fuzz

# Idempotent; quick when everything is already in place.
setup: build pth

system-packages:
	@missing=""; \
	for p in $(APT_PACKAGES); do dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "setup: installing Debian packages:$$missing"; \
	  log=$$(mktemp); \
	  if ! { $$sudo apt-get update && \
	         DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends $$missing; } \
	       >"$$log" 2>&1; then \
	    tail -n 30 "$$log"; rm -f "$$log"; echo "setup: apt-get failed" >&2; exit 1; \
	  fi; \
	  rm -f "$$log"; \
	fi

# The virtual environment, reinstalled when requirements.txt changes.
# requirements-gpu.txt too, where an NVIDIA driver is installed.
$(VENV)/.requirements.stamp: $(ROOT)/requirements.txt $(ROOT)/requirements-gpu.txt
	@test -x $(PYTHON) || { echo "setup: creating .venv"; python3 -m venv $(VENV); }
	@echo "setup: installing requirements.txt into .venv"
	@$(PYTHON) -m pip install --quiet --disable-pip-version-check -r $(ROOT)/requirements.txt
	@if PATH="$$PATH:/sbin:/usr/sbin" ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then \
	  echo "setup: an NVIDIA driver is installed: installing requirements-gpu.txt"; \
	  $(PYTHON) -m pip install --quiet --disable-pip-version-check -r $(ROOT)/requirements-gpu.txt; \
	fi
	@touch $@

# Builds the package and its C++ extension, then places the extension in the
# source tree (as xla/_core<EXT_SUFFIX>) so `import xla._core` works without Bazel.
build: system-packages $(VENV)/.requirements.stamp
	@cd $(ROOT) && $(BAZEL) build $(BAZEL_FLAGS) //xla:compiler
	@cd $(ROOT) && suffix=$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') && \
	  dest=xla/_core$$suffix && \
	  if ! cmp -s bazel-bin/xla/_core.so "$$dest"; then \
	    rm -f xla/_core*.so && cp bazel-bin/xla/_core.so "$$dest" && chmod 0755 "$$dest" && \
	    echo "setup: placed $$dest"; \
	  fi

# A .pth file in .venv's site-packages puts the repository root on sys.path,
# so `.venv/bin/python -c "import xla"` works from any directory.
pth: $(VENV)/.requirements.stamp
	@site=$$($(PYTHON) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') && \
	  if [ "$$(cat "$$site/xla_repo.pth" 2>/dev/null)" != "$(ROOT)" ]; then \
	    echo "$(ROOT)" > "$$site/xla_repo.pth" && echo "setup: wrote $$site/xla_repo.pth"; \
	  fi

# Every test target (C++ and Python), then one closing line counting test cases.
test: setup
	@cd $(ROOT) && events=$$(mktemp) && rc=0 && \
	  { $(BAZEL) test $(BAZEL_FLAGS) --keep_going --build_event_json_file="$$events" //... || rc=$$?; } && \
	  { $(PYTHON) tools/test_summary.py "$$events" || { [ "$$rc" != 0 ] || rc=1; }; } && \
	  rm -f "$$events" && exit $$rc

# Runs the bundled example modules on the interpreter.
demo: setup
	@cd $(ROOT) && $(BAZEL) run $(BAZEL_FLAGS) --ui_event_filters=-info --noshow_progress \
	  //tools:replay_computation -- \
	  --platform=interpreter --print_result $(EXAMPLES)

clean:
	cd $(ROOT) && if command -v $(BAZEL) >/dev/null; then $(BAZEL) clean; fi
	rm -f $(ROOT)/xla/_core*.so

# The installable wheel (tools/build_wheel.py), in dist/.
wheel: build
	$(BAZEL) build $(BAZEL_FLAGS) //:wheel
	mkdir -p $(ROOT)/dist && cp -f $(ROOT)/bazel-bin/xla_compiler-*.whl $(ROOT)/dist/ && chmod u+w $(ROOT)/dist/*.whl

# Random mutations of the corpus for FUZZ_SECONDS (default 3600): see
# tests/fuzz/run_fuzz.py. `make test` runs a fixed small budget.
fuzz: setup
	cd $(ROOT) && $(PYTHON) tests/fuzz/run_fuzz.py
