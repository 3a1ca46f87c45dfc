/* linetrace.c - `run --line-profile`: hits and time of every line of the
 * chosen functions (decorated with sp.profile, or passed as
 * region(name, functions=[...])), while the thread holds the hook (a chosen
 * function's call, or a region holding chosen functions).
 *
 * On CPython 3.11 the hook is a C trace function (PyEval_SetTrace,
 * linetrace_settrace.c), installed in a thread only while held; it turns
 * line events off in every other frame at its first event, so code called
 * from a chosen function pays only for its call events. On 3.12 and later
 * only the chosen code objects have events (sys.monitoring's
 * set_local_events, linetrace_monitoring.c), so other code pays nothing.
 * The back end is compiled here, below the frame paths. A line's time
 * runs from its line event to the next event of the same frame (the next
 * line, or the return), as line_profiler counts it, less the calls of the
 * same function made under it: a recursive call's time is on its own
 * lines, so a function's lines add up to its time counted once (as
 * cProfile's cumtime counts a recursive function). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_clock.h"
#include "sp_grow.h"
#include "sp_linetrace.h"
#include "sp_profile.h"
#include "sp_pytext.h"

#include "sp_monitor.h"

/* Line counts of one chosen function. */
struct table {
	PyCodeObject *code;            /* strong reference */
	PyObject *regions;             /* list of str: the regions that chose it, in order */
	int32_t first_line;            /* co_firstlineno */
	size_t n;                      /* lines first_line .. first_line + n - 1 */
	int64_t *hits, *time_ns;
	size_t open;                   /* its frames on the threads' stacks (under the GIL) */
};

static struct table **tables;          /* every chosen function, in order */
static size_t ntables, tables_cap;
static Py_ssize_t extra_index = -1;    /* code object -> struct table * */

/* A running frame of a chosen function and its line in progress. The frame
 * is known by identity only: the frame object under 3.11's hook, the code
 * object under sys.monitoring (a thread's frames end in the reverse order
 * of their starts). */
struct frame_state {
	const void *frame;
	struct table *t;
	ptrdiff_t last;                /* index of the line in progress, or -1 */
	int64_t last_t;
	ptrdiff_t outer;               /* the nearest frame below of the same t, or -1 */
	int64_t start_t;               /* when it started, where outer >= 0 */
};

struct frame_stack {
	struct frame_state *stack;
	size_t depth, cap;
};

static struct table *code_table(PyCodeObject *co)
{
	void *x = NULL;
	if (sp_code_get_extra((PyObject *)co, extra_index, &x) != 0) {
		PyErr_Clear();
		return NULL;
	}
	return x;
}

static __attribute__((noinline, cold)) int stack_grow(struct frame_stack *fs)
{
	return SP_GROW(&fs->stack, &fs->cap, fs->depth + 1);
}

/* A chosen function's frame starts (or resumes). */
static inline void frame_push(struct frame_stack *fs, struct table *t, const void *frame)
{
	if (fs->depth == fs->cap && stack_grow(fs) != 0)
		return;
	/* The nearest frame of the same function below, looked for only when
	 * one is open (in some thread): a helper called from deep in other
	 * chosen frames pays no scan. */
	ptrdiff_t outer = t->open ? (ptrdiff_t)fs->depth - 1 : -1;
	while (outer >= 0 && fs->stack[outer].t != t)
		outer--;
	t->open++;
	fs->stack[fs->depth++] = (struct frame_state){.frame = frame, .t = t, .last = -1,
		.outer = outer, .start_t = outer >= 0 ? sp_clock_ns() : 0};
}

/* A line event of frame, at line `line`. */
static inline void frame_line(struct frame_stack *fs, const void *frame, long line)
{
	int64_t now = sp_clock_ns();
	if (!fs->depth || fs->stack[fs->depth - 1].frame != frame)
		return;
	struct frame_state *f = &fs->stack[fs->depth - 1];
	struct table *t = f->t;
	if (f->last >= 0)
		t->time_ns[f->last] += now - f->last_t;
	ptrdiff_t i = (ptrdiff_t)line - t->first_line;
	if (i >= 0 && (size_t)i < t->n) {
		t->hits[i]++;
		f->last = i;
	} else {
		f->last = -1;
	}
	/* The next line's time starts after this bookkeeping. */
	f->last_t = sp_clock_ns();
}

