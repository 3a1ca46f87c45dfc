/* tracer.c - `run --recursive` and profile(recursive=True): a C hook that
 * records every call of every Python function in a region named
 * <module>.<qualname>. On CPython 3.11 it is a profile hook
 * (PyEval_SetProfile, tracer_setprofile.c); on 3.12 and later,
 * sys.monitoring (PEP 669) callbacks of a tool id of our own, so cProfile,
 * coverage and debuggers keep theirs (tracer_monitoring.c): the back end,
 * compiled here, below the paths it calls.
 *
 * Per call it does what cProfile's hook does at the least: the region comes
 * from the code object's extra slot (decided once per code object: traced
 * or not, and which region), the thread's stack of open calls is the hook's
 * own, and a call costs a clock read and two stores at its start, a clock
 * read and its statistics at its end; in steady state nothing is
 * allocated, hashed or formatted. Under sys.monitoring a code object that
 * is not traced turns its events off at its first call. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "sp_aggregate.h"
#include "sp_clock.h"
#include "sp_filter.h"
#include "sp_lanes.h"
#include "sp_memory.h"
#include "sp_mode.h"
#include "sp_monitor.h"
#include "sp_nvtx.h"
#include "sp_region.h"
#include "sp_spill.h"
#include "sp_pytext.h"
#include "sp_tracer.h"

/* The value in a code object's cache slot for "not traced" (no object
 * lives at address 1). */
#define SKIP ((void *)1)
/* 3.12+: the script's own code first run where no thread records (outside
 * every profile(recursive=True) call): traced, its region made when a call
 * records it. */
#define TRACED_LATER ((void *)2)

/* Each code object's region (or SKIP) lives in its co_extra slot, so it
 * dies with the code object and an address is never mistaken for another
 * code's. */
static Py_ssize_t extra_index = -1;

/* What to trace; set before the first code object is classified. */
static struct sp_filter filter;
/* run -c: the keys (co_qualname, co_firstlineno, co_code) of the code
 * objects compile() makes of the command, or NULL. Its code is named
 * "<string>", as python -c names it, and so is code that exec() and eval()
 * make at run time (dataclasses' __init__, namedtuple's __new__), which is
 * not the user's: the key tells them apart. */
static PyObject *command_codes;

/* Slots are valid until the regions are reset, which stops the hook in
 * every thread first (sp_tracer_stop_all), discarding the stacks. */
/* Where a call goes when its region's buffer cannot grow: one slot,
 * overwritten, never written to a file (it is in no registry). */
static int64_t scratch_starts[1], scratch_ends[1];
static int32_t scratch_lanes[1];
static RegionObject scratch = {
	.buf = {.starts = scratch_starts, .ends = scratch_ends, .lanes = scratch_lanes,
		.n = 1, .cap = 1, .limit = 1},
	.index = -1,
};

/* An open call. Its frame is known by identity only, never dereferenced:
 * the frame object under 3.11's hook; under sys.monitoring, which names
 * no frame, the code object, which is enough since a thread's frames
 * return in the reverse order of their starts. */
struct open_call {
	const void *frame;
	RegionObject *region;
	ptrdiff_t slot;                /* its event; -1: aggregation mode; below -1: the
					* memory mode's event -(slot + 2), whose value holds
					* the allocation counter at its start until it ends,
					* or with start NVTX_CALL an --nvtx call's event */
	int64_t start;                 /* aggregation mode: its start; memory mode: the mark
					* before; NVTX_CALL: a call that is an NVTX range */
	union {
		struct {
			int32_t node;  /* aggregation mode: its call-tree node, */
			int32_t parent;   /* and the node before */
		};
		uint64_t gen;          /* its region's gen at the start (a slot handed over
					* to the stream since is ended by spill.c); also
					* the memory mode's */
	};
};

/* The start of an --nvtx call (no memory mode mark is this). */
#define NVTX_CALL INT64_MIN

/* An open call with a slot ends at t: in its slot, or, when its region
 * handed the slot over open since (streaming), through spill.c. */
static inline void end_slot(const struct open_call *c, int64_t t)
{
	if (__builtin_expect(c->region->gen == c->gen, 1))
		sp_region_end(c->region, (size_t)c->slot, t);
	else
		sp_spill_late_end(c->region, c->gen, c->slot, t);
}

