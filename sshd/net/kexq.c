/*
 * kexq.c: the bounded queue of handshakes (kexq.h).  One mutex, held only
 * to link or unlink: nothing is called with it held.
 */
#include "kexq.h"

#include <errno.h>

/* See kexq.h. */
int
kexq_init(struct kexq *q, size_t cap)
{
	int r = pthread_mutex_init(&q->mu, NULL);

	q->head = q->tail = NULL;
	q->len = 0;
	q->cap = cap;
	return -r;
}

/* See kexq.h. */
void
kexq_destroy(struct kexq *q)
{
	pthread_mutex_destroy(&q->mu);
}

/* See kexq.h. */
int
kexq_push(struct kexq *q, struct kex_job *j)
{
	int r = 0;

	j->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->len >= q->cap) {
		r = -EAGAIN;
	} else {
		if (q->tail)
			q->tail->next = j;
		else
			q->head = j;
		q->tail = j;
		q->len++;
	}
	pthread_mutex_unlock(&q->mu);
	return r;
}

/* See kexq.h. */
struct kex_job *
kexq_pop(struct kexq *q)
{
	struct kex_job *j;

	pthread_mutex_lock(&q->mu);
	if ((j = q->head)) {
		q->head = j->next;
		if (!q->head)
			q->tail = NULL;
		q->len--;
		j->next = NULL;
	}
	pthread_mutex_unlock(&q->mu);
	return j;
}

/* See kexq.h. */
size_t
kexq_len(struct kexq *q)
{
	size_t n;

	pthread_mutex_lock(&q->mu);
	n = q->len;
	pthread_mutex_unlock(&q->mu);
	return n;
}
