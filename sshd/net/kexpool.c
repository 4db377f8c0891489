/*
 * kexpool.c: the handshake threads (kexpool.h).
 *
 * Each thread runs its own ssh_event over the connections it was given,
 * non-blocking: an idle connection costs it nothing, and the ECDH and
 * host key signature of one client run between the packets of the others.
 * After each poll it starts what is in its inbox and hands back what is
 * done: ready (the client asked for ssh-userauth), closed, cancelled or
 * past its deadline.  Until then the only callback on a session is
 * kex_message_cb, which looks at nothing but its own job.
 *
 * The threads are made after the process dropped its privileges and
 * loaded its seccomp filter, so they inherit both; the filter allows
 * clone for threads only (privdrop_seccomp.c).
 */
#include "kexpool.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <libssh/server.h>

#include "libssh_compat.h"
#include "log.h"
#include "phases.h"
#include "util.h"

/* Add one to an eventfd (it cannot overflow: it is read on every wake). */
static void
kex_signal(int fd)
{
	uint64_t one = 1;
	ssize_t r;

	do {
		r = write(fd, &one, sizeof(one));
	} while (r < 0 && errno == EINTR);
}

/* Read an eventfd back to zero. */
static void
kex_drain(int fd)
{
	uint64_t v;
	ssize_t r;

	do {
		r = read(fd, &v, sizeof(v));
	} while (r < 0 && errno == EINTR);
}

/* The inbox's eventfd: the loop wakes, kex_worker_take does the rest. */
static int
kex_wake_cb(socket_t fd, int revents, void *ud)
{
	(void)revents; (void)ud;
	kex_drain(fd);
	return 0;
}

/* The only message a client sends once its key exchange is done and
 * before it authenticates is the ssh-userauth service request: seeing it
 * is the sign that the job is ready.  The default reply accepts that
 * service and refuses anything else. */
static int
kex_message_cb(ssh_session ssh, ssh_message msg, void *ud)
{
	struct kex_job *j = ud;
	const char *service;

	(void)ssh;
	if (ssh_message_type(msg) == SSH_REQUEST_SERVICE &&
	    (service = ssh_message_service_service(msg)) &&
	    strcmp(service, "ssh-userauth") == 0 && !j->ready) {
		j->ready = 1;
		j->done_us = phases_now_us();
	}
	return 1;
}

/* j back to the main loop with result; its session leaves ev first. */
static void
kex_hand_back(struct kex_worker *w, struct kex_job *j, int result)
{
	struct kexpool *p = w->pool;

	ssh_event_remove_session(w->ev, j->ssh);
	ssh_set_message_callback(j->ssh, NULL, NULL);
	j->result = result;
	j->why[0] = '\0';
	if (result == -EPROTO || result == -ECONNRESET)
		snprintf(j->why, sizeof(j->why), "%s", ssh_get_error(j->ssh));
	/* Never full: the main loop submits no more than the pool holds. */
	kexq_push(&p->done, j);
	kex_signal(p->done_fd);
}

/* Start j's key exchange (the banner goes out) and keep it in *mine. */
static void
kex_begin(struct kex_worker *w, struct kex_job *j, struct kex_job **mine)
{
	j->start_us = phases_now_us();
	ssh_set_message_callback(j->ssh, kex_message_cb, j);
	if (ssh_handle_key_exchange(j->ssh) == SSH_ERROR ||
	    ssh_event_add_session(w->ev, j->ssh) != SSH_OK) {
		kex_hand_back(w, j, -EPROTO);
		return;
	}
	j->next = *mine;
	*mine = j;
}

/* What became of j: 1 while still going, else its result. */
static int
kex_outcome(struct kex_job *j, long long now, int stopping)
{
	if (stopping || atomic_load(&j->cancel))
		return -ECANCELED;
	if (ssh_get_status(j->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR))
		return -ECONNRESET;
	if (j->ready)
		return 0;
	if (now >= j->deadline_ms)
		return -ETIMEDOUT;
	return 1;
}

/* Hand back every job of *mine that is done (all of them when stopping). */
static void
kex_sweep(struct kex_worker *w, struct kex_job **mine, int stopping)
{
	long long now = time_mono_ms();

	for (struct kex_job **pp = mine; *pp;) {
		struct kex_job *j = *pp;
		int r = kex_outcome(j, now, stopping);

		if (r <= 0) {
			*pp = j->next;
			kex_hand_back(w, j, r);
		} else {
			compat_quickack(ssh_get_fd(j->ssh));
			pp = &j->next;
		}
	}
}

/* A thread's life: poll its connections, start new ones, hand back. */
static void *
kex_worker_main(void *arg)
{
	struct kex_worker *w = arg;
	struct kex_job *mine = NULL, *j;

	/* This thread only (Linux: PRIO_PROCESS 0 is the calling thread). */
	if (setpriority(PRIO_PROCESS, 0, KEXPOOL_NICE) < 0)
		log_warn("handshake thread: cannot lower its priority: %s",
		    strerror(errno));
	for (;;) {
		int stopping = atomic_load(&w->pool->stop);

		while ((j = kexq_pop(&w->inbox)))
			kex_begin(w, j, &mine);
		kex_sweep(w, &mine, stopping);
		if (stopping)
			return NULL;
		/* Deadlines only while handshakes are held: an idle thread
		 * sleeps until its eventfd (a new job, a cancel, stop). */
		ssh_event_dopoll(w->ev, mine ? KEXPOOL_TICK_MS : -1);
	}
}