/* An open call's event slot (-1: none, aggregation mode). */
static inline ptrdiff_t slot_of(const struct open_call *c)
{
	return c->slot < -1 ? -(c->slot + 2) : c->slot;
}

/* The memory mode, or an --nvtx call (its range popped after its end when
 * `own`: the calling thread's call; another thread's ranges are its own): a
 * call ends at t. */
static void end_mem(struct open_call *c, int64_t t, int own)
{
	RegionObject *r = c->region;
	size_t i = (size_t)slot_of(c);
	if (c->start == NVTX_CALL) {
		if (__builtin_expect(r->gen == c->gen, 1))
			sp_region_end(r, i, t);
		else
			sp_spill_late_end(r, c->gen, (ptrdiff_t)i, t);
		if (own)
			sp_nvtx_pop();
		return;
	}
	if (__builtin_expect(r->gen != c->gen, 0)) {
		sp_spill_late_end_mem(r, c->gen, (ptrdiff_t)i, t, NULL, c->start);
		return;
	}
	sp_region_mem_close(r, i, r->buf.values[i], c->start);
	sp_region_end(r, i, t);
}

/* A thread's stack of traced calls still open. calls[0] is a sentinel whose
 * frame is NULL, so the return path needs no emptiness check; top points at
 * the innermost open call. */
struct call_stack {
	struct open_call *calls, *top, *end;
};

static int stack_init(struct call_stack *s)
{
	struct open_call *calls = PyMem_RawCalloc(64, sizeof *calls);
	if (!calls)
		return -1;
	s->calls = s->top = calls;
	s->end = calls + 63;
	return 0;
}

static __attribute__((noinline, cold)) int stack_grow(struct call_stack *s)
{
	size_t used = (size_t)(s->top - s->calls), cap = (size_t)(s->end - s->calls + 1) * 2;
	if (cap > PY_SSIZE_T_MAX / sizeof *s->calls)
		return -1;
	struct open_call *c = PyMem_RawRealloc(s->calls, cap * sizeof *c);
	if (!c)
		return -1;
	s->calls = c;
	s->top = c + used;
	s->end = c + cap - 1;
	return 0;
}

/* Calls still open on a thread's stack end now (they were entered and will
 * not be seen returning); the stack is emptied. `own`: the calling thread's
 * stack, whose current call-tree node (aggregation mode) goes back to what
 * it was below them. */
static void close_open_calls(struct call_stack *s, int64_t now, int own)
{
	for (struct open_call *c = s->top; c > s->calls; c--) {
		if (c->slot < -1) {
			end_mem(c, now, own);
		} else if (c->slot >= 0) {
			end_slot(c, now);
		} else {
			sp_agg_count(c->region, c->node, c->start, now);
			if (own)
				sp_agg_stack.cur = c->parent;
		}
	}
	s->top = s->calls;
}

static void cache_put(PyCodeObject *co, void *value)
{
	if (sp_code_set_extra((PyObject *)co, extra_index, value) != 0)
		PyErr_Clear();   /* out of memory: classified again next time */
}

/* The slow path, once per code object: traced or not, and its region, the
 * module's name taken from globals (borrowed, may be NULL); without
 * `region`, TRACED_LATER for code that is traced, its region not made yet.
 * Never raises: on any failure the code is simply not traced. */
