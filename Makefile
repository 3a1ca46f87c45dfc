# scope-profiler - build, test, benchmark, install.
#
#   make            build build/scope-profiler
#   make demo       install missing packages (deps-build), build, profile
#                   examples/timestep.py
#   make check      install missing packages (deps-check), build, run every test
#   make check-pythons  the same tests with Python 3.13 (Debian 13) and 3.14
#                   (Debian testing), each in a chroot made once (root)
#   make check-pyenv    the same tests built against pyenv's CPythons (CHECK_PYENV)
#   make hacl       what the static link of Debian 13's / testing's libpython needs
#   make asan       the unit and end-to-end tests under ASan + UBSan
#   make fuzz       a libFuzzer campaign on the file reader (FUZZ_SECONDS=600)
#   make fuzz-ci    a short one (FUZZ_CI_SECONDS=75) that fails on a crash,
#                   hang or leak; both need clang and libclang-rt-dev
#   make bench      (deps-bench) overhead and I/O benchmarks against their peers
#   make man        the man pages' OPTIONS sections, from the binary's --help
#   make module     the module for plain python (BUILD/scope_profiler<EXT_SUFFIX>)
#   make install    PREFIX=/usr/local (DESTDIR too): the binary, man pages, the
#                   module (package scope_profiler/); PREFIX=~/.local: no
#                   root, the module in the user site-packages; another
#                   PREFIX prints the PYTHONPATH that finds the module
#   make uninstall  removes what install put
#   pip install .   the same install into the Python running pip: a venv,
#                   --user (pyproject.toml, scripts/pep517_backend.py)
#
# The embedded interpreter is Debian's CPython (/usr/bin/python3, 3.11), on
# purpose: the Python packages on these machines (numpy, h5py, mpi4py) are
# Debian's and are built for it. Override with PYTHON=/path/to/python3.X, any
# CPython 3.11 to 3.14 with its C headers (docs/INSTALL.md, "Other Pythons").

PYTHON        ?= /usr/bin/python3
# The Python the end-to-end tests run under (pytest, h5py, numpy); the scripts they
# profile run under PYTHON, inside the executable.
TEST_PYTHON   ?= $(PYTHON)
PREFIX        ?= /usr/local
BUILD         ?= build
VERSION       := 0.1.0

# PYTHON is checked before anything is built (scripts/py-check.sh): a Python that
# does not run, is older than 3.11 or lacks its headers stops make with one line.
# It also finds PYTHON_CONFIG (python3.X-config) when not given. The goals that
# build nothing with PYTHON themselves are not held up by it (nor probe the links).
# OUTER_GOALS build nothing here: they install packages, call make again (which
# finds what they installed) or remove files; with only those asked, neither HDF5
# nor the link probes below are needed (`make hacl` makes what a probe looks for).
OUTER_GOALS := deps deps-build deps-check deps-bench demo check test check-pythons check-pyenv \
               asan bench clean uninstall hacl