/* The frame returns, yields or unwinds: its line in progress ends. */
static inline void frame_pop(struct frame_stack *fs, const void *frame)
{
	int64_t now = sp_clock_ns();
	if (!fs->depth || fs->stack[fs->depth - 1].frame != frame)
		return;
	struct frame_state *f = &fs->stack[--fs->depth];
	f->t->open--;
	if (f->last >= 0)
		f->t->time_ns[f->last] += now - f->last_t;
	/* A call of the same function under one of its lines: that line's
	 * time leaves it out (its own lines hold it). */
	if (f->outer >= 0)
		fs->stack[f->outer].last_t += now - f->start_t;
}

/* How many holds the calling thread has on the hook. */
static _Thread_local int holds;

/* ---- The back end: one file per interpreter family, compiled here (as
 * Redis's ae.c includes ae_epoll.c or ae_kqueue.c), over the frame paths
 * above. Each defines backend_init(), backend_choose(co) (a code object
 * chosen: its line events on) and sp_linetrace.h's sp_linetrace_hold and
 * sp_linetrace_release. */
#define SP_LINETRACE_BACKEND 1
#ifdef SP_MONITORING
#include "linetrace_monitoring.c"
#else
#include "linetrace_settrace.c"
#endif
#undef SP_LINETRACE_BACKEND

int sp_linetrace_init(void)
{
	if (extra_index >= 0)
		return 0;
	if (backend_init() < 0)
		return -1;
	extra_index = sp_code_extra_index("line timing");
	return extra_index < 0 ? -1 : 0;
}

/* The last line number of a code object, from co_lines(); -1 with an
 * exception on failure. */
static long last_line(PyCodeObject *co)
{
	PyObject *it = PyObject_CallMethod((PyObject *)co, "co_lines", NULL);
	if (!it)
		return -1;
	PyObject *iter = PyObject_GetIter(it), *item;
	Py_DECREF(it);
	if (!iter)
		return -1;
	long last = co->co_firstlineno;
	while ((item = PyIter_Next(iter))) {
		PyObject *line = PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3
			? PyTuple_GET_ITEM(item, 2) : NULL;
		if (line && PyLong_Check(line)) {
			long l = PyLong_AsLong(line);
			if (l > last)
				last = l;
		}
		Py_DECREF(item);
	}
	Py_DECREF(iter);
	return PyErr_Occurred() ? -1 : last;
}