static __attribute__((noinline, cold)) void *classify(PyCodeObject *co, PyObject *globals, int region)
{
	void *result = SKIP;
	PyObject *name = NULL, *exc_type, *exc_value, *exc_tb;
	PyErr_Fetch(&exc_type, &exc_value, &exc_tb);
	/* The file's own bytes (os.fsencode): a name that is not UTF-8 is
	 * still a file of the script's. */
	PyObject *fsname = PyUnicode_EncodeFSDefault(co->co_filename);
	const char *filename = fsname ? PyBytes_AS_STRING(fsname) : NULL;
	int own = filename && strcmp(filename, "<scope_profiler>") != 0   /* never the profiler's layer */
		  && sp_filter_own_code(&filter, filename);
	if (!own && command_codes && filename && strcmp(filename, "<string>") == 0) {
		PyObject *bytes = PyObject_GetAttrString((PyObject *)co, "co_code");
		PyObject *key = bytes ? Py_BuildValue("(OiO)", co->co_qualname, co->co_firstlineno, bytes) : NULL;
		own = key && PySet_Contains(command_codes, key) == 1;
		Py_XDECREF(key);
		Py_XDECREF(bytes);
	}
	Py_XDECREF(fsname);
	if (!own)
		goto out;
	PyObject *module = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
	/* The script in a spawned child of run --subprocesses (multiprocessing
	 * imports it as __mp_main__): named as in the run and its forks. */
	if (module && PyUnicode_Check(module) && PyUnicode_CompareWithASCIIString(module, "__mp_main__") == 0)
		name = PyUnicode_FromFormat("__main__.%U", co->co_qualname);
	else if (module && PyUnicode_Check(module))
		name = PyUnicode_FromFormat("%U.%U", module, co->co_qualname);
	else
		name = PyUnicode_FromFormat("%U", co->co_qualname);
	/* A NUL (a code object's replaced qualname) no region name holds:
	 * written as \x00. A lone surrogate (a module file whose name is not
	 * UTF-8) the region keeps, stored escaped (said once); the patterns
	 * see that escaped form. */
	if (name && PyUnicode_FindChar(name, 0, 0, PyUnicode_GET_LENGTH(name), 1) >= 0) {
		PyObject *nul = PyUnicode_FromOrdinal(0), *esc = PyUnicode_FromString("\\x00");
		PyObject *clean = nul && esc ? PyUnicode_Replace(name, nul, esc, -1) : NULL;
		Py_XDECREF(nul);
		Py_XDECREF(esc);
		Py_SETREF(name, clean);
	}
	PyObject *text = name ? sp_text_storable(name) : NULL;
	const char *u = text ? PyUnicode_AsUTF8(text) : NULL;
	int kept = u && sp_filter_name(&filter, u);
	Py_XDECREF(text);
	if (!kept)
		goto out;
	RegionObject *r = region ? sp_region_lookup(name) : NULL;
	if (r)
		result = r;
	else if (!region)
		result = TRACED_LATER;
out:
	Py_XDECREF(name);
	cache_put(co, result);
	PyErr_Clear();
	PyErr_Restore(exc_type, exc_value, exc_tb);
	return result;
}

/* Aggregation mode: the call's node under the thread's current one. */
static __attribute__((noinline)) void push_agg(struct call_stack *s, RegionObject *r, const void *frame)
{
	struct sp_agg_stack *a = &sp_agg_stack;
	if (__builtin_expect(a->cap == 0, 0) && sp_agg_grow() != 0)
		goto fail;   /* registers the thread's state, so a reset reaches it */
	int32_t parent = a->cur, node = sp_agg_node_of(r, parent);
	if (__builtin_expect(node < 0, 0))
		goto fail;
	a->cur = node;
	struct open_call *c = ++s->top;
	c->frame = frame;
	c->region = r;
	c->slot = -1;
	c->node = node;
	c->parent = parent;
	c->start = sp_clock_ns();
	return;
fail:
	PyErr_Clear();
	r->buf.dropped++;
}

static __attribute__((noinline)) void pop_agg(struct open_call *c)
{
	int64_t t = sp_clock_ns();
	sp_agg_stack.cur = c->parent;
	sp_agg_count(c->region, c->node, c->start, t);
}

/* The memory mode: a call starts, with the allocation counter. */
static __attribute__((noinline)) void push_mem(struct call_stack *s, RegionObject *r, const void *frame,
					       int lanes)
{
	int32_t lane = lanes ? sp_current_lane() : 0;
	if (!lanes && sp_mode_check_thread()) {   /* lanes on just now (as in push_call) */
		push_mem(s, r, frame, 1);
		return;
	}
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	struct open_call *c = ++s->top;
	c->frame = frame;
	if (__builtin_expect(i < 0, 0)) {
		r = &scratch;   /* as in push_call: an ordinary call of the scratch region */
		i = 0;
		c->slot = 0;
	} else {
		c->slot = -(i + 2);
		c->start = sp_mem_open();
		r->buf.values[i] = sp_mem_allocated();
	}
	c->region = r;
	c->gen = r->gen;
	if (lanes)
		r->buf.lanes[i] = lane;
	r->buf.ends[i] = SP_NO_TIME;
	r->buf.starts[i] = sp_clock_ns();
}