NO_PY_GOALS := $(filter-out hacl,$(OUTER_GOALS)) fuzz fuzz-ci fuzz-build layers
NEED_PY     := $(filter-out $(NO_PY_GOALS),$(or $(MAKECMDGOALS),all))
ifneq ($(NEED_PY),)
PY_CHECK := $(shell scripts/py-check.sh '$(PYTHON)' '$(PYTHON_CONFIG)')
ifeq ($(filter config=%,$(PY_CHECK)),)
$(error $(PY_CHECK))
endif
PYTHON_CONFIG := $(patsubst config=%,%,$(PY_CHECK))
endif
PYTHON_CONFIG ?= $(PYTHON)-config

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# HDF5: HDF5_DIR=/path (its include/hdf5.h, lib/libhdf5.so or .a; an rpath to
# lib/) when set, else pkg-config's hdf5. Without either, make stops at its start
# with one line saying so (but for the goals that install it first, or need none).
ifneq ($(HDF5_DIR),)
HDF5_CFLAGS := -I$(HDF5_DIR)/include
HDF5_LIBS   := -L$(HDF5_DIR)/lib -Wl,-rpath,$(HDF5_DIR)/lib -lhdf5
HDF5_MISSING := $(if $(wildcard $(HDF5_DIR)/include/hdf5.h),,HDF5_DIR=$(HDF5_DIR) has no include/hdf5.h)
else
HDF5_CFLAGS := $(shell pkg-config --cflags hdf5 2>/dev/null)
HDF5_LIBS   := $(shell pkg-config --libs hdf5 2>/dev/null)
HDF5_MISSING := $(if $(HDF5_LIBS),,pkg-config finds no hdf5 and HDF5_DIR is not set)
endif
BUILDING    := $(filter-out $(OUTER_GOALS),$(or $(MAKECMDGOALS),all))
ifneq ($(BUILDING),)
ifneq ($(HDF5_MISSING),)
$(error no HDF5: $(HDF5_MISSING); install HDF5's C library and headers (Debian: scripts/install-deps.sh build) or point at it: make HDF5_DIR=/path/to/hdf5)
endif
endif
PY_CFLAGS   := $(shell $(PYTHON_CONFIG) --includes 2>/dev/null)
# The interpreter is linked in statically when Debian's libpython3.X.a
# allows it (scripts/py-static-probe.sh tries, once per build folder), as
# /usr/bin/python3 itself is: the shared libpython's position-independent
# code, symbol interposition and thread-state lookups through
# __tls_get_addr make every Python instruction dearer (a tiny-call loop:
# ~1.15x on 3.11, ~1.26x on 3.13) and start-up slower. The whole archive goes in and its symbols are
# exported, for extension modules (numpy, h5py, ...) to bind to. Debian 13's
# and testing's archives lack the HACL hash code their built-in modules need:
# scripts/chroot.sh compiles it once per chroot from Debian's source of the
# installed version (into SP_HACL_DIR, /usr/local/lib/scope-profiler), and the
# probe adds it; without it those link the shared library, with one line
# saying so and naming `make hacl`, which builds it on any Debian machine the
# way scripts/chroot.sh does in its chroots. PY_STATIC=0 forces the shared library.
PY_PROBE    := $(BUILD)/py-static.mk
SP_HACL_DIR ?= /usr/local/lib/scope-profiler
export SP_HACL_DIR
ifneq ($(BUILDING),)
ifneq ($(PY_STATIC),0)
-include $(PY_PROBE)
endif
endif
ifeq ($(PY_STATIC),1)
PY_LIBS     := $(PY_STATIC_LIBS)
else
PY_LIBS     := $(shell $(PYTHON_CONFIG) --embed --ldflags 2>/dev/null)
endif
# HDF5 is linked statically where the archive allows it
# (scripts/hdf5-static-probe.sh tries, once per build folder): Debian's shared
# libhdf5 brings libcurl, whose libraries cost every start ~14 M instructions
# in the dynamic loader; src/store/h5noros3.c leaves HDF5's S3 driver out.
# HDF5_STATIC=0 links the shared library. The other programs (unit tests,
# fuzzing) link the shared one, whose leaks tests/fuzz/lsan-hdf5.supp names.
HDF5_PROBE  := $(BUILD)/hdf5-static.mk
H5NOROS3_OBJ := $(BUILD)/obj/store/h5noros3.o
ifneq ($(BUILDING),)
ifneq ($(HDF5_STATIC),0)
-include $(HDF5_PROBE)
endif
endif
HDF5_BIN_LIBS := $(if $(filter 1,$(HDF5_STATIC)),$(HDF5_STATIC_LIBS),$(HDF5_LIBS))
PY_EXE      := $(shell $(PYTHON) -c 'import sys,os; print(os.path.realpath(sys.executable))' 2>/dev/null)
PY_VERSION  := $(shell $(PYTHON) -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)
# MPI (Open MPI from Debian) when its development files are installed; MPI=0
# builds without it. libmpi is not linked: src/store/mpi.c opens it (by the
# soname read here) only under a launcher. The executable exports its MPI_*
# functions (MPI's profiling interface): MPI_Finalize and MPI_Finalized, so
# that a script's MPI.Finalize() is deferred to the end, and the calls that
# run --mpi-calls times (src/store/mpicalls.c).
MPI ?= $(if $(shell pkg-config --exists ompi-c 2>/dev/null && echo y),1,0)
ifeq ($(MPI),1)
MPI_SONAME  := $(shell objdump -p $$(pkg-config --variable=libdir ompi-c)/libmpi.so 2>/dev/null | sed -n 's/^ *SONAME *//p')
ifeq ($(MPI_SONAME),)
$(warning cannot read libmpi.so's soname (is objdump, from binutils, installed?): the executable will open libmpi.so, which only the -dev package provides)
endif
MPI_CFLAGS  := $(shell pkg-config --cflags ompi-c) -DSP_HAVE_MPI \
               $(if $(MPI_SONAME),-DSP_MPI_SONAME='"$(MPI_SONAME)"')
MPI_LIBS    := -Wl,--export-dynamic-symbol='MPI_*'
endif

# NVTX (run --nvtx): NVTX3 is header-only (nvtx3/nvToolsExt.h; NVTX's own
# loader opens a tool such as Nsight Systems at run time, nothing is linked).
# Found in NVTX_INCLUDE when given, else beside nvcc (the CUDA toolkit's
# include/), /usr/local/cuda/include or /usr/include; NVTX=0 builds without,
# and then `run --nvtx` says so in one line and runs without ranges. Searched
# after the system's headers (-idirafter), so the toolkit's folder shadows none.
NVTX_SEARCH := $(or $(NVTX_INCLUDE),$(shell d=$$(command -v nvcc 2>/dev/null) && echo $$(dirname $$(dirname $$(readlink -f $$d))))/include) \
               /usr/local/cuda/include /usr/include
NVTX_DIR    := $(if $(filter 0,$(NVTX)),,$(firstword $(foreach d,$(NVTX_SEARCH),$(if $(wildcard $(d)/nvtx3/nvToolsExt.h),$(d)))))
ifneq ($(NVTX_INCLUDE),)
ifeq ($(NVTX_DIR),)
$(error NVTX_INCLUDE=$(NVTX_INCLUDE) has no nvtx3/nvToolsExt.h)
endif
endif
NVTX_CFLAGS := $(if $(NVTX_DIR),-DSP_HAVE_NVTX -idirafter $(NVTX_DIR))

# The flag sets, each defined here once; the rules below only combine them.
#   SP_CPPFLAGS(GEN)  every C file: include/, GEN (the folder of the generated
#                     headers), HDF5's headers, the version
#   LANG_CFLAGS       the language and the warnings; ALL_CFLAGS adds CFLAGS
#   LAYER_INC         in a rule for src/LAYER/NAME.c: -Isrc/LAYER, the layer's
#                     private headers (tests/LAYER/ get the same)
#   PY_EXE_DEF, PY_DEFS   the Python's headers and names, for src/python's files
#                     (and the extension module's objects, all of them)
#   PIC_CPPFLAGS, PIC_CFLAGS   the extension module's objects (BUILD/pic/)
#   SANITIZE(_LD)     ASan + UBSan, compiling (linking): ASAN_CFLAGS and
#                     ASAN_LDFLAGS (make asan), FUZZ_CFLAGS (make fuzz)
#   DEPFLAGS          each object's header dependencies from the compiler,
#                     beside it (OBJ.d; read back at the end of this file)
SP_CPPFLAGS = -Iinclude -I$(1) $(HDF5_CFLAGS) -DSP_VERSION='"$(VERSION)"'
CPPFLAGS   += $(call SP_CPPFLAGS,$(BUILD))
LANG_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN)
ALL_CFLAGS  = $(LANG_CFLAGS) $(CFLAGS)
LAYER_INC   = -Isrc/$(firstword $(subst /, ,$*))
PY_EXE_DEF  = -DSP_PYTHON_EXECUTABLE='"$(PY_EXE)"'
PY_DEFS     = $(PY_CFLAGS) $(PY_EXE_DEF) -DSP_PYTHON_VERSION='"$(PY_VERSION) ($(PY_EXE))"' $(NVTX_CFLAGS)
PIC_CPPFLAGS = $(PY_DEFS) -DSP_EXTENSION
PIC_CFLAGS  := -fPIC -fvisibility=hidden
SANITIZE_LD := -fsanitize=address,undefined
SANITIZE    := $(SANITIZE_LD) -fno-sanitize-recover=undefined
DEPFLAGS    := -MMD -MP

# The layers (src/LAYER/, see README "Layout"): core (the model), store (HDF5,
# packing, MPI), report (tree, analysis, rendering), python (the embedded
# module and the run session), cli (the command table and the commands).
# Each layer's private headers live in its folder and only its own files get
# that folder on the include path; include/ holds the APIs usable from C.
# scripts/check-layers.sh fails the build when a file outside src/python
# includes <Python.h>, or one outside src/store <hdf5.h> or <mpi.h>.
CORE_SRC   := $(wildcard src/core/*.c)
STORE_SRC  := $(filter-out src/store/mpi.c src/store/mpicalls.c src/store/h5noros3.c,$(wildcard src/store/*.c))
REPORT_SRC := $(wildcard src/report/*.c)
PY_SRC     := $(wildcard src/python/*.c)
CLI_SRC    := $(wildcard src/cli/*.c)
# The library: no Python, no MPI. Shared by the CLI and the unit tests.
LIB_SRC := $(CORE_SRC) $(STORE_SRC) $(REPORT_SRC)
# src/store/mpi.c and mpicalls.c need mpi.h (when built with MPI) and go with the executable.
MPI_SRC := src/store/mpi.c src/store/mpicalls.c

LIB_OBJ := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
PY_OBJ  := $(PY_SRC:src/%.c=$(BUILD)/obj/%.o) $(MPI_SRC:src/%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:src/%.c=$(BUILD)/obj/%.o)
LIB     := $(BUILD)/libscope-profiler.a
EXT_SUFFIX := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
PY_MOD  := $(BUILD)/scope_profiler$(EXT_SUFFIX)
BIN     := $(BUILD)/scope-profiler

UNIT_SRC := $(wildcard tests/*/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/%.c=$(BUILD)/tests/%)
LAYERS_OK := $(BUILD)/layers.ok

.PHONY: module pictures all demo check check-pythons check-pyenv hacl test unit e2e asan bench install uninstall man clean deps deps-build deps-check deps-bench fuzz fuzz-ci fuzz-build layers
all: $(BIN) $(PY_MOD)

# Probed again when the HACL code is (re)built; the executable relinks after.
$(PY_PROBE): scripts/py-static-probe.sh $(wildcard $(SP_HACL_DIR)/python*/VERSION)
	@mkdir -p $(@D)
	scripts/py-static-probe.sh "$(PYTHON)" "$(CC)" > $@.tmp && mv $@.tmp $@

# Debian 13's and testing's libpython3.X.a need CPython's HACL hash code beside it
# (see above): built from Debian's source of the installed version, once.
hacl:
	@scripts/py-static-probe.sh --hacl "$(PYTHON)" "$(CC)"

$(HDF5_PROBE): scripts/hdf5-static-probe.sh $(H5NOROS3_OBJ)
	scripts/hdf5-static-probe.sh "$(CC) $(LDFLAGS)" $(H5NOROS3_OBJ) "$(HDF5_CFLAGS)" "$(HDF5_LIBS)" > $@.tmp && mv $@.tmp $@

# Every object of the executable (BUILD/obj/) and of the extension module
# (BUILD/pic/, with PIC_CPPFLAGS and PIC_CFLAGS) is compiled by COMPILE; the
# headers it includes are in its .d file (DEPFLAGS), known after its first
# compile. The generated headers are made before a layer's first object
# (order-only: a clean build at -j), and the .d files then rebuild their includers.
COMPILE = $(CC) $(CPPFLAGS) $(LAYER_INC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(BUILD)/obj/%.o: src/%.c | $(LAYERS_OK)
	@mkdir -p $(dir $@)
	$(COMPILE)

# The layer rule, checked before anything is compiled.
layers: $(LAYERS_OK)
$(LAYERS_OK): scripts/check-layers.sh $(wildcard src/*/*.c src/*/*.h include/*.h)
	@mkdir -p $(dir $@)
	./scripts/check-layers.sh
	@touch $@

$(PY_SRC:src/%.c=$(BUILD)/obj/%.o): CPPFLAGS += $(PY_DEFS)
$(BUILD)/obj/cli/cmd_run.o: CPPFLAGS += $(PY_EXE_DEF)
$(BUILD)/obj/store/mpi.o $(BUILD)/obj/store/mpicalls.o: CPPFLAGS += $(MPI_CFLAGS)
# Objects compiled with more in both builds (obj/ and pic/), by LAYER/NAME:
# the reader's validation pass over every event is written to vectorise; the
# profile hook calls clock_gettime twice per traced call: no PLT hop.
VECTORISE_OBJ := store/h5read_check
NO_PLT_OBJ    := python/tracer python/linetrace
both_builds = $(foreach d,obj pic,$(patsubst %,$(BUILD)/$(d)/%.o,$(1)))
$(call both_builds,$(VECTORISE_OBJ)): ALL_CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic
$(call both_builds,$(NO_PLT_OBJ)): ALL_CFLAGS += -fno-plt
# The Python layer goes in compiled (marshalled bytecode of the very
# interpreter linked in), so a run does not compile it at start-up (~12 ms).
# $(call freeze,NAME,BASE): $< compiled as module NAME, marshalled into
# $(BUILD)/BASE.pyc, as a C array in $@.
freeze = mkdir -p $(BUILD) && $(PYTHON) -c 'import marshal, sys; sys.stdout.buffer.write(marshal.dumps(compile(open(sys.argv[1]).read(), sys.argv[2], "exec", dont_inherit=True)))' $< '$(1)' > $(BUILD)/$(2).pyc && cd $(BUILD) && xxd -i $(2).pyc > $(abspath $@).tmp && mv $(abspath $@).tmp $(abspath $@)
$(BUILD)/sp_pysrc.h: src/python/scope_profiler_py.py Makefile
	$(call freeze,<scope_profiler>,scope_profiler_py)
# The read API's matplotlib charts, a second module frozen the same way
# (scope_profiler._charts, loaded on a chart's first call; charts.c).
$(BUILD)/obj/python/charts.o $(BUILD)/pic/python/charts.o: $(BUILD)/sp_pycharts.h
$(BUILD)/sp_pycharts.h: src/python/scope_profiler_charts.py Makefile
	$(call freeze,<scope_profiler._charts>,scope_profiler_charts)
# The submodules made the same way on their first import (frozen.c):
# scope_profiler.ipython_magics, .plotting_scripts, .post_processing.
PY_FROZEN := ipython_magics plotting_scripts post_processing
$(BUILD)/sp_pymod_%.h: src/python/scope_profiler_%.py Makefile
	$(call freeze,<scope_profiler.$*>,scope_profiler_$*)
# The no-op module the script's Python subprocesses import (see the shim).
$(BUILD)/sp_pyshim.h: src/python/scope_profiler_shim.py
	@mkdir -p $(BUILD)
	cd src/python && xxd -i scope_profiler_shim.py > $(abspath $@).tmp && mv $(abspath $@).tmp $(abspath $@)
# The script of report.html's timeline (scope-profiler plot), for the build
# and for the fuzzing build (the same rule in each folder).
%/sp_timeline_js.h: src/report/report_timeline.js
	@mkdir -p $(@D)
	cd src/report && xxd -i report_timeline.js > $(abspath $@).tmp && mv $(abspath $@).tmp $(abspath $@)

$(LIB): $(LIB_OBJ)
	$(AR) rcs $@ $^

# The layer rule for calls (check-layers.sh --symbols), before linking.
$(BIN): $(CLI_OBJ) $(PY_OBJ) $(LIB) $(wildcard $(PY_PROBE) $(HDF5_PROBE))
	./scripts/check-layers.sh --symbols $(LIB_OBJ) $(PY_OBJ) $(CLI_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(CLI_OBJ) $(PY_OBJ) $(LIB) $(HDF5_BIN_LIBS) $(PY_LIBS) $(MPI_LIBS) -lz

# The same module as an extension module for plain python and Jupyter
# (`import scope_profiler` after `make install`): the sources of src/python
# but the run (run_session.c), with the library, compiled again
# position-independent with -DSP_EXTENSION (PyInit_scope_profiler,
# standalone.c) into BUILD/pic/, symbols hidden but the init function, HDF5
# linked shared and libpython not at all (the interpreter provides it). MPI's
# calls are not intercepted there (no MPI flags: mpi.c and mpicalls.c
# compile their stand-ins). Installed as the package scope_profiler/ (the
# module its __init__<EXT_SUFFIX>, src/python/scope_profiler_main.py its
# __main__.py: `python -m scope_profiler ARGS` runs `scope-profiler ARGS`)
# into that Python's folder for PREFIX, as scripts/pymoddir.py says: the
# user site-packages when PREFIX is the user base (~/.local), else
# PREFIX/lib/python3.X/dist-packages on Debian (on /usr/bin/python3's path for
# /usr/local), site-packages elsewhere. PYMODDIR overrides it.
PYMODDIR    ?= $(shell $(PYTHON) scripts/pymoddir.py "$(PREFIX)" 2>/dev/null)
# run --subprocesses loads the module into spawned children: from beside the
# executable (the build tree), else the package installed with it (pip or
# install: PREFIX/lib/python3.X/{site,dist}-packages beside its PREFIX/bin),
# else from PYMODDIR as built (extension_path in shim.c).
$(BUILD)/obj/python/shim.o: CPPFLAGS += -DSP_EXTENSION_NAME='"scope_profiler$(EXT_SUFFIX)"' \
	-DSP_EXTENSION_DIR='"$(PYMODDIR)"'
EXT_SRC     := $(LIB_SRC) $(filter-out src/python/run_session.c src/python/venv.c,$(PY_SRC)) $(MPI_SRC)
EXT_OBJ     := $(EXT_SRC:src/%.c=$(BUILD)/pic/%.o)
module: $(PY_MOD)
$(BUILD)/pic/%.o: CPPFLAGS += $(PIC_CPPFLAGS)
$(BUILD)/pic/%.o: ALL_CFLAGS += $(PIC_CFLAGS)
$(BUILD)/pic/%.o: src/%.c | $(LAYERS_OK)
	@mkdir -p $(dir $@)
	$(COMPILE)
# The generated headers, each before the first object of the layer that
# includes it: the Python sources embedded in the executable (the read API's
# classes, the subprocesses' shim), report.html's script.
PY_GEN_H     := $(BUILD)/sp_pysrc.h $(BUILD)/sp_pycharts.h $(BUILD)/sp_pyshim.h \
                $(PY_FROZEN:%=$(BUILD)/sp_pymod_%.h)
REPORT_GEN_H := $(BUILD)/sp_timeline_js.h
$(filter $(BUILD)/obj/python/% $(BUILD)/pic/python/%,$(PY_OBJ) $(EXT_OBJ)): | $(PY_GEN_H)
$(filter $(BUILD)/obj/report/% $(BUILD)/pic/report/%,$(LIB_OBJ) $(EXT_OBJ)): | $(REPORT_GEN_H)
$(PY_MOD): $(EXT_OBJ)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -o $@ $(EXT_OBJ) $(HDF5_LIBS) -lz -lm

# A unit test is one C file compiled and linked in one command (its .d file
# beside it); tests/LAYER/ sees that layer's headers. The hook's unit test
# embeds the interpreter with the built-in module; the others link the library.
UNIT_CC = $(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) $(DEPFLAGS) -MT $@ -MF $@.d -o $@ $<
PY_TEST_OBJ := $(PY_OBJ)
$(BUILD)/tests/python/%: tests/python/%.c $(PY_TEST_OBJ) $(LIB) $(wildcard $(PY_PROBE) $(HDF5_PROBE))
	@mkdir -p $(dir $@)
	$(UNIT_CC) -Isrc/python $(PY_CFLAGS) $(PY_TEST_OBJ) $(LIB) $(HDF5_BIN_LIBS) $(PY_LIBS) $(MPI_LIBS) -lcmocka -lm

$(BUILD)/tests/%: tests/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(UNIT_CC) $(LAYER_INC) -Isrc/cli $(LIB) $(HDF5_LIBS) -lcmocka -lm

# The missing Debian packages of a group of scripts/install-deps.sh (build, check,
# bench: each holds the one before), the Python's headers for PYTHON; deps: all.
deps-build deps-check deps-bench:
	PYTHON=$(PYTHON) ./scripts/install-deps.sh $(@:deps-%=%)
deps: deps-bench

# The README's first command: set up, build, profile the bundled example.
demo: deps-build
	$(MAKE) all
	./$(BIN) run -q -o $(BUILD)/timestep.h5 examples/timestep.py
	./$(BIN) summary $(BUILD)/timestep.h5

# The README's second command, and what CI runs.
check: deps-check
	$(MAKE) all unit-build
	$(MAKE) unit e2e

test: check

# The same unit and end-to-end tests under the other Pythons: Debian 13's 3.13
# and Debian testing's 3.14, each in a chroot that scripts/chroot.sh makes once
# per machine (as root, from the mirror apt uses) and reuses, each built in its
# own folder (build-trixie/, build-testing/; build/ is untouched) with the
# suite's compiler, HDF5, Open MPI and numpy. The suites run side by side (each
# mostly waits on its runs: two on two cores took 535 s, one after the other 899),
# each in a session of its own (scripts/side-by-side.sh: Ctrl-C ends both), its
# output shown whole when it ends. Every suite runs; the target fails if one did.
# CHECK_SUITES=testing runs just that one.
CHECK_SUITES ?= trixie testing
check-pythons:
	@./scripts/side-by-side.sh $(CHECK_SUITES) -- sh -c 'start=$$(date +%s); s=$$1; \
		if ./scripts/chroot.sh $$s run sh -c "make -j2 BUILD=build-$$s all unit-build && \
			./build-$$s/scope-profiler --version && make BUILD=build-$$s unit e2e E2E_ARGS=$(OTHER_PYTHON_ARGS)"; \
		then echo "== check-pythons: $$s passed in $$(( $$(date +%s) - start )) s"; \
		else echo "== check-pythons: $$s FAILED after $$(( $$(date +%s) - start )) s"; exit 1; fi' sh

# The same unit and end-to-end tests built against pyenv's CPythons on this machine
# (shared or not: pyenv's libpython3.X.a is linked in where it links), each in its
# own folder (build-py3.12.1/, ...). The tests still run under TEST_PYTHON (Debian's,
# with pytest and h5py); those whose scripts import a package the pyenv Python lacks
# (numpy, h5py, mpi4py, ...) skip naming it (they run in the other suites). Every
# version runs; the target fails if one did or is missing. CHECK_PYENV=3.13.0 runs one.
# 3.12.1 (the only 3.12 here) runs the whole suite; the versions of CHECK_PYENV_SHORT
# (3.13.0: Debian 13's 3.13 runs the whole suite in check-pythons) only what a
# pyenv build changes: finding and linking its libpython, venvs, installs, the
# interpreter's start, and the hooks (PYENV_SHORT_TESTS).
CHECK_PYENV     ?= 3.12.1 3.13.0
CHECK_PYENV_SHORT ?= 3.13.0
CHECK_PYENV_DIR ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)/versions
CHECK_TEST_PYTHON ?= /usr/bin/python3
PYENV_SHORT_TESTS := $(addprefix tests/e2e/test_,build_python.py venv.py run.py module.py \
	module_install.py interpreter.py earlier_api.py recursive.py lines.py exit.py habits.py)
# The tests of the other Pythons leave out those marked any_python (their
# outcome does not depend on the Python embedded: the browser, the docs, the
# layers, builds against another HDF5), which the host's suite runs
# (tests/e2e/conftest.py's --other-python).
OTHER_PYTHON_ARGS := --other-python
check-pyenv:
	@failed=; for v in $(CHECK_PYENV); do \
		start=$$(date +%s); py=$(CHECK_PYENV_DIR)/$$v/bin/python3; b=build-py$$v; \
		tests=tests/e2e; case " $(CHECK_PYENV_SHORT) " in *" $$v "*) tests="$(PYENV_SHORT_TESTS)";; esac; \
		echo "== check-pyenv: $$v ($$py)"; \
		if $(MAKE) -j2 PYTHON=$$py BUILD=$$b all unit-build && ./$$b/scope-profiler --version && \
			$(MAKE) PYTHON=$$py BUILD=$$b TEST_PYTHON=$(CHECK_TEST_PYTHON) unit e2e \
				E2E_ARGS="$(OTHER_PYTHON_ARGS)" E2E_TESTS="$$tests"; \
		then echo "== check-pyenv: $$v passed in $$(( $$(date +%s) - start )) s"; \
		else echo "== check-pyenv: $$v FAILED after $$(( $$(date +%s) - start )) s"; failed="$$failed $$v"; fi; \
	done; \
	if [ -n "$$failed" ]; then echo "check-pyenv: failed:$$failed"; exit 1; fi

unit-build: $(UNIT_BIN)

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; \
		leaks=; supp=; \
		case $$t in */test_tracer) leaks=detect_leaks=0;; \
			*/test_fuzz_read) supp=suppressions=$(abspath tests/fuzz/lsan-hdf5.supp);; esac; \
		ASAN_OPTIONS="$$ASAN_OPTIONS:$$leaks" LSAN_OPTIONS="$$supp" \
		CMOCKA_MESSAGE_OUTPUT=stdout ./$$t; done

# Not -q: the header says what the executable embeds (tests/e2e/conftest.py).
# E2E_TESTS: the files or folders to run (default tests/e2e); E2E_ARGS: more
# pytest arguments (check-pythons and check-pyenv give --other-python).
E2E_TESTS ?= tests/e2e
e2e: $(BIN)
	SCOPE_PROFILER=$(abspath $(BIN)) $(TEST_PYTHON) -m pytest $(E2E_ARGS) $(E2E_TESTS)

# Same tests, built with AddressSanitizer and UndefinedBehaviorSanitizer.
# Leak checking is off where the interpreter is embedded (CPython keeps its
# allocations at exit by design: the end-to-end tests and test_tracer); the
# other unit tests run with it on.
ASAN_CFLAGS  := -O1 -g -fno-omit-frame-pointer $(SANITIZE)
ASAN_LDFLAGS := $(SANITIZE_LD)
ASAN_BUILD   := BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" LDFLAGS="$(ASAN_LDFLAGS)"
asan:
	$(MAKE) $(ASAN_BUILD) all unit-build
	ASAN_OPTIONS=allocator_may_return_null=1 $(MAKE) $(ASAN_BUILD) unit
	ASAN_OPTIONS=detect_leaks=0 $(MAKE) $(ASAN_BUILD) e2e

# Coverage-guided fuzzing of everything that reads a profile (tests/fuzz/fuzz_read.c):
# the core library and the file-reading commands built with clang and
# -fsanitize=fuzzer,address,undefined in build-fuzz/ (libhdf5 itself is
# Debian's, not instrumented). The seed corpus is written by tests/fuzz/fuzz_seeds.c
# with the library's own writer; tests/fuzz/fuzz-regress/ holds past findings, which
# every run replays first. New inputs collect in build-fuzz/corpus, findings in
# build-fuzz/findings. HDF5's own leaks on damaged metadata are suppressed as in
# `make unit` (tests/fuzz/lsan-hdf5.supp).
FUZZ_CC      ?= clang
FUZZ_BUILD   := build-fuzz
FUZZ_SECONDS ?= 600
FUZZ_CI_SECONDS ?= 75
FUZZ_CFLAGS  := $(LANG_CFLAGS) -O1 -g -fno-omit-frame-pointer $(SANITIZE)
FUZZ_CLI_SRC := $(filter-out src/cli/main.c src/cli/cmd_run.c,$(CLI_SRC))
# The target brings its own checking sp_cmd_error (src/core/say.c's place).
FUZZ_OBJ     := $(patsubst src/%.c,$(FUZZ_BUILD)/obj/%.o,$(filter-out src/core/say.c,$(LIB_SRC)) $(FUZZ_CLI_SRC))
FUZZ_BIN     := $(FUZZ_BUILD)/fuzz_read
# libhdf5 asks malloc for whatever sizes a damaged file names and handles a
# NULL answer: such requests fail (allocator_may_return_null), and only
# memory actually used counts (-rss_limit_mb; -malloc_limit_mb is far above).
FUZZ_FLAGS   := -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1048576 -max_len=65536 \
                -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/findings/
FUZZ_ENV     := ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
                LSAN_OPTIONS=suppressions=$(abspath tests/fuzz/lsan-hdf5.supp)

FUZZ_CPPFLAGS := $(call SP_CPPFLAGS,$(FUZZ_BUILD))

$(FUZZ_BUILD)/obj/%.o: src/%.c | $(FUZZ_BUILD)/obj
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) $(LAYER_INC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(DEPFLAGS) -c -o $@ $<

$(filter $(FUZZ_BUILD)/obj/report/%,$(FUZZ_OBJ)): | $(FUZZ_BUILD)/sp_timeline_js.h

$(FUZZ_BIN): tests/fuzz/fuzz_read.c $(FUZZ_OBJ)
	$(FUZZ_CC) $(FUZZ_CPPFLAGS) -Isrc/cli $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_OBJ) $(HDF5_LIBS) -lz -lm

