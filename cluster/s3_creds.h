/*
 * s3_creds.h: the object store's access key and secret (s3_creds.c).
 *
 * Where they come from: --s3-credentials FILE (two lines: the access key,
 * then the secret), else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
 *
 * How they travel, as the API keys do (common/keys.h): atriumd's monitor
 * loads them once at start (s3_creds_load), wipes the variables from its
 * environment (s3_creds_scrub_env) and writes them to a pipe that the
 * one process that needs them (atrium-replicate, --creds-fd N) inherits
 * and reads to its end.  Never in argv, the environment of a child, a log
 * line, a database or a sandbox.
 *
 * On the wire: "ACCESS\nSECRET\n", nothing else.
 */
#ifndef ATRIUM_S3_CREDS_H
#define ATRIUM_S3_CREDS_H

#include <stddef.h>

#define S3_CREDS_MAX	256	/* bytes of each, its NUL included */

struct s3_creds {
	char access[S3_CREDS_MAX];	/* the access key id; never logged */
	char secret[S3_CREDS_MAX];	/* never logged */
};

/* From file (when not NULL) or the environment: 0, or -errno with the
 * reason in err (unreadable, malformed, missing, too long).  c is
 * cleared first. */
int s3_creds_load(struct s3_creds *c, const char *file, char *err,
    size_t errlen);

/* Overwrite the two variables' values in place and unset them. */
void s3_creds_scrub_env(void);

/* Write c to fd (blocking) in the wire format: 0 or -errno. */
int s3_creds_write(int fd, const struct s3_creds *c);

/* A pipe already holding c: its read end (not close-on-exec, for the
 * child), or -errno.  The write end is closed: the reader sees EOF. */
int s3_creds_pipe(const struct s3_creds *c);

/* Read c from fd to its end and close fd: 0, or -EINVAL / -errno with
 * the reason in err.  c is cleared first. */
int s3_creds_read_fd(struct s3_creds *c, int fd, char *err, size_t errlen);

/* Forget them (explicit_bzero). */
void s3_creds_clear(struct s3_creds *c);

#endif