/* --nvtx: a call starts, its range pushed on the thread first (popped by
 * end_mem after its end). */
static __attribute__((noinline)) void push_nvtx(struct call_stack *s, RegionObject *r, const void *frame,
						int lanes)
{
	int32_t lane = lanes ? sp_current_lane() : 0;
	if (!lanes && sp_mode_check_thread()) {   /* lanes on just now (as in push_call) */
		push_nvtx(s, r, frame, 1);
		return;
	}
	sp_nvtx_push(r->nvtx_name);
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (__builtin_expect(i < 0, 0)) {
		r = &scratch;   /* as in push_call */
		i = 0;
	}
	struct open_call *c = ++s->top;
	c->frame = frame;
	c->region = r;
	c->slot = -(i + 2);
	c->start = NVTX_CALL;
	c->gen = r->gen;
	if (lanes)
		r->buf.lanes[i] = lane;
	r->buf.ends[i] = SP_NO_TIME;
	r->buf.starts[i] = sp_clock_ns();
}

static void push_call_lanes(struct call_stack *s, RegionObject *r, const void *frame);

/* A traced call starts: a slot in its region, the start time. Inlined in
 * the hook, where `lanes` is a constant on 3.11. */
static inline __attribute__((always_inline)) void push_call(struct call_stack *s, RegionObject *r,
							     const void *frame, int lanes)
{
	if (__builtin_expect(s->top == s->end, 0) && stack_grow(s) != 0) {
		r->buf.dropped++;
		return;
	}
	/* Aggregation mode (--aggregate): calls count in the call tree of
	 * aggregate.c, as decorated functions do, and keep no events; the
	 * memory mode (sp_memory.h): each call's allocations too; --nvtx:
	 * each call an NVTX range (sp_nvtx.h). */
	if (__builtin_expect(sp_mode.hook_special, 0)) {
		if (sp_mode.aggregate)
			push_agg(s, r, frame);
		else if (sp_mode.memory)
			push_mem(s, r, frame, lanes);
		else
			push_nvtx(s, r, frame, lanes);
		return;
	}
	/* The lane first (as in pf_record): starts stay in slot order. */
	int32_t lane = lanes ? sp_current_lane() : 0;
	/* Another thread than lane 0's turns the lanes on (in every thread's
	 * hook), and this call has its lane. */
	if (!lanes && sp_mode_check_thread()) {
		push_call_lanes(s, r, frame);
		return;
	}
	ptrdiff_t i = sp_buf_reserve(&r->buf);
	if (__builtin_expect(i < 0, 0)) {
		/* Out of memory (counted in dropped): the call goes to a
		 * scratch slot, so the return path needs no check. */
		r = &scratch;
		i = 0;
	}
	struct open_call *c = ++s->top;
	c->frame = frame;
	c->region = r;
	c->slot = i;
	c->gen = r->gen;
	if (lanes)
		r->buf.lanes[i] = lane;
	/* The end is written at the return, or by sp_tracer_stop_all; until
	 * then the slot says it is open (a stream's hand-over, spill.c, reads
	 * it so). */
	r->buf.ends[i] = SP_NO_TIME;
	r->buf.starts[i] = sp_clock_ns();
}

static __attribute__((noinline)) void push_call_lanes(struct call_stack *s, RegionObject *r, const void *frame)
{
	push_call(s, r, frame, 1);
}

/* A call returns: when the open call on top is this frame's, its end time.
 * Untraced frames and frames that were running before the hook started
 * have no entry. No lookup on this path. Returns 1 when it was not ours. */
static inline int pop_call(struct call_stack *s, const void *frame)
{
	struct open_call *c = s->top;
	if (c->frame != frame)
		return 1;
	s->top = c - 1;
	if (__builtin_expect(c->slot < 0, 0)) {
		if (c->slot == -1)
			pop_agg(c);
		else
			end_mem(c, sp_clock_ns(), 1);
	} else {
		end_slot(c, sp_clock_ns());
	}
	return 0;
}

