/*
 * fsexer.c: the random-operation exerciser on a real mount (exer.h says
 * what it checks).  Each seed gets three new files in DIR, opened three
 * times each (two read-write descriptors and one read-only); operations go
 * through pwrite, pwritev, write, pread, preadv, shared mappings, a
 * forked process's own descriptor, ftruncate, truncate(2), open with
 * O_TRUNC, fallocate, copy_file_range, lseek SEEK_DATA/SEEK_HOLE, fsync
 * and fdatasync, with the descriptors closed and opened again, the
 * kernel's clean pages dropped, the filesystem remounted (--remount) and
 * its daemon killed (--crash, then --remount) at random points.
 *
 *   fsexer [--seed S] [--ops N] [--seconds T] [--weight KIND=W]...
 *          [--remount CMD] [--crash CMD] DIR
 *
 * With --seconds, seeds S, S+1, ... run until T seconds have passed (make
 * stress); else seed S alone.  Exit 0 when every read matched, 1 on the
 * first that did not (the seed and the last operations on stderr).  Not
 * part of Atrium: a test tool, built by make check.
 */
#include "exer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Descriptors of each file: two read-write, one read-only. */
#define FD_RW0 0
#define FD_RW1 1
#define FD_RO 2
#define NFDS 3

struct posix {
	const char *dir;
	const char *remount_cmd, *crash_cmd;
	char paths[EXER_FILES][PATH_MAX];
	int fds[EXER_FILES][NFDS];
};

static sigjmp_buf bus_jump;

static void
on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_jump, 1);
}

static int
open_file(struct posix *p, int fi, int flags)
{
	int rw = flags & O_TRUNC ? O_RDWR | O_TRUNC : O_RDWR;

	for (int k = 0; k < NFDS; k++) {
		if (p->fds[fi][k] >= 0)
			continue;
		p->fds[fi][k] = open(p->paths[fi], (k == FD_RO ? O_RDONLY :
		    rw | O_CREAT) | O_CLOEXEC, 0644);
		if (p->fds[fi][k] < 0)
			return -errno;
		rw = O_RDWR;
	}
	return 0;
}

static void
close_file(struct posix *p, int fi)
{
	for (int k = 0; k < NFDS; k++) {
		if (p->fds[fi][k] >= 0)
			close(p->fds[fi][k]);
		p->fds[fi][k] = -1;
	}
}

static int
open_all(struct posix *p)
{
	int r;

	for (int fi = 0; fi < EXER_FILES; fi++)
		if ((r = open_file(p, fi, 0)) < 0)
			return r;
	return 0;
}

static void
close_all(struct posix *p)
{
	for (int fi = 0; fi < EXER_FILES; fi++)
		close_file(p, fi);
}

/* --- data ------------------------------------------------------------------- */

