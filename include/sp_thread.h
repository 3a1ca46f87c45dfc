/* sp_thread.h - the profiler's own threads (the stream's writer, the
 * flush ticker) start with every signal blocked, so that a signal sent to
 * the process goes to the script's threads, as under plain python: a
 * thread of ours that took it before blocking it itself would leave the
 * main thread in signal.pause() for ever. */
#ifndef SP_THREAD_H
#define SP_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create(t, NULL, fn, arg) with the new thread's signals blocked
 * from its first instruction (the mask it inherits); 0, or an errno. */
static inline int sp_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, before;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &before);
	int e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	return e;
}

#endif