int sp_linetrace_choose(PyObject *func, PyObject *region)
{
	/* A bound method (an instance's, or a classmethod's through its
	 * class) and a staticmethod or classmethod object: their function's
	 * lines, as line_profiler takes them. */
	for (int i = 0; i < 2 && !PyFunction_Check(func); i++) {
		if (PyMethod_Check(func)) {
			func = PyMethod_GET_FUNCTION(func);
		} else if (Py_IS_TYPE(func, &PyStaticMethod_Type) || Py_IS_TYPE(func, &PyClassMethod_Type)) {
			/* borrowed: the descriptor, which the caller holds, holds it */
			PyObject *inner = PyObject_GetAttrString(func, "__func__");
			if (!inner) {
				PyErr_Clear();
				return 0;
			}
			Py_DECREF(inner);
			func = inner;
		} else {
			break;
		}
	}
	if (!PyFunction_Check(func))
		return 0;   /* builtins and callables without Python code: no lines */
	PyCodeObject *co = (PyCodeObject *)PyFunction_GET_CODE(func);
	struct table *had = code_table(co);
	if (had) {
		/* One table for the code: its lines count under any region
		 * that chose it, which its heading names (setup, solve). */
		int in = PySequence_Contains(had->regions, region);
		return in < 0 ? -1 : in ? 0 : PyList_Append(had->regions, region);
	}
	long last = last_line(co);
	if (last < 0)
		return -1;
	if (SP_GROW(&tables, &tables_cap, ntables + 1) != 0) {
		PyErr_NoMemory();
		return -1;
	}
	struct table *t = PyMem_Calloc(1, sizeof *t);
	size_t n = (size_t)(last - co->co_firstlineno + 1);
	if (t) {
		t->hits = PyMem_Calloc(n, sizeof *t->hits);
		t->time_ns = PyMem_Calloc(n, sizeof *t->time_ns);
	}
	if (!t || !t->hits || !t->time_ns) {
		if (t) {
			PyMem_Free(t->hits);
			PyMem_Free(t->time_ns);
		}
		PyMem_Free(t);
		PyErr_NoMemory();
		return -1;
	}
	t->code = (PyCodeObject *)Py_NewRef((PyObject *)co);
	t->regions = PyList_New(1);
	if (t->regions)
		PyList_SET_ITEM(t->regions, 0, Py_NewRef(region));
	t->first_line = co->co_firstlineno;
	t->n = n;
	if (!t->regions || backend_choose(co) != 0 || sp_code_set_extra((PyObject *)co, extra_index, t) != 0) {
		Py_DECREF(t->code);
		Py_XDECREF(t->regions);
		PyMem_Free(t->hits);
		PyMem_Free(t->time_ns);
		PyMem_Free(t);
		return -1;
	}
	tables[ntables++] = t;
	return 0;
}

void sp_linetrace_reset(void)
{
	for (size_t i = 0; i < ntables; i++) {
		memset(tables[i]->hits, 0, tables[i]->n * sizeof *tables[i]->hits);
		memset(tables[i]->time_ns, 0, tables[i]->n * sizeof *tables[i]->time_ns);
	}
}

static char *dup_str(PyObject *s)
{
	char *d = s && PyUnicode_Check(s) ? sp_text_dup(s) : NULL;
	PyErr_Clear();
	return d ? d : strdup("");
}

/* Whether a line (up to its end) holds a coding declaration naming anything
 * but UTF-8 (PEP 263: "#", then "coding" and ":" or "=", then the name). */
static int other_coding(const char *p, const char *end)
{
	const char *hash = memchr(p, '#', (size_t)(end - p));
	if (!hash)
		return 0;
	for (const char *c = hash; c + 7 <= end; c++) {
		if (memcmp(c, "coding", 6) != 0 || (c[6] != ':' && c[6] != '='))
			continue;
		const char *n = c + 7;
		while (n < end && (*n == ' ' || *n == '\t'))
			n++;
		char name[16] = "";
		size_t k = 0;
		for (; n < end && k < sizeof name - 1 && (isalnum((unsigned char)*n) || strchr("-_.", *n)); n++)
			name[k++] = *n == '_' ? '-' : (char)tolower((unsigned char)*n);
		name[k] = '\0';
		return !(strcmp(name, "utf-8") == 0 || strcmp(name, "utf8") == 0 ||
			 strncmp(name, "utf-8-", 6) == 0);
	}
	return 0;
}

/* The last source file read for the line tables (sp_linetrace_collect
 * reads each once, however many of its functions were timed): its text
 * after any BOM, or NULL when it is not plain enough to be sure of (see
 * source_load). */
static struct {
	PyObject *filename;            /* the code objects' co_filename */
	char *buf;
	const char *text, *end;
} src;

static void source_forget(void)
{
	Py_CLEAR(src.filename);
	free(src.buf);
	src.buf = NULL;
	src.text = src.end = NULL;
}

/* Reads filename into src unless it is there already. The text is kept
 * only when it is plain UTF-8 as Python reads it: readable, at most 16 MiB,
 * valid UTF-8, no other coding declared, no CR without LF. */