/* ---- The back end: one file per interpreter family, compiled here (as
 * Redis's ae.c includes ae_epoll.c or ae_kqueue.c), over the paths above.
 * Each defines the same few functions: code_cached(co) (a code object's
 * slot: its region, SKIP, TRACED_LATER (3.12+), or NULL when not classified yet), backend_init(),
 * start_every_thread(wait_for_main) (`run --recursive`), this_thread_traced(),
 * THREAD_HOOK_METHOD (its own module functions), and sp_tracer.h's
 * sp_tracer_start_thread, sp_tracer_stop_thread, sp_tracer_stop_all,
 * sp_tracer_mode and sp_tracer_lanes_on. */
#define SP_TRACER_BACKEND 1
#ifdef SP_MONITORING
#include "tracer_monitoring.c"
#else
#include "tracer_setprofile.c"
#endif
#undef SP_TRACER_BACKEND

int sp_tracer_init(void)
{
	if (extra_index >= 0)
		return 0;
	if (backend_init() < 0)
		return -1;
	extra_index = sp_code_extra_index("the profile hook");
	return extra_index < 0 ? -1 : 0;
}

int sp_tracer_start_call(void)
{
	(void)sp_current_lane();
	return sp_tracer_start_thread();
}

void sp_tracer_mark_explicit(PyObject *func)
{
	if (extra_index >= 0 && PyFunction_Check(func))
		cache_put((PyCodeObject *)PyFunction_GET_CODE(func), SKIP);
}

/* A tuple of str (folders) as a malloc'd array of malloc'd strings, their file-system bytes. */
static int str_list(PyObject *tuple, char ***out, size_t *n)
{
	Py_ssize_t len = PyTuple_GET_SIZE(tuple);
	char **v = calloc(len ? (size_t)len : 1, sizeof *v);
	if (!v) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		/* A folder's own bytes (os.fsencode), as classify() matches a
		 * code's file name: one that is not UTF-8 is a folder too. */
		PyObject *fs = PyUnicode_Check(PyTuple_GET_ITEM(tuple, i))
			? PyUnicode_EncodeFSDefault(PyTuple_GET_ITEM(tuple, i)) : NULL;
		v[i] = fs ? strdup(PyBytes_AS_STRING(fs)) : NULL;
		Py_XDECREF(fs);
		if (!v[i]) {
			for (Py_ssize_t j = 0; j < i; j++)
				free(v[j]);
			free(v);
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "filters must be tuples of str");
			return -1;
		}
	}
	*out = v;
	*n = (size_t)len;
	return 0;
}

/* A tuple of pattern specs (sp_filter.h) compiled into *v; -1 with a
 * Python exception (ValueError for a bad re: expression). */
static int patterns(PyObject *tuple, struct sp_pattern **v, size_t *n)
{
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
		PyObject *item = PyTuple_GET_ITEM(tuple, i);
		const char *u = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
		struct sp_error err = {0};
		if (!u) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "filters must be tuples of str");
			return -1;
		}
		enum sp_err rc = sp_pattern_push(v, n, u, &err);
		if (rc != SP_OK) {
			PyErr_SetString(rc == SP_ENOMEM ? PyExc_MemoryError : PyExc_ValueError, err.msg);
			return -1;
		}
	}
	return 0;
}

/* _tracer_configure(all, include, exclude, foreign, own=(), codes=None):
 * the filter for code objects not yet seen; codes: run -c's keys (a
 * frozenset, see command_codes). */
static PyObject *tr_configure(PyObject *m, PyObject *args)
{
	int all;
	PyObject *inc, *exc, *foreign, *own = NULL, *codes = NULL;
	if (!PyArg_ParseTuple(args, "pO!O!O!|O!O:_tracer_configure", &all, &PyTuple_Type, &inc,
			      &PyTuple_Type, &exc, &PyTuple_Type, &foreign, &PyTuple_Type, &own, &codes))
		return NULL;
	if (codes == Py_None)
		codes = NULL;
	if (codes && !PyFrozenSet_Check(codes)) {
		PyErr_SetString(PyExc_TypeError, "_tracer_configure: codes must be a frozenset or None");
		return NULL;
	}
	struct sp_filter f = {.all = all};
	if (patterns(inc, &f.include, &f.ninclude) != 0 || patterns(exc, &f.exclude, &f.nexclude) != 0 ||
	    str_list(foreign, &f.foreign, &f.nforeign) != 0 ||
	    (own && str_list(own, &f.own, &f.nown) != 0)) {
		sp_filter_clear(&f);
		return NULL;
	}
	sp_filter_clear(&filter);
	filter = f;
	Py_XINCREF(codes);
	Py_XSETREF(command_codes, codes);
	Py_RETURN_NONE;
}

