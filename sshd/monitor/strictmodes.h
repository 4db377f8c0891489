/*
 * strictmodes.h: refuse a DATA directory that others could change
 * (strictmodes.c), as OpenSSH's StrictModes refuses a home directory or an
 * authorized_keys file that another user can write.
 */
#ifndef ATRIUMD_STRICTMODES_H
#define ATRIUMD_STRICTMODES_H

/* Check DATA and what atriumd trusts in it, where they exist.  0, or -EPERM
 * after printing what is wrong and the command that fixes it to stderr. */
int strictmodes_check(const char *data);

#endif