static void source_load(PyObject *filename)
{
	if (src.filename && PyUnicode_Compare(src.filename, filename) == 0)
		return;
	PyErr_Clear();
	source_forget();
	src.filename = Py_NewRef(filename);
	PyObject *path = PyUnicode_Check(filename) ? PyUnicode_EncodeFSDefault(filename) : NULL;
	FILE *f = path ? fopen(PyBytes_AS_STRING(path), "rb") : NULL;
	Py_XDECREF(path);
	PyErr_Clear();
	if (!f)
		return;
	char *buf = NULL;
	size_t len = 0;
	long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
	if (size >= 0 && size <= (16L << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1)))
		len = fread(buf, 1, (size_t)size, f);
	fclose(f);
	if (!buf || len != (size_t)size) {
		free(buf);
		return;
	}
	buf[len] = '\0';
	const char *p = buf, *end = buf + len;
	if (len >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	int plain = 1;
	for (const char *cr = p; plain && (cr = memchr(cr, '\r', (size_t)(end - cr))); cr++)
		plain = cr + 1 < end && cr[1] == '\n';
	/* The declaration counts on the first two lines. */
	const char *eol1 = memchr(p, '\n', (size_t)(end - p)), *l2 = eol1 ? eol1 + 1 : end;
	const char *eol2 = l2 < end ? memchr(l2, '\n', (size_t)(end - l2)) : NULL;
	if (plain && (other_coding(p, eol1 ? eol1 : end) || other_coding(l2, eol2 ? eol2 : end)))
		plain = 0;
	PyObject *text = plain ? PyUnicode_DecodeUTF8(p, end - p, NULL) : NULL;
	if (!text) {
		PyErr_Clear();
		free(buf);
		return;
	}
	Py_DECREF(text);
	src.buf = buf;
	src.text = p;
	src.end = end;
}

/* lt's source lines read straight from the file, as linecache gives them,
 * without importing linecache (it brings tokenize, re and more: ~15 M
 * instructions at the end of a line-timing run). 0 when done; 1 when the
 * file is not plain enough to be sure (source_load), and linecache
 * decides; -1 out of memory. */
static int source_from_file(struct sp_line_table *lt, PyObject *filename)
{
	source_load(filename);
	if (!src.text)
		return 1;
	const char *p = src.text, *end = src.end;
	size_t line = 1;
	for (size_t i = 0; i < lt->n; i++) {
		size_t want = (size_t)lt->first_line + i;
		while (line < want && p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			p = nl ? nl + 1 : end;
			line++;
		}
		size_t n = line == want && p < end ? strcspn(p, "\r\n") : 0;
		if (!(lt->source[i] = strndup(line == want ? p : "", n)))
			return -1;
	}
	return 0;
}

/* The source lines of a table, "" where unknown: from linecache when the
 * script has imported it (it may hold lines of code without a file), else
 * from the file when it is plain UTF-8, else from linecache. */
static int fill_source(struct sp_line_table *lt, PyObject *filename)
{
	lt->source = calloc(lt->n ? lt->n : 1, sizeof *lt->source);
	if (!lt->source)
		return -1;
	PyObject *name = PyUnicode_FromString("linecache");
	PyObject *linecache = name ? PyImport_GetModule(name) : NULL;
	Py_XDECREF(name);
	PyErr_Clear();
	if (!linecache) {
		int rc = source_from_file(lt, filename);
		if (rc <= 0)
			return rc;
		linecache = PyImport_ImportModule("linecache");
	}
	PyObject *lines = linecache ? PyObject_CallMethod(linecache, "getlines", "O", filename) : NULL;
	Py_XDECREF(linecache);
	if (!lines || !PyList_Check(lines))
		PyErr_Clear();
	for (size_t i = 0; i < lt->n; i++) {
		Py_ssize_t k = (Py_ssize_t)lt->first_line - 1 + (Py_ssize_t)i;
		PyObject *line = lines && PyList_Check(lines) && k >= 0 && k < PyList_GET_SIZE(lines)
			? PyList_GET_ITEM(lines, k) : NULL;
		char *s = dup_str(line);
		if (!s) {
			Py_XDECREF(lines);
			return -1;
		}
		s[strcspn(s, "\r\n")] = '\0';
		lt->source[i] = s;
	}
	Py_XDECREF(lines);
	return 0;
}