/* _tracer_start(wait_for_main=False): `run --recursive`, from the calling
 * thread on, in every thread; with wait_for_main, the calling thread
 * records from the start of the program's main module on (code
 * "<module>" in a namespace called __main__), not what runs before it. */
static PyObject *tr_start(PyObject *m, PyObject *args)
{
	int wait = 0;
	if (!PyArg_ParseTuple(args, "|p:_tracer_start", &wait))
		return NULL;
	if (start_every_thread(wait) < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *tr_stop_all(PyObject *m, PyObject *unused)
{
	sp_tracer_stop_all();
	Py_RETURN_NONE;
}

static PyObject *tr_active(PyObject *m, PyObject *unused)
{
	return PyBool_FromLong(this_thread_traced());
}

/* _warn_hook_replaced(name, original): sys.settrace or sys.setprofile
 * under run --recursive, which says once per call what the script's own
 * hook does to the recording, then sets it. A builtin of sys (a trace
 * function sees no frame of it, nor a self). [0]: settrace, [1]: setprofile. */
static PyObject *replaced_orig[2];
static int run_tracing;   /* sp_tracer_run_tracing */

void sp_tracer_run_tracing(int on)
{
	run_tracing = on;
}

static PyObject *hook_replaced(int setprofile, PyObject *function)
{
	if (run_tracing && function != Py_None && !(setprofile && is_thread_hook(function)))
		PySys_WriteStderr("scope-profiler: warning: the script called sys.%s(); %s\n",
				  setprofile ? "setprofile" : "settrace",
				  setprofile ? "--recursive stops recording calls in this thread"
					     : "--recursive goes on, but its timings now include the trace function");
	return PyObject_CallOneArg(replaced_orig[setprofile], function);
}

static PyObject *settrace_replaced(PyObject *m, PyObject *function)
{
	return hook_replaced(0, function);
}

static PyObject *setprofile_replaced(PyObject *m, PyObject *function)
{
	return hook_replaced(1, function);
}

static PyMethodDef hook_replaced_defs[2] = {
	{"settrace", settrace_replaced, METH_O,
	 "settrace($module, function, /)\n--\n\nSet the global debug tracing function."},
	{"setprofile", setprofile_replaced, METH_O,
	 "setprofile($module, function, /)\n--\n\nSet the profiling function."},
};

static PyObject *tr_warn_hook_replaced(PyObject *m, PyObject *args)
{
	PyObject *name, *original;
	if (!PyArg_ParseTuple(args, "UO:_warn_hook_replaced", &name, &original))
		return NULL;
	int k = PyUnicode_CompareWithASCIIString(name, "setprofile") == 0;
	if (PyCFunction_Check(original) && PyCFunction_GET_FUNCTION(original) == hook_replaced_defs[k].ml_meth)
		return Py_NewRef(original);   /* replaced already (a second session) */
	PyObject *sysname = PyUnicode_FromString("sys");
	PyObject *w = sysname ? PyCFunction_NewEx(&hook_replaced_defs[k], NULL, sysname) : NULL;
	Py_XDECREF(sysname);
	if (w)
		Py_XSETREF(replaced_orig[k], Py_NewRef(original));
	return w;
}

PyMethodDef sp_tracer_methods[] = {
	{"_warn_hook_replaced", tr_warn_hook_replaced, METH_VARARGS, NULL},
	{"_tracer_configure", tr_configure, METH_VARARGS, NULL},
	{"_tracer_start", tr_start, METH_VARARGS, NULL},
	{"_tracer_stop_all", tr_stop_all, METH_NOARGS, NULL},
	{"_tracer_active", tr_active, METH_NOARGS, NULL},
	THREAD_HOOK_METHOD
	{NULL},
};