$(FUZZ_BUILD)/fuzz_seeds: tests/fuzz/fuzz_seeds.c $(LIB) | $(FUZZ_BUILD)/obj
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(HDF5_LIBS) -lz -lm

# Written afresh each time (the writer may have changed); small files.
$(FUZZ_BUILD)/seeds: $(FUZZ_BUILD)/fuzz_seeds
	rm -rf $@ && mkdir -p $@ && ./$< $@

$(FUZZ_BUILD)/obj:
	mkdir -p $@ $(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/findings

fuzz-build: $(FUZZ_BIN) $(FUZZ_BUILD)/seeds

fuzz: fuzz-build
	$(FUZZ_ENV) ./$(FUZZ_BIN) $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
		$(FUZZ_BUILD)/corpus $(FUZZ_BUILD)/seeds tests/fuzz/fuzz-regress

# CI: the findings of the past, then a short campaign from the seeds alone
# (a corpus of earlier campaigns is not needed), with a fixed seed so that a
# failure replays; fails on any crash, hang (over 10 s for one input) or leak
# of the project's memory.
FUZZ_CI_SEED ?= 1
fuzz-ci: fuzz-build
	$(FUZZ_ENV) ./$(FUZZ_BIN) $(FUZZ_FLAGS) tests/fuzz/fuzz-regress/*
	rm -rf $(FUZZ_BUILD)/ci-corpus && mkdir -p $(FUZZ_BUILD)/ci-corpus
	$(FUZZ_ENV) ./$(FUZZ_BIN) $(FUZZ_FLAGS) -seed=$(FUZZ_CI_SEED) -max_total_time=$(FUZZ_CI_SECONDS) \
		$(FUZZ_BUILD)/ci-corpus $(FUZZ_BUILD)/seeds tests/fuzz/fuzz-regress

# The figures hold for the binary measured: its --version says how it carries
# libpython and HDF5 (linked in or shared), and bench_wholerun.py repeats it.
bench: deps-bench
	$(MAKE) $(BIN)
	./$(BIN) --version
	$(PYTHON) scripts/bench.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_mpi.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_mpicalls.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_storage.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_memory.py --binary $(abspath $(BIN)) --python $(PYTHON)
	$(PYTHON) scripts/bench_alloc.py --binary $(abspath $(BIN)) --python $(PYTHON)
	$(PYTHON) scripts/bench_likwid.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_wholerun.py --binary $(abspath $(BIN)) --python $(PYTHON)
	$(PYTHON) scripts/bench_endrun.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_stream.py --binary $(abspath $(BIN))
	$(PYTHON) scripts/bench_mpi_stream.py --binary $(abspath $(BIN))

# The man pages: the overview, one per command, the file format. Their
# SYNOPSIS and OPTIONS sections are written from the binary's --help by
# scripts/gen-man-options.py (`make man`; tests/e2e/test_docs.py fails when a
# page is out of date).
MAN1  := $(wildcard man/*.1)
MAN5  := $(wildcard man/*.5)
MANDIR = $(DESTDIR)$(PREFIX)/share/man

# The README's picture: the Gantt chart of the bundled example (`make pictures`).
pictures: $(BIN)
	@mkdir -p $(BUILD)/pictures
	cd $(BUILD)/pictures && $(abspath $(BIN)) run -q -o timestep.h5 $(abspath examples/timestep.py) >/dev/null && \
		$(abspath $(BIN)) plot timestep.h5 -o . 2>/dev/null
	cp $(BUILD)/pictures/gantt.svg docs/gantt.svg

man: $(BIN)
	$(PYTHON) scripts/gen-man-options.py --binary $(abspath $(BIN))

# A folder not on the Python's sys.path (PREFIX=/opt/sp) gets one line
# saying which PYTHONPATH finds it; not for a staged install (DESTDIR). A
# flat scope_profiler<EXT_SUFFIX> that earlier releases installed there goes:
# the package replaces it. pip's wheel (scripts/pep517_backend.py) is this
# install, staged.
PYPKG = $(DESTDIR)$(PYMODDIR)/scope_profiler
install: $(BIN) $(PY_MOD)
	install -d $(DESTDIR)$(PREFIX)/bin $(MANDIR)/man1 $(MANDIR)/man5 $(PYPKG)
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/scope-profiler
	install -m 644 $(MAN1) $(MANDIR)/man1/
	install -m 644 $(MAN5) $(MANDIR)/man5/
	install -m 644 $(PY_MOD) $(PYPKG)/__init__$(EXT_SUFFIX)
	install -m 644 src/python/scope_profiler_main.py $(PYPKG)/__main__.py
	rm -f $(DESTDIR)$(PYMODDIR)/$(notdir $(PY_MOD))
	@[ -n "$(DESTDIR)" ] || $(PYTHON) scripts/pymoddir.py --check "$(PYMODDIR)"

# Removes exactly what install put (the folders stay: they may hold others'),
# and the package's folder with what python -m compiled there.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/scope-profiler
	rm -f $(addprefix $(MANDIR)/man1/,$(notdir $(MAN1)))
	rm -f $(addprefix $(MANDIR)/man5/,$(notdir $(MAN5)))
	rm -f $(PYPKG)/__init__$(EXT_SUFFIX) $(PYPKG)/__main__.py $(PYPKG)/__pycache__/__main__.*.pyc
	rmdir $(PYPKG)/__pycache__ 2>/dev/null || true
	rmdir $(PYPKG) 2>/dev/null || true

clean:
	rm -rf build build-asan build-fuzz $(addprefix build-,$(CHECK_SUITES)) $(addprefix build-py,$(CHECK_PYENV))

# The header dependencies the compiler wrote (DEPFLAGS), of every build here.
-include $(wildcard $(BUILD)/obj/*/*.d $(BUILD)/pic/*/*.d $(BUILD)/tests/*/*.d $(FUZZ_BUILD)/obj/*/*.d)
