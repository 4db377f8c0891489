/*
 * exer.c: the random-operation exerciser's engine (exer.h says what it
 * checks).  One struct exer is one file set driven from one thread; the
 * backend owns every descriptor, mapping and process.
 */
#include "exer.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXER_CHUNK 65536u
#define EXER_PAGE 4096u
#define EXER_RECENT (sizeof(((struct exer *)0)->recent) / \
    sizeof(((struct exer *)0)->recent[0]))
/* A whole comparison of every file each this many operations. */
#define EXER_CHECK_EVERY 500

static const char *const kind_names[EXER_NKINDS] = {
	"write", "read", "mapwrite", "truncate", "open_trunc", "fallocate",
	"copy", "seek", "fsync", "reopen", "child_write", "drop_caches",
	"remount", "crash",
};

static const int default_weights[EXER_NKINDS] = {
	[EXER_WRITE] = 20, [EXER_READ] = 20, [EXER_MAPWRITE] = 4,
	[EXER_TRUNCATE] = 6, [EXER_OPEN_TRUNC] = 1, [EXER_FALLOCATE] = 5,
	[EXER_COPY] = 4, [EXER_SEEK] = 4, [EXER_FSYNC] = 3, [EXER_REOPEN] = 2,
	[EXER_CHILD_WRITE] = 2, [EXER_DROP_CACHES] = 1,
};