/* pwrite until done: 0 or -errno. */
static int
pwrite_all(int fd, const unsigned char *buf, uint64_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int
pwritev3(int fd, const unsigned char *buf, uint64_t len, uint64_t off)
{
	struct iovec iov[3];
	uint64_t a = len / 3, b = len / 2;
	ssize_t n;

	iov[0] = (struct iovec){ (void *)buf, a };
	iov[1] = (struct iovec){ (void *)(buf + a), b - a };
	iov[2] = (struct iovec){ (void *)(buf + b), len - b };
	if ((n = pwritev(fd, iov, 3, (off_t)off)) < 0)
		return -errno;
	return pwrite_all(fd, buf + n, len - (uint64_t)n, off + (uint64_t)n);
}

/* A shared mapping of the first end bytes of fd, written or read. */
static int
mapped(int fd, int prot, uint64_t off, unsigned char *buf, uint64_t len,
    int to_file, int sync)
{
	size_t maplen = (size_t)(off + len);
	unsigned char *m = mmap(NULL, maplen, prot, MAP_SHARED, fd, 0);
	int r = 0;

	if (m == MAP_FAILED)
		return -errno;
	if (sigsetjmp(bus_jump, 1) == 0) {
		if (to_file)
			memcpy(m + off, buf, len);
		else
			memcpy(buf, m + off, len);
		if (sync && msync(m, maplen, MS_SYNC) < 0)
			r = -errno;
	} else {
		r = -EFAULT;   /* SIGBUS: the file is shorter than it should be */
	}
	munmap(m, maplen);
	return r;
}

/* Another process's write, through its own open of the file. */
static int
child_write(const char *path, const unsigned char *buf, uint64_t len,
    uint64_t off)
{
	pid_t pid = fork();
	int st, fd;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		fd = open(path, O_WRONLY);
		_exit(fd < 0 || pwrite_all(fd, buf, len, off) < 0 ||
		    close(fd) < 0 ? 1 : 0);
	}
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int
be_write(void *arg, const struct exer_op *op, const void *buf)
{
	struct posix *p = arg;
	int *fds = p->fds[op->file];

	if (op->kind == EXER_MAPWRITE)
		return mapped(fds[FD_RW0], PROT_READ | PROT_WRITE, op->off,
		    (unsigned char *)buf, op->len, 1, op->variant);
	if (op->kind == EXER_CHILD_WRITE)
		return child_write(p->paths[op->file], buf, op->len, op->off);
	switch (op->variant) {
	case 0:
		return pwrite_all(fds[FD_RW0], buf, op->len, op->off);
	case 1:
		return pwrite_all(fds[FD_RW1], buf, op->len, op->off);
	case 2:
		return pwritev3(fds[FD_RW0], buf, op->len, op->off);
	default:
		if (lseek(fds[FD_RW1], (off_t)op->off, SEEK_SET) < 0)
			return -errno;
		for (uint64_t done = 0; done < op->len;) {
			ssize_t n = write(fds[FD_RW1], (const char *)buf + done,
			    op->len - done);
			if (n <= 0)
				return n < 0 ? -errno : -EIO;
			done += (uint64_t)n;
		}
		return 0;
	}
}

/* pread (or preadv in two pieces) until len or the end: the count. */
static int
pread_all(int fd, unsigned char *buf, uint64_t len, uint64_t off, int vec)
{
	uint64_t done = 0;

	while (done < len) {
		struct iovec iov[2] = {
			{ buf + done, (len - done) / 2 },
			{ buf + done + (len - done) / 2, len - done - (len - done) / 2 },
		};
		ssize_t n = vec ? preadv(fd, iov, 2, (off_t)(off + done)) :
		    pread(fd, buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int)done;
}

static int
be_read(void *arg, const struct exer_op *op, void *buf, uint64_t size)
{
	struct posix *p = arg;
	int *fds = p->fds[op->file];
	uint64_t len = op->len;
	int r;

	switch (op->variant) {
	case 0:
		return pread_all(fds[FD_RO], buf, op->len, op->off, 0);
	case 1:
		return pread_all(fds[FD_RW1], buf, op->len, op->off, 0);
	case 2:
		return pread_all(fds[FD_RW0], buf, op->len, op->off, 1);
	default:
		if (op->off >= size)
			return 0;
		if (len > size - op->off)
			len = size - op->off;
		r = mapped(fds[FD_RO], PROT_READ, op->off, buf, len, 0, 0);
		return r < 0 ? r : (int)len;
	}
}

static int
be_truncate(void *arg, const struct exer_op *op)
{
	struct posix *p = arg;
	int fd;

	if (op->kind == EXER_OPEN_TRUNC) {
		/* The second read-write descriptor is opened again with it. */
		fd = open(p->paths[op->file], O_RDWR | O_TRUNC | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		close(p->fds[op->file][FD_RW1]);
		p->fds[op->file][FD_RW1] = fd;
		return 0;
	}
	if (op->variant == 0)
		return ftruncate(p->fds[op->file][FD_RW0], (off_t)op->off) < 0 ?
		    -errno : 0;
	return truncate(p->paths[op->file], (off_t)op->off) < 0 ? -errno : 0;
}

static int
be_fallocate(void *arg, const struct exer_op *op)
{
	struct posix *p = arg;

	return fallocate(p->fds[op->file][FD_RW1],
	    exer_falloc_mode(op->variant), (off_t)op->off,
	    (off_t)op->len) < 0 ? -errno : 0;
}

static int
be_copy(void *arg, const struct exer_op *op)
{
	struct posix *p = arg;
	loff_t in = (loff_t)op->off2, out = (loff_t)op->off;
	uint64_t left = op->len;

	while (left > 0) {
		ssize_t n = copy_file_range(p->fds[op->file2][FD_RW0], &in,
		    p->fds[op->file][FD_RW0], &out, left, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		left -= (uint64_t)n;
	}
	return 0;
}

static int
be_seek(void *arg, const struct exer_op *op, uint64_t *out)
{
	struct posix *p = arg;
	off_t r = lseek(p->fds[op->file][FD_RO], (off_t)op->off,
	    op->variant == 0 ? SEEK_DATA : SEEK_HOLE);

	if (r < 0)
		return -errno;
	*out = (uint64_t)r;
	return 0;
}

static int
be_fsync(void *arg, const struct exer_op *op)
{
	struct posix *p = arg;
	int fd = p->fds[op->file][op->off & 1 ? FD_RW1 : FD_RW0];

	return (op->variant ? fdatasync(fd) : fsync(fd)) < 0 ? -errno : 0;
}

/* --- disturbances ------------------------------------------------------------- */

static int
drop_caches(struct posix *p)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		int ok = write(fd, "3\n", 2) == 2;
		close(fd);
		if (ok)
			return 0;
	}
	/* Not root: each file's clean pages alone. */
	for (int fi = 0; fi < EXER_FILES; fi++)
		posix_fadvise(p->fds[fi][FD_RO], 0, 0, POSIX_FADV_DONTNEED);
	return 0;
}

static int
run_cmd(const char *what, const char *cmd)
{
	int st = system(cmd);

	if (st == 0)
		return 0;
	fprintf(stderr, "fsexer: %s command failed (status %d): %s\n", what,
	    st, cmd);
	return -EIO;
}

static int
be_disturb(void *arg, const struct exer_op *op)
{
	struct posix *p = arg;
	int r;

	switch (op->kind) {
	case EXER_REOPEN:
		close_file(p, op->file);
		return open_file(p, op->file, 0);
	case EXER_DROP_CACHES:
		return drop_caches(p);
	case EXER_CRASH:
		/* Killed with the descriptors open and pages dirty, as a
		 * crash finds them. */
		if ((r = run_cmd("crash", p->crash_cmd)) < 0)
			return r;
		/* fall through */
	case EXER_REMOUNT:
		close_all(p);
		if ((r = run_cmd("remount", p->remount_cmd)) < 0)
			return r;
		return open_all(p);
	default:
		return -EINVAL;
	}
}

static int
be_size(void *arg, int fi, uint64_t *out)
{
	struct posix *p = arg;
	struct stat st;

	if (fstat(p->fds[fi][FD_RO], &st) < 0)
		return -errno;
	*out = (uint64_t)st.st_size;
	return 0;
}

/* --- main ------------------------------------------------------------------- */

/* New empty files for a seed, durable before the first operation. */
static int
fresh_files(struct posix *p)
{
	int r;

	close_all(p);
	for (int fi = 0; fi < EXER_FILES; fi++) {
		snprintf(p->paths[fi], sizeof(p->paths[fi]), "%s/f%d", p->dir, fi);
		if (unlink(p->paths[fi]) < 0 && errno != ENOENT)
			return -errno;
		if ((r = open_file(p, fi, O_TRUNC)) < 0)
			return r;
		if (fsync(p->fds[fi][FD_RW0]) < 0)
			return -errno;
	}
	return 0;
}

struct options {
	uint64_t seed;
	unsigned long ops;
	double seconds;
	const char *weights[EXER_NKINDS * 2];
	int nweights;
};

static int
parse_args(int argc, char **argv, struct options *o, struct posix *p)
{
	int i;

	for (i = 1; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *v = argv[i + 1];
		if (strcmp(argv[i], "--seed") == 0)
			o->seed = strtoull(v, NULL, 0);
		else if (strcmp(argv[i], "--ops") == 0)
			o->ops = strtoul(v, NULL, 0);
		else if (strcmp(argv[i], "--seconds") == 0)
			o->seconds = atof(v);
		else if (strcmp(argv[i], "--remount") == 0)
			p->remount_cmd = v;
		else if (strcmp(argv[i], "--crash") == 0)
			p->crash_cmd = v;
		else if (strcmp(argv[i], "--weight") == 0 &&
		    o->nweights < (int)(sizeof(o->weights) / sizeof(o->weights[0])))
			o->weights[o->nweights++] = v;
		else
			break;
	}
	if (i != argc - 1 || o->ops == 0 || (p->crash_cmd && !p->remount_cmd)) {
		fprintf(stderr, "usage: fsexer [--seed S] [--ops N] [--seconds T] "
		    "[--weight KIND=W]... [--remount CMD [--crash CMD]] DIR\n");
		return -1;
	}
	p->dir = argv[i];
	return 0;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One seed: 0 when every read matched. */
static int
run_seed(struct posix *p, const struct exer_backend *be,
    const struct options *o, uint64_t seed)
{
	struct exer x;
	int r;

	if ((r = fresh_files(p)) < 0) {
		fprintf(stderr, "fsexer: making the files in %s: %s\n", p->dir,
		    strerror(-r));
		return -1;
	}
	if (exer_init(&x, seed, o->ops, be, "fsexer") < 0) {
		exer_free(&x);
		return -1;
	}
	for (int k = 0; k < o->nweights; k++)
		if (exer_set_weight(&x, o->weights[k]) < 0)
			r = -1;
	if (r == 0 && (r = exer_run(&x)) < 0)
		fprintf(stderr, "fsexer: replay with: fsexer --seed %" PRIu64
		    " --ops %lu ... %s\n", seed, o->ops, p->dir);
	exer_free(&x);
	return r;
}

int
main(int argc, char **argv)
{
	struct options o = { .seed = 1, .ops = 10000 };
	struct posix p;
	struct exer_backend be = {
		.arg = &p, .write = be_write, .read = be_read,
		.truncate = be_truncate, .fallocate = be_fallocate,
		.copy = be_copy, .seek = be_seek, .fsync = be_fsync,
		.disturb = be_disturb, .size = be_size,
		.nvariants = {
			[EXER_WRITE] = 4, [EXER_READ] = 4, [EXER_MAPWRITE] = 2,
			[EXER_TRUNCATE] = 2, [EXER_OPEN_TRUNC] = 1,
			[EXER_FALLOCATE] = EXER_FALLOC_N, [EXER_COPY] = 1,
			[EXER_SEEK] = 2, [EXER_FSYNC] = 2, [EXER_REOPEN] = 1,
			[EXER_CHILD_WRITE] = 1, [EXER_DROP_CACHES] = 1,
		},
	};
	double end;
	unsigned long seeds = 0;

	memset(&p, 0, sizeof(p));
	memset(p.fds, -1, sizeof(p.fds));
	if (parse_args(argc, argv, &o, &p) < 0)
		return 2;
	be.nvariants[EXER_REMOUNT] = p.remount_cmd ? 1 : 0;
	be.nvariants[EXER_CRASH] = p.crash_cmd ? 1 : 0;
	signal(SIGBUS, on_sigbus);
	end = now() + o.seconds;
	do {
		if (run_seed(&p, &be, &o, o.seed + seeds) < 0)
			return 1;
		seeds++;
	} while (now() < end);
	close_all(&p);
	printf("fsexer: %lu seeds from %" PRIu64 ", %lu operations each: all "
	    "reads matched\n", seeds, o.seed, o.ops);
	return 0;
}