/* Whether table t is collected: it has hits, and only (a region's name,
 * or NULL: any) chose it; -1 with an exception set. */
static int collected(const struct table *t, PyObject *only)
{
	int any = 0;
	for (size_t j = 0; j < t->n && !any; j++)
		any = t->hits[j] != 0;
	return !any ? 0 : only ? PySequence_Contains(t->regions, only) : 1;
}

int sp_linetrace_collect(struct sp_rank *rk, PyObject *only)
{
	/* The tables are taken now: filling them runs Python (linecache),
	 * where another thread may give a table its first hits. */
	struct table **take = malloc((ntables ? ntables : 1) * sizeof *take);
	size_t used = 0;
	if (!take) {
		PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < ntables; i++) {
		int c = collected(tables[i], only);
		if (c < 0) {
			free(take);
			return -1;
		}
		if (c)
			take[used++] = tables[i];
	}
	if (!used) {
		free(take);
		return 0;
	}
	rk->lines = calloc(used, sizeof *rk->lines);
	PyObject *sep = rk->lines ? PyUnicode_FromString(", ") : NULL;
	if (!sep) {
		free(take);
		if (!PyErr_Occurred())
			PyErr_NoMemory();
		return -1;
	}
	for (size_t i = 0; i < used; i++) {
		const struct table *t = take[i];
		struct sp_line_table *lt = &rk->lines[rk->nlines++];
		PyObject *label = PyUnicode_Join(sep, t->regions);
		lt->function = dup_str(t->code->co_qualname);
		lt->region = label ? dup_str(label) : NULL;
		Py_XDECREF(label);
		lt->filename = dup_str(t->code->co_filename);
		lt->first_line = t->first_line;
		lt->n = t->n;
		lt->hits = malloc(t->n * sizeof *lt->hits);
		lt->time_ns = malloc(t->n * sizeof *lt->time_ns);
		if (!lt->function || !lt->region || !lt->filename || !lt->hits || !lt->time_ns ||
		    fill_source(lt, t->code->co_filename) != 0) {
			source_forget();
			Py_DECREF(sep);
			free(take);
			if (!PyErr_Occurred())
				PyErr_NoMemory();
			return -1;
		}
		memcpy(lt->hits, t->hits, t->n * sizeof *lt->hits);
		memcpy(lt->time_ns, t->time_ns, t->n * sizeof *lt->time_ns);
	}
	free(take);
	Py_DECREF(sep);
	source_forget();
	return 0;
}

/* A generator (or coroutine) of a chosen function: its frame runs at each
 * next()/send()/throw(), outside the call that created it, so each of
 * those holds the hook. A coroutine's wrapper is also awaitable (asyncio
 * drives it with send(), an await with next()). */
typedef struct {
	PyObject_HEAD
	PyObject *gen;
} LineGen;

static PyTypeObject LineGenType;

static void lg_dealloc(PyObject *self)
{
	PyObject_GC_UnTrack(self);
	Py_CLEAR(((LineGen *)self)->gen);
	PyObject_GC_Del(self);
}

static int lg_traverse(PyObject *self, visitproc visit, void *arg)
{
	Py_VISIT(((LineGen *)self)->gen);
	return 0;
}

static PyObject *lg_iternext(PyObject *self)
{
	if (sp_linetrace_hold() != 0)
		return NULL;
	/* send(None), which generators and coroutines both take; a return
	 * value travels in StopIteration, as an await needs it. */
	PyObject *res = NULL;
	PySendResult how = PyIter_Send(((LineGen *)self)->gen, Py_None, &res);
	sp_linetrace_release();
	if (how == PYGEN_NEXT)
		return res;
	if (how == PYGEN_RETURN) {
		if (res != Py_None) {
			PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, res);
			if (stop) {
				PyErr_SetObject(PyExc_StopIteration, stop);
				Py_DECREF(stop);
			}
		}
		Py_DECREF(res);
	}
	return NULL;
}