/* splitmix64: small, and the same sequence everywhere for a seed. */
static uint64_t
rnd(struct exer *x)
{
	uint64_t z = (x->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 when n is 0. */
static uint64_t
below(struct exer *x, uint64_t n)
{
	return n ? rnd(x) % n : 0;
}

/* The byte op no writes at pos: never 0, and another for another op. */
static unsigned char
fill_byte(unsigned long no, uint64_t pos)
{
	uint64_t h = (uint64_t)no * 0x9e3779b1u ^ pos * 0x85ebca77u;

	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return (unsigned char)(1 + h % 255);
}

/* --- the model ------------------------------------------------------------ */

/* Remember that len bytes at off changed (data, or zeros when NULL), for
 * the durability check; only while a crash can be drawn. */
static int
note_change(struct exer *x, struct exer_file *f, uint64_t off, uint64_t len,
    const unsigned char *data)
{
	struct exer_change *c;

	if (!x->weights[EXER_CRASH] || len == 0)
		return 0;
	if (f->nchanges == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		c = realloc(f->changes, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		f->changes = c;
		f->cap = cap;
	}
	c = &f->changes[f->nchanges];
	c->off = off;
	c->len = len;
	c->data = NULL;
	if (data && !(c->data = malloc(len)))
		return -ENOMEM;
	if (data)
		memcpy(c->data, data, len);
	f->nchanges++;
	return 0;
}

static void
set_size(struct exer_file *f, uint64_t size)
{
	if (size < f->size)
		memset(f->model + size, 0, f->size - size);
	f->size = size;
	if (size < f->min_size)
		f->min_size = size;
	if (size > f->max_size)
		f->max_size = size;
}

static int
model_write(struct exer *x, struct exer_file *f, uint64_t off,
    const unsigned char *data, uint64_t len)
{
	memcpy(f->model + off, data, len);
	if (off + len > f->size)
		set_size(f, off + len);
	return note_change(x, f, off, len, data);
}

static int
model_zero(struct exer *x, struct exer_file *f, uint64_t off, uint64_t len)
{
	memset(f->model + off, 0, len);
	return note_change(x, f, off, len, NULL);
}

static int
model_truncate(struct exer *x, struct exer_file *f, uint64_t size)
{
	uint64_t old = f->size;

	set_size(f, size);
	return size < old ? note_change(x, f, size, old - size, NULL) : 0;
}

/* The file was fsynced: what it holds now is what a crash must keep. */
static void
model_synced(struct exer_file *f)
{
	memcpy(f->synced, f->model, EXER_MAX_SIZE);
	f->synced_size = f->min_size = f->max_size = f->size;
	for (size_t i = 0; i < f->nchanges; i++)
		free(f->changes[i].data);
	f->nchanges = 0;
}

/* --- drawing an operation ---------------------------------------------------- */

/* An offset near a chunk's or a page's edge, or anywhere below limit. */
static uint64_t
draw_off(struct exer *x, uint64_t limit)
{
	uint64_t r = below(x, 10), off;

	if (limit == 0)
		return 0;
	if (r < 3) {
		off = below(x, EXER_MAX_SIZE / EXER_CHUNK + 1) * EXER_CHUNK;
		off = off + below(x, 600) - (off >= 300 ? 300 : 0);
	} else if (r < 5) {
		off = below(x, EXER_MAX_SIZE / EXER_PAGE + 1) * EXER_PAGE;
		off = off + below(x, 16) - (off >= 8 ? 8 : 0);
	} else {
		off = below(x, limit);
	}
	return off % limit;
}

static uint64_t
draw_len(struct exer *x, uint64_t off)
{
	uint64_t r = below(x, 20), len;

	if (r < 10)
		len = 1 + below(x, EXER_PAGE);
	else if (r < 17)
		len = 1 + below(x, EXER_CHUNK);
	else
		len = 1 + below(x, 4 * EXER_CHUNK);
	/* Only reads and seeks start past the biggest size: they get
	 * nothing, and len only has to fit the buffer. */
	if (off >= EXER_MAX_SIZE)
		return len < EXER_PAGE ? len : EXER_PAGE;
	if (off + len > EXER_MAX_SIZE)
		len = EXER_MAX_SIZE - off;
	return len;
}

static enum exer_kind
draw_kind(struct exer *x)
{
	int total = 0, r;

	for (int k = 0; k < EXER_NKINDS; k++)
		if (x->be->nvariants[k])
			total += x->weights[k];
	r = (int)below(x, (uint64_t)total);
	for (int k = 0; k < EXER_NKINDS; k++) {
		if (!x->be->nvariants[k])
			continue;
		if (r < x->weights[k])
			return (enum exer_kind)k;
		r -= x->weights[k];
	}
	return EXER_READ;
}

/* Fill in op's ranges from the model's sizes; a read when the kind has
 * nothing to act on (a mapped write of an empty file). */
static void
draw_ranges(struct exer *x, struct exer_op *op)
{
	const struct exer_file *f = &x->files[op->file];
	const struct exer_file *src;

	switch (op->kind) {
	case EXER_MAPWRITE:
		if (f->size == 0) {
			op->kind = EXER_READ;
			op->variant = 0;
			break;
		}
		op->off = below(x, f->size);
		op->len = draw_len(x, op->off);
		if (op->off + op->len > f->size)
			op->len = f->size - op->off;
		return;
	case EXER_TRUNCATE:
		op->off = below(x, 2) ? below(x, f->size + 1) :
		    draw_off(x, EXER_MAX_SIZE);
		return;
	case EXER_COPY:
		src = &x->files[op->file2];
		if (src->size == 0)
			break;
		op->off2 = below(x, src->size);
		op->len = draw_len(x, op->off2);
		if (op->off2 + op->len > src->size)
			op->len = src->size - op->off2;
		op->off = draw_off(x, EXER_MAX_SIZE - op->len + 1);
		/* The same file's ranges may not overlap (EINVAL). */
		if (op->file != op->file2 || op->off + op->len <= op->off2 ||
		    op->off2 + op->len <= op->off)
			return;
		break;
	default:
		break;
	}
	if (op->kind == EXER_COPY) {
		op->kind = EXER_READ;
		op->variant = 0;
	}
	op->off = draw_off(x, op->kind == EXER_READ || op->kind == EXER_SEEK ?
	    f->size + EXER_PAGE : EXER_MAX_SIZE);
	op->len = draw_len(x, op->off);
}

static void
draw_op(struct exer *x, struct exer_op *op)
{
	memset(op, 0, sizeof(*op));
	op->no = x->done + 1;
	op->kind = draw_kind(x);
	op->variant = (int)below(x, (uint64_t)x->be->nvariants[op->kind]);
	op->file = (int)below(x, EXER_FILES);
	op->file2 = (int)below(x, EXER_FILES);
	draw_ranges(x, op);
}

/* --- reports ---------------------------------------------------------------- */

static void
print_op(const struct exer *x, const struct exer_op *op)
{
	fprintf(stderr, "%s:   #%lu %s/%d f%d off=0x%" PRIx64 " len=0x%" PRIx64,
	    x->name, op->no, kind_names[op->kind], op->variant, op->file,
	    op->off, op->len);
	if (op->kind == EXER_COPY)
		fprintf(stderr, " from f%d off=0x%" PRIx64, op->file2, op->off2);
	fputc('\n', stderr);
}

/* Say what failed, with the seed and the operations before it. */
static int
fail(struct exer *x, const struct exer_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct exer *x, const struct exer_op *op, const char *fmt, ...)
{
	va_list ap;
	unsigned long first = x->done + 1 > EXER_RECENT ?
	    x->done + 1 - EXER_RECENT : 1;

	fprintf(stderr, "%s: FAILED at op %lu of seed %" PRIu64 ": ", x->name,
	    op ? op->no : x->done, x->seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s: the last operations:\n", x->name);
	for (unsigned long n = first; n <= x->done + (op ? 1 : 0); n++) {
		const struct exer_op *r = &x->recent[n % EXER_RECENT];
		if (r->no == n)
			print_op(x, r);
	}
	return -1;
}

/* Compare n bytes read at off of file fi with the model. */
static int
compare(struct exer *x, const struct exer_op *op, int fi, uint64_t off,
    const unsigned char *got, uint64_t n)
{
	const unsigned char *want = x->files[fi].model + off;
	uint64_t i;

	if (memcmp(got, want, n) == 0)
		return 0;
	for (i = 0; got[i] == want[i]; i++)
		;
	return fail(x, op, "f%d at 0x%" PRIx64 " read 0x%02x, expected 0x%02x "
	    "(file size 0x%" PRIx64 ")", fi, off + i, got[i], want[i],
	    x->files[fi].size);
}

/* --- applying an operation ------------------------------------------------- */

static int
do_read(struct exer *x, const struct exer_op *op)
{
	const struct exer_file *f = &x->files[op->file];
	uint64_t want = op->off >= f->size ? 0 :
	    (f->size - op->off < op->len ? f->size - op->off : op->len);
	int n = x->be->read(x->be->arg, op, x->buf, f->size);

	if (n < 0)
		return fail(x, op, "read: %s", strerror(-n));
	if ((uint64_t)n != want)
		return fail(x, op, "read %d bytes, expected %" PRIu64, n, want);
	return compare(x, op, op->file, op->off, x->buf, want);
}

static int
do_write(struct exer *x, const struct exer_op *op)
{
	struct exer_file *f = &x->files[op->file];
	int r;

	for (uint64_t i = 0; i < op->len; i++)
		x->buf[i] = fill_byte(op->no, op->off + i);
	if ((r = x->be->write(x->be->arg, op, x->buf)) < 0)
		return fail(x, op, "write: %s", strerror(-r));
	return model_write(x, f, op->off, x->buf, op->len);
}

static int
do_fallocate(struct exer *x, const struct exer_op *op)
{
	struct exer_file *f = &x->files[op->file];
	uint64_t end = op->off + op->len, in = end < f->size ? end : f->size;
	int r = x->be->fallocate(x->be->arg, op);

	if (r == -EOPNOTSUPP)
		return 0;
	if (r < 0)
		return fail(x, op, "fallocate: %s", strerror(-r));
	switch (op->variant) {
	case EXER_FALLOC_ALLOC:
		if (end > f->size)
			set_size(f, end);
		return 0;
	case EXER_FALLOC_ZERO:
		if (end > f->size)
			set_size(f, end);
		return model_zero(x, f, op->off, op->len);
	case EXER_FALLOC_PUNCH:
	case EXER_FALLOC_ZERO_KEEP:
		return op->off < in ? model_zero(x, f, op->off, in - op->off) : 0;
	default:
		return 0;
	}
}

static int
do_copy(struct exer *x, const struct exer_op *op)
{
	int r;

	memcpy(x->buf2, x->files[op->file2].model + op->off2, op->len);
	if ((r = x->be->copy(x->be->arg, op)) < 0)
		return fail(x, op, "copy_file_range: %s", strerror(-r));
	return model_write(x, &x->files[op->file], op->off, x->buf2, op->len);
}

/* SEEK_DATA must not skip data, SEEK_HOLE must not call data a hole. */
static int
do_seek(struct exer *x, const struct exer_op *op)
{
	const struct exer_file *f = &x->files[op->file];
	uint64_t at = 0, i;
	int r = x->be->seek(x->be->arg, op, &at);

	if (op->off >= f->size)
		return r == -ENXIO ? 0 :
		    fail(x, op, "seek past the end: %d, expected ENXIO", r);
	if (r == -ENXIO && op->variant == 0) {
		for (i = op->off; i < f->size && f->model[i] == 0; i++)
			;
		return i == f->size ? 0 : fail(x, op, "SEEK_DATA: ENXIO, but "
		    "data at 0x%" PRIx64, i);
	}
	if (r < 0)
		return fail(x, op, "lseek: %s", strerror(-r));
	if (at < op->off || at > f->size)
		return fail(x, op, "lseek answered 0x%" PRIx64, at);
	if (op->variant == 0) {
		for (i = op->off; i < at; i++)
			if (f->model[i])
				return fail(x, op, "SEEK_DATA to 0x%" PRIx64
				    " skipped data at 0x%" PRIx64, at, i);
		return 0;
	}
	return at == f->size || f->model[at] == 0 ? 0 :
	    fail(x, op, "SEEK_HOLE at 0x%" PRIx64 ", which holds data", at);
}

static int
do_op(struct exer *x, const struct exer_op *op)
{
	struct exer_file *f = &x->files[op->file];
	int r = 0;

	switch (op->kind) {
	case EXER_READ:
		return do_read(x, op);
	case EXER_WRITE:
	case EXER_MAPWRITE:
	case EXER_CHILD_WRITE:
		return do_write(x, op);
	case EXER_TRUNCATE:
	case EXER_OPEN_TRUNC:
		if ((r = x->be->truncate(x->be->arg, op)) < 0)
			return fail(x, op, "truncate: %s", strerror(-r));
		return model_truncate(x, f, op->kind == EXER_TRUNCATE ?
		    op->off : 0);
	case EXER_FALLOCATE:
		return do_fallocate(x, op);
	case EXER_COPY:
		return do_copy(x, op);
	case EXER_SEEK:
		return do_seek(x, op);
	case EXER_FSYNC:
		if ((r = x->be->fsync(x->be->arg, op)) < 0)
			return fail(x, op, "fsync: %s", strerror(-r));
		model_synced(f);
		return 0;
	case EXER_CRASH:
		if ((r = x->be->disturb(x->be->arg, op)) < 0)
			return fail(x, op, "crash and mount: %s", strerror(-r));
		return exer_after_crash(x);
	default:
		if ((r = x->be->disturb(x->be->arg, op)) < 0)
			return fail(x, op, "%s: %s", kind_names[op->kind],
			    strerror(-r));
		return op->kind == EXER_REMOUNT ? exer_check_all(x) : 0;
	}
}

/* --- whole files ------------------------------------------------------------ */

/* Read all of file fi (as the backend says its size is) into x->buf. */
static int
read_whole(struct exer *x, int fi, uint64_t *size)
{
	struct exer_op op = { .no = x->done, .kind = EXER_READ, .file = fi };
	int r;

	if ((r = x->be->size(x->be->arg, fi, size)) < 0)
		return fail(x, NULL, "f%d: size: %s", fi, strerror(-r));
	if (*size > EXER_MAX_SIZE)
		return fail(x, NULL, "f%d: size 0x%" PRIx64 " is past any "
		    "written", fi, *size);
	op.len = *size;
	r = *size ? x->be->read(x->be->arg, &op, x->buf, *size) : 0;
	if (r < 0 || (uint64_t)r != *size)
		return fail(x, NULL, "f%d: reading it whole: %s", fi,
		    r < 0 ? strerror(-r) : "short");
	return 0;
}

int
exer_check_all(struct exer *x)
{
	uint64_t size;

	for (int fi = 0; fi < EXER_FILES; fi++) {
		if (read_whole(x, fi, &size) < 0)
			return -1;
		if (size != x->files[fi].size)
			return fail(x, NULL, "f%d: size 0x%" PRIx64 ", expected "
			    "0x%" PRIx64, fi, size, x->files[fi].size);
		if (compare(x, NULL, fi, 0, x->buf, size) < 0)
			return -1;
	}
	return 0;
}

/* Whether byte i of f may hold b after a crash. */
static int
may_hold(const struct exer_file *f, uint64_t i, unsigned char b)
{
	if (f->synced[i] == b)
		return 1;
	for (size_t k = 0; k < f->nchanges; k++) {
		const struct exer_change *c = &f->changes[k];
		if (i >= c->off && i < c->off + c->len &&
		    (c->data ? c->data[i - c->off] : 0) == b)
			return 1;
	}
	return 0;
}

static int
check_durable(struct exer *x, int fi, uint64_t size)
{
	const struct exer_file *f = &x->files[fi];

	if (size < f->min_size || size > f->max_size)
		return fail(x, NULL, "after the crash f%d has size 0x%" PRIx64
		    "; it had 0x%" PRIx64 " at its fsync and between 0x%"
		    PRIx64 " and 0x%" PRIx64 " since", fi, size,
		    f->synced_size, f->min_size, f->max_size);
	for (uint64_t i = 0; i < size; i++)
		if (!may_hold(f, i, x->buf[i]))
			return fail(x, NULL, "after the crash f%d holds 0x%02x "
			    "at 0x%" PRIx64 ": neither its fsync's 0x%02x nor "
			    "any later write's", fi, x->buf[i], i,
			    f->synced[i]);
	return 0;
}

int
exer_after_crash(struct exer *x)
{
	uint64_t size;

	for (int fi = 0; fi < EXER_FILES; fi++) {
		struct exer_file *f = &x->files[fi];
		if (read_whole(x, fi, &size) < 0 ||
		    check_durable(x, fi, size) < 0)
			return -1;
		memset(f->model, 0, EXER_MAX_SIZE);
		memcpy(f->model, x->buf, size);
		f->size = size;
		model_synced(f);
	}
	return 0;
}

/* --- the run ---------------------------------------------------------------- */

int
exer_init(struct exer *x, uint64_t seed, unsigned long ops,
    const struct exer_backend *be, const char *name)
{
	memset(x, 0, sizeof(*x));
	x->seed = x->rng = seed;
	x->ops = ops;
	x->be = be;
	x->name = name;
	memcpy(x->weights, default_weights, sizeof(x->weights));
	x->buf = malloc(EXER_MAX_SIZE);
	x->buf2 = malloc(EXER_MAX_SIZE);
	if (!x->buf || !x->buf2)
		return -ENOMEM;
	for (int i = 0; i < EXER_FILES; i++) {
		x->files[i].model = calloc(1, EXER_MAX_SIZE);
		x->files[i].synced = calloc(1, EXER_MAX_SIZE);
		if (!x->files[i].model || !x->files[i].synced)
			return -ENOMEM;
	}
	return 0;
}

int
exer_run(struct exer *x)
{
	struct exer_op op;

	while (x->done < x->ops) {
		draw_op(x, &op);
		x->recent[op.no % EXER_RECENT] = op;
		if (do_op(x, &op) < 0)
			return -1;
		x->done = op.no;
		if (x->done % EXER_CHECK_EVERY == 0 && exer_check_all(x) < 0)
			return -1;
	}
	return exer_check_all(x);
}

void
exer_free(struct exer *x)
{
	free(x->buf);
	free(x->buf2);
	for (int i = 0; i < EXER_FILES; i++) {
		struct exer_file *f = &x->files[i];
		for (size_t k = 0; k < f->nchanges; k++)
			free(f->changes[k].data);
		free(f->changes);
		free(f->model);
		free(f->synced);
	}
}

int
exer_falloc_mode(int variant)
{
	static const int modes[EXER_FALLOC_N] = {
		[EXER_FALLOC_ALLOC] = 0,
		[EXER_FALLOC_KEEP] = FALLOC_FL_KEEP_SIZE,
		[EXER_FALLOC_PUNCH] = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		[EXER_FALLOC_ZERO] = FALLOC_FL_ZERO_RANGE,
		[EXER_FALLOC_ZERO_KEEP] = FALLOC_FL_ZERO_RANGE |
		    FALLOC_FL_KEEP_SIZE,
	};

	return modes[variant];
}

int
exer_set_weight(struct exer *x, const char *arg)
{
	const char *eq = strchr(arg, '=');

	for (int k = 0; eq && k < EXER_NKINDS; k++)
		if (strlen(kind_names[k]) == (size_t)(eq - arg) &&
		    strncmp(arg, kind_names[k], (size_t)(eq - arg)) == 0) {
			x->weights[k] = atoi(eq + 1);
			return 0;
		}
	fprintf(stderr, "%s: weight %s: not KIND=N with a known KIND\n",
	    x->name, arg);
	return -1;
}
