/* nvtx_tool.c - a recording NVTX tool for the tests of run --nvtx
 * (tests/e2e/test_nvtx.py): the kind of shared library Nsight Systems
 * attaches, but one that logs. NVTX's own loader (in the profiler, from
 * NVTX3's headers) opens it from NVTX_INJECTION64_PATH at the first NVTX
 * call and calls InitializeInjectionNvtx2, which fills the CORE2 callback
 * table (domains, registered strings, push/pop, start/end). Every call is
 * appended as one line to $NVTX_TOOL_LOG:
 *
 *   domain D NAME          a domain created (D: its handle, a number)
 *   string D S NAME        a string registered in domain D (S: its handle)
 *   push TID D NAME        a range pushed on thread TID (NAME: the
 *                          registered string's, or the ASCII message)
 *   pop TID D              the thread's innermost range popped
 *   start TID D ID NAME    a range started (ID: what start returned)
 *   end TID D ID           a range ended
 *
 * Handles are small numbers given out here in order (1, 2, ...). */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

#define MAX_HANDLES 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_file;
static char *names[MAX_HANDLES];     /* handle k's name (domains and strings) */
static uintptr_t next_handle = 1;
static uint64_t next_range = 1;

static long tid(void)
{
	return (long)syscall(SYS_gettid);
}

/* A new handle named name; 0 when full. Under lock. */
static uintptr_t new_handle(const char *name)
{
	if (next_handle >= MAX_HANDLES)
		return 0;
	names[next_handle] = strdup(name ? name : "");
	return next_handle++;
}

static const char *message(const nvtxEventAttributes_t *a)
{
	if (!a)
		return "?";
	if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
		uintptr_t h = (uintptr_t)a->message.registered;
		return h && h < next_handle ? names[h] : "(unnamed)";
	}
	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii)
		return a->message.ascii;
	return "(unnamed)";
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	if (!log_file)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(log_file, fmt, ap);
	va_end(ap);
	fflush(log_file);
}

static nvtxDomainHandle_t domain_create(const char *name)
{
	pthread_mutex_lock(&lock);
	uintptr_t h = new_handle(name);
	say("domain %lu %s\n", (unsigned long)h, name);
	pthread_mutex_unlock(&lock);
	return (nvtxDomainHandle_t)h;
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char *s)
{
	pthread_mutex_lock(&lock);
	uintptr_t h = new_handle(s);
	say("string %lu %lu %s\n", (unsigned long)(uintptr_t)d, (unsigned long)h, s);
	pthread_mutex_unlock(&lock);
	return (nvtxStringHandle_t)h;
}

static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	pthread_mutex_lock(&lock);
	say("push %ld %lu %s\n", tid(), (unsigned long)(uintptr_t)d, message(a));
	pthread_mutex_unlock(&lock);
	return 0;
}

static int pop(nvtxDomainHandle_t d)
{
	pthread_mutex_lock(&lock);
	say("pop %ld %lu\n", tid(), (unsigned long)(uintptr_t)d);
	pthread_mutex_unlock(&lock);
	return 0;
}

static nvtxRangeId_t start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	pthread_mutex_lock(&lock);
	uint64_t id = next_range++;
	say("start %ld %lu %llu %s\n", tid(), (unsigned long)(uintptr_t)d, (unsigned long long)id, message(a));
	pthread_mutex_unlock(&lock);
	return id;
}

static void end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	pthread_mutex_lock(&lock);
	say("end %ld %lu %llu\n", tid(), (unsigned long)(uintptr_t)d, (unsigned long long)id);
	pthread_mutex_unlock(&lock);
}

/* Sets slot k of a module's table, when the table has it. */
static void set(NvtxFunctionTable table, unsigned int size, unsigned int k, NvtxFunctionPointer f)
{
	if (k <= size && table[k])
		*table[k] = f;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
	const char *path = getenv("NVTX_TOOL_LOG");
	log_file = path ? fopen(path, "a") : NULL;
	const NvtxExportTableCallbacks *cb = get_table(NVTX_ETID_CALLBACKS);
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb || !cb->GetModuleFunctionTable || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size))
		return 0;
	set(table, size, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)domain_create);
	set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, (NvtxFunctionPointer)register_string);
	set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)push);
	set(table, size, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)pop);
	set(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)start);
	set(table, size, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)end);
	say("init %ld\n", tid());
	return 1;
}