/* The thread's queue, eventfd and event, then the thread.  0 or -errno. */
static int
kex_worker_start(struct kexpool *p, struct kex_worker *w)
{
	int r;

	w->pool = p;
	if ((w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		return -errno;
	if ((r = kexq_init(&w->inbox, KEXPOOL_PER_THREAD)) < 0) {
		close(w->wake_fd);
		w->wake_fd = -1;	/* kexpool_free: no inbox either */
		return r;
	}
	if (!(w->ev = ssh_event_new()) ||
	    ssh_event_add_fd(w->ev, w->wake_fd, POLLIN, kex_wake_cb, w) != SSH_OK)
		return -ENOMEM;
	if ((r = pthread_create(&w->thread, NULL, kex_worker_main, w)) != 0)
		return -r;
	w->started = 1;
	pthread_setname_np(w->thread, "atriumd-kex");	/* for ps; may fail */
	return 0;
}

/* Threads for the CPUs this process may run on, within the bounds. */
static int
kex_threads_wanted(void)
{
	cpu_set_t set;
	int n = 2;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (n < 1)
		n = 1;
	return n > KEXPOOL_MAX_THREADS ? KEXPOOL_MAX_THREADS : n;
}

/* See kexpool.h. */
int
kexpool_start(struct kexpool *p, int n)
{
	int r;

	memset(p, 0, sizeof(*p));
	atomic_init(&p->stop, 0);
	p->n = n > 0 ? n : kex_threads_wanted();
	if ((p->done_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		r = -errno;
		log_error("handshake threads: eventfd: %s", strerror(-r));
		return r;
	}
	if ((r = kexq_init(&p->done, (size_t)p->n * KEXPOOL_PER_THREAD)) < 0 ||
	    !(p->w = calloc((size_t)p->n, sizeof(*p->w)))) {
		if (r == 0)
			kexq_destroy(&p->done);
		close(p->done_fd);
		log_error("handshake threads: out of memory");
		return r < 0 ? r : -ENOMEM;
	}
	for (int i = 0; i < p->n; i++)
		p->w[i].wake_fd = -1;
	for (int i = 0; i < p->n; i++) {
		if ((r = kex_worker_start(p, &p->w[i])) < 0) {
			log_error("cannot start handshake thread %d: %s", i + 1,
			    strerror(-r));
			kexpool_stop(p);
			kexpool_free(p);
			return r;
		}
	}
	return 0;
}

/* See kexpool.h. */
int
kexpool_fd(const struct kexpool *p)
{
	return p->done_fd;
}

/* See kexpool.h. */
int
kexpool_submit(struct kexpool *p, struct kex_job *j)
{
	struct kex_worker *best = NULL;

	for (int i = 0; i < p->n; i++) {
		struct kex_worker *w = &p->w[i];

		if (w->load < KEXPOOL_PER_THREAD && (!best || w->load < best->load))
			best = w;
	}
	if (!best)
		return -EAGAIN;
	j->worker = (int)(best - p->w);
	j->ready = 0;
	j->start_us = j->done_us = 0;
	j->result = 0;
	j->why[0] = '\0';
	atomic_store(&j->cancel, 0);
	if (kexq_push(&best->inbox, j) < 0)
		return -EAGAIN;
	best->load++;
	kex_signal(best->wake_fd);
	return 0;
}

/* See kexpool.h. */
void
kexpool_cancel(struct kexpool *p, struct kex_job *j)
{
	if (atomic_exchange(&j->cancel, 1) == 0)
		kex_signal(p->w[j->worker].wake_fd);
}

/* See kexpool.h. */
void
kexpool_ack(struct kexpool *p)
{
	kex_drain(p->done_fd);
}

/* See kexpool.h. */
struct kex_job *
kexpool_collect(struct kexpool *p)
{
	struct kex_job *j;

	if (!p->w || !(j = kexq_pop(&p->done)))
		return NULL;
	p->w[j->worker].load--;
	return j;
}

/* See kexpool.h. */
void
kexpool_stop(struct kexpool *p)
{
	if (!p->w)
		return;
	atomic_store(&p->stop, 1);
	for (int i = 0; i < p->n; i++) {
		struct kex_worker *w = &p->w[i];

		if (!w->started)
			continue;
		kex_signal(w->wake_fd);
		pthread_join(w->thread, NULL);
		w->started = 0;
	}
}

/* See kexpool.h. */
void
kexpool_free(struct kexpool *p)
{
	for (int i = 0; p->w && i < p->n; i++) {
		struct kex_worker *w = &p->w[i];

		if (w->ev) {
			ssh_event_remove_fd(w->ev, w->wake_fd);
			ssh_event_free(w->ev);
		}
		if (w->wake_fd >= 0) {
			kexq_destroy(&w->inbox);
			close(w->wake_fd);
		}
	}
	if (p->w)
		kexq_destroy(&p->done);
	if (p->w && p->done_fd >= 0)
		close(p->done_fd);
	free(p->w);
	memset(p, 0, sizeof(*p));
	p->done_fd = -1;
}
