# Thin verbs over cmake/ctest. `make test` and `make run` install what they need first.
BUILD_DIR ?= build
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=
RUNNER := $(BUILD_DIR)/runner/runner

# What building and running needs, and what only the tests and benchmarks add (a browser for the
# report test, SLURM, clang's fuzzing runtime, Python's OpenCV...): `make run` installs the first.
# Python and its venv module come first, alone: pip then fills the venv while apt-get installs
# the rest (`make run` on a fresh machine: tests/fresh_machine.sh).
APT_PYTHON_PACKAGES := python3 python3-venv ca-certificates
APT_BUILD_PACKAGES := build-essential cmake ninja-build ccache pkg-config git \
  libgloo-dev libopenblas0-pthread \
  libyaml-cpp-dev libspdlog-dev libfmt-dev libboost-program-options-dev libopencv-dev \
  libvalijson-dev nlohmann-json3-dev libgtest-dev zlib1g-dev libcurl4-openssl-dev libfccp-dev \
  libjs-chart.js libarchive-dev \
  dataset-fashion-mnist procps
# qemu-user-static: an AVX2-only CPU for the tests of instruction sets (isa_avx2_test.sh);
# postgresql-15: the throwaway server of the Optuna SLURM test (optuna_slurm_test.sh);
# nginx-light: the web server the remote shards test serves shards from.
APT_TEST_PACKAGES := clang-14 libclang-rt-14-dev clang-format \
  python3-jsonschema python3-yaml python3-opencv chromium chromium-driver python3-selenium \
  slurm-wlm munge iproute2 qemu-user-static postgresql-15 nginx-light
PYTHON_STAMP := $(BUILD_DIR)/.python-installed
DEPS_STAMP := $(BUILD_DIR)/.deps-installed
TEST_DEPS_STAMP := $(BUILD_DIR)/.test-deps-installed
APT_UPDATED := $(BUILD_DIR)/.apt-updated
# libtorch comes from the PyTorch wheel, with the CUDA compiler wheels its CMake config needs
# (requirements-build.txt: all that building runner needs); the Python reference stack (timm,
# accelerate, albumentations, tensorboard, mlflow) adds what the tests and benchmarks need
# (requirements.txt). Both go into a project-local virtual environment, pinned.
VENV ?= .venv
VENV_BUILD_STAMP := $(VENV)/.build-requirements-installed
VENV_STAMP := $(VENV)/.requirements-installed

# apt_install: installs the listed Debian packages that are missing (as root, or through sudo);
# the package lists are fetched once an hour at most.
define apt_install
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  mkdir -p $(BUILD_DIR); \
	  if [ -z "$$(find $(APT_UPDATED) -mmin -60 2>/dev/null)" ]; then $$SUDO apt-get update && touch $(APT_UPDATED); fi && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $$missing; \
	fi
	@mkdir -p $(BUILD_DIR) && touch $@
endef

.PHONY: deps build-deps build build-runner test run install bench fuzz format clean

deps: $(DEPS_STAMP) $(TEST_DEPS_STAMP) $(VENV_STAMP)
$(PYTHON_STAMP): Makefile
	$(call apt_install,$(APT_PYTHON_PACKAGES))
$(DEPS_STAMP): Makefile | $(PYTHON_STAMP)
	$(call apt_install,$(APT_BUILD_PACKAGES))
$(TEST_DEPS_STAMP): Makefile | $(DEPS_STAMP)
	$(call apt_install,$(APT_TEST_PACKAGES))

$(VENV_BUILD_STAMP): requirements-build.txt | $(PYTHON_STAMP)
	/usr/bin/python3 -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check --quiet -r requirements-build.txt
	touch $@
$(VENV_STAMP): requirements.txt requirements-build.txt | $(VENV_BUILD_STAMP)
	$(VENV)/bin/pip install --disable-pip-version-check --quiet -r requirements.txt
	touch $@

# apt-get's build packages and pip's wheels side by side: neither needs the other.
build-deps:
	@$(MAKE) --no-print-directory -j2 $(DEPS_STAMP) $(VENV_BUILD_STAMP)

$(BUILD_DIR)/build.ninja: | $(DEPS_STAMP) $(VENV_BUILD_STAMP)
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: build-deps $(VENV_STAMP)
	@$(MAKE) --no-print-directory $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only what the quickstart needs: the runner, its front and the built-in plugins.
build-runner: build-deps
	@$(MAKE) --no-print-directory $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS) --target runner

test: build $(TEST_DEPS_STAMP)
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

run: build-runner
	$(RUNNER) run experiments/quickstart.yaml

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

fuzz: $(DEPS_STAMP) $(TEST_DEPS_STAMP)
	tests/fuzz/run_fuzzers.sh 60

bench: build $(TEST_DEPS_STAMP)
	bench/run.sh

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