/* send/throw/close: the generator's own method, under a hold. */
static PyObject *lg_forward(PyObject *self, const char *method, PyObject *args)
{
	PyObject *fn = PyObject_GetAttrString(((LineGen *)self)->gen, method);
	if (!fn)
		return NULL;
	if (sp_linetrace_hold() != 0) {
		Py_DECREF(fn);
		return NULL;
	}
	PyObject *r = PyObject_Call(fn, args, NULL);
	sp_linetrace_release();
	Py_DECREF(fn);
	return r;
}

static PyObject *lg_send(PyObject *self, PyObject *args)
{
	return lg_forward(self, "send", args);
}

static PyObject *lg_throw(PyObject *self, PyObject *args)
{
	return lg_forward(self, "throw", args);
}

static PyObject *lg_close(PyObject *self, PyObject *args)
{
	return lg_forward(self, "close", args);
}

/* gi_frame, gi_running, __name__, ...: the generator's. */
static PyObject *lg_getattro(PyObject *self, PyObject *name)
{
	PyObject *v = PyObject_GenericGetAttr(self, name);
	if (v || !PyErr_ExceptionMatches(PyExc_AttributeError))
		return v;
	PyErr_Clear();
	return PyObject_GetAttr(((LineGen *)self)->gen, name);
}

static PyMethodDef lg_methods[] = {
	{"send", lg_send, METH_VARARGS, NULL},
	{"throw", lg_throw, METH_VARARGS, NULL},
	{"close", lg_close, METH_VARARGS, NULL},
	{NULL},
};

static PyObject *lg_await(PyObject *self)
{
	return Py_NewRef(self);
}

static PyAsyncMethods lg_async = {.am_await = lg_await};

static PyTypeObject LineCoroType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._LineTimedCoroutine",
	.tp_basicsize = sizeof(LineGen),
	.tp_dealloc = lg_dealloc,
	.tp_as_async = &lg_async,
	.tp_getattro = lg_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = lg_traverse,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = lg_iternext,
	.tp_methods = lg_methods,
};

static PyTypeObject LineGenType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "scope_profiler._LineTimedGenerator",
	.tp_basicsize = sizeof(LineGen),
	.tp_dealloc = lg_dealloc,
	.tp_getattro = lg_getattro,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = lg_traverse,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = lg_iternext,
	.tp_methods = lg_methods,
};

/* A LineGen of type over it (its reference taken); NULL in, NULL out. */
static PyObject *line_gen_new(PyTypeObject *type, PyObject *it)
{
	if (!it || PyType_Ready(type) < 0) {
		Py_XDECREF(it);
		return NULL;
	}
	LineGen *lg = PyObject_GC_New(LineGen, type);
	if (!lg) {
		Py_DECREF(it);
		return NULL;
	}
	lg->gen = it;
	PyObject_GC_Track(lg);
	return (PyObject *)lg;
}

PyObject *sp_linetrace_wrap_steps(PyObject *it)
{
	return line_gen_new(&LineCoroType, it);
}

PyObject *sp_linetrace_wrap_result(PyObject *res)
{
	if (!res || !(PyGen_CheckExact(res) || PyCoro_CheckExact(res)))
		return res;
	/* Only a generator whose own lines are timed: a function that returns
	 * another's generator hands it back as it is (inspect.isgenerator). */
	PyObject *co = PyObject_GetAttrString(res, PyCoro_CheckExact(res) ? "cr_code" : "gi_code");
	int chosen = co && PyCode_Check(co) && code_table((PyCodeObject *)co);
	Py_XDECREF(co);
	if (!co)
		PyErr_Clear();
	if (!chosen)
		return res;
	return line_gen_new(PyCoro_CheckExact(res) ? &LineCoroType : &LineGenType, res);
}
