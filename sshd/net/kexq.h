/*
 * kexq.h: a bounded first-in first-out queue of handshakes (struct
 * kex_job), safe between threads.  The main loop hands a new connection
 * to a handshake thread through one, and the thread hands it back through
 * another (kexpool.h).  A job is in at most one queue at a time, linked
 * through its own next field: pushing never allocates, so it cannot fail
 * for want of memory, only for want of room.
 */
#ifndef ATRIUMD_KEXQ_H
#define ATRIUMD_KEXQ_H

#include <libssh/libssh.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* One connection's key exchange.  Who may touch what: the main loop fills
 * ssh, deadline_ms and owner before it submits the job and reads result
 * and why after it takes the job back; between the two only the handshake
 * thread touches them (the queues' mutex orders the hand-overs).  cancel
 * is the one field both may touch at once. */
struct kex_job {
	ssh_session ssh;	/* the connection */
	long long deadline_ms;	/* give up then (time_mono_ms) */
	atomic_int cancel;	/* main loop: drop it, it is no longer wanted */
	int ready;		/* thread: the client asked for ssh-userauth */
	int result;		/* 0: ready for authentication; or -ETIMEDOUT,
				 * -ECANCELED, -ECONNRESET, -EPROTO */
	char why[160];		/* libssh's error text when it failed */
	long long start_us;	/* thread: when it took the job (phases.h) */
	long long done_us;	/* thread: when the client became ready */
	int worker;		/* which thread has it (main loop's) */
	void *owner;		/* the main loop's (its session) */
	struct kex_job *next;	/* in one queue or one thread's list */
};

struct kexq {
	pthread_mutex_t mu;
	struct kex_job *head, *tail;
	size_t len, cap;
};

/* An empty queue holding at most cap jobs.  0 or -errno. */
int kexq_init(struct kexq *q, size_t cap);
void kexq_destroy(struct kexq *q);

/* Add j at the tail.  0, or -EAGAIN when the queue holds cap jobs. */
int kexq_push(struct kexq *q, struct kex_job *j);

/* The job at the head, taken out; NULL when empty. */
struct kex_job *kexq_pop(struct kexq *q);

/* Jobs in the queue now (a hint once the call returns). */
size_t kexq_len(struct kexq *q);

#endif
