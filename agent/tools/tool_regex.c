/*
 * tool_regex.c: grep's regular expressions on PCRE2 (tool_regex.h).
 *
 * Why PCRE2 with a budget.  grep used glibc's regcomp/regexec, which
 * backtracks without bound once a pattern has a backreference: a model's
 * "(.*)(.*)(.*)(.*)(.*)\5x" over one long line held the room's loop at 100%
 * CPU for minutes, and regexec cannot be interrupted.  The choices were:
 *   - a linear-time engine (RE2, Rust's regex): no backreferences, but RE2
 *     is C++ and Debian has no maintained C one; TRE is unmaintained;
 *   - refusing backreferences in glibc's engine: its other constructs are
 *     not linear either (counted repetition grows states), and it offers
 *     no limit;
 *   - PCRE2 (Debian's libpcre2-8, what grep -P uses), whose matcher counts
 *     its work: pcre2_set_match_limit bounds backtracking steps,
 *     pcre2_set_depth_limit the backtracking depth and pcre2_set_heap_limit
 *     the memory of one pcre2_match call.  A match that reaches a limit
 *     fails at once with its own error code.
 * PCRE2 it is: the syntax models know best (Perl's: \d, \b, \w, lazy
 * quantifiers, lookarounds, backreferences, and POSIX classes such as
 * [[:digit:]], so the extended regular expressions grep took before keep
 * working), and a budget per line (about 15 ms of CPU at its limits) that
 * turns a catastrophic pattern into a clear error for the model.  The
 * grep tool's time budget (wsio_pace) bounds the sum over lines.
 *
 * The interpreter is used, not the JIT: no executable memory in the room's
 * actor, and the match limit applies to both anyway.  Patterns are UTF-8
 * (PCRE2_UTF) and files need not be: PCRE2_MATCH_INVALID_UTF matches
 * around invalid sequences instead of refusing the line.  \C (one code
 * unit inside a character) is refused, as it could split a UTF-8 sequence.
 */
#include "tool_regex.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

struct tool_regex {
	pcre2_code *code;
	pcre2_match_context *mctx;	/* the limits */
	pcre2_match_data *md;		/* reused for every line */
};

void
tool_regex_free(struct tool_regex *re)
{
	if (!re)
		return;
	pcre2_match_data_free(re->md);
	pcre2_match_context_free(re->mctx);
	pcre2_code_free(re->code);
	free(re);
}

int
tool_regex_new(const char *pattern, int icase, struct tool_regex **out,
    char *err, size_t errlen)
{
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
	    PCRE2_NEVER_BACKSLASH_C | (icase ? PCRE2_CASELESS : 0);
	struct tool_regex *re = calloc(1, sizeof(*re));
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off = 0;
	int code = 0;

	*out = NULL;
	if (!re)
		return -ENOMEM;
	re->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
	    opts, &code, &off, NULL);
	if (!re->code) {
		pcre2_get_error_message(code, msg, sizeof(msg));
		snprintf(err, errlen, "%s at offset %zu", (const char *)msg,
		    (size_t)off);
		tool_regex_free(re);
		return -EINVAL;
	}
	re->mctx = pcre2_match_context_create(NULL);
	re->md = pcre2_match_data_create(1, NULL);
	if (!re->mctx || !re->md) {
		tool_regex_free(re);
		return -ENOMEM;
	}
	pcre2_set_match_limit(re->mctx, TOOL_REGEX_MATCH_LIMIT);
	pcre2_set_depth_limit(re->mctx, TOOL_REGEX_DEPTH_LIMIT);
	pcre2_set_heap_limit(re->mctx, TOOL_REGEX_HEAP_KIB);
	*out = re;
	return 0;
}

int
tool_regex_match(struct tool_regex *re, const char *s, size_t len)
{
	int r = pcre2_match(re->code, (PCRE2_SPTR)(s ? s : ""), s ? len : 0,
	    0, 0, re->md, re->mctx);

	if (r >= 0)
		return 1;
	switch (r) {
	case PCRE2_ERROR_NOMATCH:
		return 0;
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
		return -ERANGE;
	case PCRE2_ERROR_NOMEMORY:
		return -ENOMEM;
	default:
		return -EINVAL;
	}
}
