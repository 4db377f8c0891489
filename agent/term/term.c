/*
 * term.c: the room's shared terminal (term.h).
 *
 * State: at most one struct term per room (a->term).  Its pty master is
 * non-blocking and always read, whatever the members do: every byte goes
 * into libvterm, whose damage marks rows dirty; nothing is forwarded as it
 * came.  Before the loop sleeps (term_flush, then conn_flush writes) each
 * attached member is sent the dirty rows, or the whole screen when it
 * attached, the size changed or it had fallen behind; updates go out at
 * most every TERM_FRAME_MS (a timer wakes the loop for the rest), so a
 * shell printing without pause costs a screen per frame, not per read.
 *
 * The emulator's own answers (cursor position reports, device
 * attributes) go back to the shell through the same input queue as the
 * members' keys, so a program that queries "the terminal" is answered by
 * the emulator and no member's terminal is ever asked.  The window title
 * and the bell are dropped.
 *
 * Life: term_open starts it (term_start); it ends when bash's sandbox ends
 * (term_on_exit: every member gets term_end) or at room shutdown
 * (term_kill).
 *
 * Whose work the shell's changes are (undo's attribution, undo.h): the
 * shell runs whatever anyone attached types, so each person who opened
 * it or typed into it has an audit row of their own (kind term), started
 * at their first key (before the key reaches the shell) and ended with
 * the shell, that says whether the workspace changed between the two
 * (undo_mark_start/end).  So an /undo asks everyone who typed into the
 * shell while it could have changed what the undo takes back, and nobody
 * who only watched; as with every mark, a change made by someone else
 * meanwhile counts too: the attribution errs towards asking.  Keys are
 * not taken from a person whose row could not be written.
 *
 * A member is a conn pointer, dropped in term_conn_gone (requests.c) before
 * conn.c frees the conn.
 */
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include <vterm.h>

#include "agent.h"
#include "log.h"
#include "loop_uring.h"
#include "proc.h"
#include "room_events.h"
#include "room_db.h"
#include "term_encode.h"
#include "undo.h"
#include "util.h"

#define TERM_READ_CHUNK		65536
#define TERM_MAX_UPDATE		(8 * 1024 * 1024)	/* one flush's lines */

struct term_member {
	struct conn *c;
	int cols, rows;			/* its area for the terminal */
	int owe_full;			/* send the whole screen next */
	int told_full;			/* was told its input was dropped;
					 * not again until some is taken */
};

/* Someone who opened the terminal or typed into it: their audit row,
 * open while the shell runs, and the count of changes when they first
 * typed (undo's attribution, see the head). */
struct term_typist {
	char user[64];
	long long audit_id;
	struct undo_mark mark;		/* did the shell change the workspace
					 * after they first typed? */
};

struct term {
	struct agent *a;
	int master;			/* pty master, -1 once the slave hung up */
	struct proc *proc;		/* bash's sandbox, NULL once ended */
	struct term_typist typist[TERM_MAX_TYPISTS];	/* [0]: who opened it */
	int ntypists;
	VTerm *vt;
	VTermScreen *vs;
	int cols, rows;			/* the pty's size now */
	unsigned char dirty[TERM_MAX_ROWS];	/* rows changed since sent */
	int changed;			/* rows, cursor or members changed */
	int members_changed;		/* send the names with the update */
	VTermPos cursor;
	int cursor_visible;
	struct buf in;			/* for the shell, not yet written */
	long long last_sent;		/* monotonic ms of the last update */
	long long timer;		/* pending frame timer, 0 */
	struct term_member m[TERM_MAX_MEMBERS];
	int nm;
};

/* ------------------------------------------------------------- input -- */

static void term_on_pty(struct loop *l, int fd, int mask, void *arg);

/* Watch the master: always for reading, for writing while input waits. */
static void
term_watch(struct term *t)
{
	if (t->master >= 0)
		loop_add_fd(t->a->loop, t->master, LOOP_READ |
		    (t->in.len ? LOOP_WRITE : 0), term_on_pty, t);
}

/* Write what waits for the shell, as much as the pty takes now. */
static void
term_write_input(struct term *t)
{
	while (t->in.len && t->master >= 0) {
		ssize_t n = write(t->master, t->in.data, t->in.len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			buf_reset(&t->in);	/* the shell is gone */
			break;
		}
		buf_consume(&t->in, (size_t)n);
	}
	term_watch(t);
}

/* Queue bytes for the shell.  0, or -ENOBUFS when the queue is full. */
static int
term_queue_input(struct term *t, const char *p, size_t n)
{
	int r = buf_append(&t->in, p, n);

	if (r == 0)
		term_write_input(t);
	return r;
}

/* The emulator's answers to the shell's queries. */
static void
term_vt_output(const char *s, size_t len, void *user)
{
	struct term *t = user;

	if (term_queue_input(t, s, len) < 0)
		log_warn("terminal: an answer to the shell was dropped (its "
		    "input queue is full)");
}

/* ------------------------------------------------------------ screen -- */

static int
term_vt_damage(VTermRect r, void *user)
{
	struct term *t = user;

	for (int y = r.start_row; y < r.end_row && y < TERM_MAX_ROWS; y++)
		if (y >= 0)
			t->dirty[y] = 1;
	t->changed = 1;
	return 1;
}

static int
term_vt_movecursor(VTermPos pos, VTermPos old, int visible, void *user)
{
	struct term *t = user;

	t->cursor = pos;
	t->changed = 1;
	return 1;
}

/* Only the cursor's visibility is kept: a title or icon name set by the
 * shell would be another member's window title, so it is dropped. */
static int
term_vt_prop(VTermProp prop, VTermValue *val, void *user)
{
	struct term *t = user;

	if (prop == VTERM_PROP_CURSORVISIBLE) {
		t->cursor_visible = val->boolean;
		t->changed = 1;
	}
	return 1;
}

static const VTermScreenCallbacks term_vt_callbacks = {
	.damage = term_vt_damage,
	.movecursor = term_vt_movecursor,
	.settermprop = term_vt_prop,
};

/* Read what the shell wrote into the emulator.  At EOF or an error (the
 * slave side is closed: the shell is gone) the master is closed.  Bytes
 * read, 0 when closed, -1 when nothing waits. */
static ssize_t
term_read(struct term *t)
{
	char chunk[TERM_READ_CHUNK];
	ssize_t n = read(t->master, chunk, sizeof(chunk));

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return -1;
	if (n <= 0) {
		loop_del_fd(t->a->loop, t->master);
		close(t->master);
		t->master = -1;
		return 0;
	}
	vterm_input_write(t->vt, chunk, (size_t)n);
	vterm_screen_flush_damage(t->vs);
	return n;
}

static void
term_on_pty(struct loop *l, int fd, int mask, void *arg)
{
	struct term *t = arg;

	if (mask & LOOP_WRITE)
		term_write_input(t);
	if (t->master >= 0 && (mask & ~LOOP_WRITE))
		term_read(t);
}

/* --------------------------------------------------------------- size -- */

/* Resize pty and screen to the smallest member's area (unchanged when
 * nobody is attached); every member is sent the whole screen again. */
static void
term_fit(struct term *t)
{
	int cols = TERM_MAX_COLS, rows = TERM_MAX_ROWS;
	struct winsize ws = { 0 };

	if (t->nm == 0)
		return;
	for (int i = 0; i < t->nm; i++) {
		cols = t->m[i].cols < cols ? t->m[i].cols : cols;
		rows = t->m[i].rows < rows ? t->m[i].rows : rows;
	}
	if (cols == t->cols && rows == t->rows)
		return;
	t->cols = cols;
	t->rows = rows;
	vterm_set_size(t->vt, rows, cols);
	vterm_screen_flush_damage(t->vs);
	ws.ws_col = (unsigned short)cols;
	ws.ws_row = (unsigned short)rows;
	if (t->master >= 0 && ioctl(t->master, TIOCSWINSZ, &ws) < 0)
		log_warn("terminal: cannot resize the pty: %s", strerror(errno));
	for (int i = 0; i < t->nm; i++)
		t->m[i].owe_full = 1;
}

/* A member's area from a request, clamped to what a pty may be. */
static void
term_req_size(json_object *req, int *cols, int *rows)
{
	long long c = json_get_int(req, "cols", 80);
	long long r = json_get_int(req, "rows", 24);

	*cols = (int)(c < TERM_MIN_COLS ? TERM_MIN_COLS : c > TERM_MAX_COLS ?
	    TERM_MAX_COLS : c);
	*rows = (int)(r < TERM_MIN_ROWS ? TERM_MIN_ROWS : r > TERM_MAX_ROWS ?
	    TERM_MAX_ROWS : r);
}

/* ------------------------------------------------------------ members -- */

static struct term_member *
term_member(struct term *t, struct conn *c)
{
	for (int i = 0; i < t->nm; i++)
		if (t->m[i].c == c)
			return &t->m[i];
	return NULL;
}

/* Detach c (nothing when it is not attached). */
static void
term_detach(struct term *t, struct conn *c)
{
	struct term_member *m = term_member(t, c);

	if (!m)
		return;
	*m = t->m[--t->nm];
	t->members_changed = t->changed = 1;
	term_fit(t);
}

json_object *
term_members(struct agent *a)
{
	json_object *arr = json_object_new_array();
	struct term *t = a->term;

	for (int i = 0; t && i < t->nm; i++) {
		int seen = 0;

		for (int j = 0; j < i; j++)
			seen |= strcmp(t->m[j].c->user, t->m[i].c->user) == 0;
		if (!seen)
			json_object_array_add(arr,
			    json_object_new_string(t->m[i].c->user));
	}
	return arr;
}

/* ----------------------------------------------------------- updates -- */

/* Start a term_screen line in out. */
static int
term_msg_open(struct term *t, struct buf *out, int full)
{
	return buf_printf(out, "{\"type\":\"term_screen\",\"full\":%s,"
	    "\"cols\":%d,\"rows\":%d,\"cursor\":[%d,%d,%d],\"lines\":[",
	    full ? "true" : "false", t->cols, t->rows, t->cursor.col,
	    t->cursor.row, t->cursor_visible);
}

/* End the line: the members' names when asked for, then "}\n". */
static int
term_msg_close(struct term *t, struct buf *out, int names)
{
	json_object *arr;
	int r = buf_append(out, "]", 1);

	if (r == 0 && names) {
		arr = term_members(t->a);
		r = buf_printf(out, ",\"members\":%s", json_object_to_json_string_ext(
		    arr, JSON_C_TO_STRING_PLAIN));
		json_object_put(arr);
	}
	return r ? r : buf_append(out, "}\n", 2);
}

/* The rows to send (all of them, or the dirty ones) as term_screen lines
 * in out, split so that no line passes TERM_MAX_MESSAGE.  0 or -errno. */
static int
term_build(struct term *t, struct buf *out, int full)
{
	size_t start = out->len;
	int r = term_msg_open(t, out, full), first = 1;

	for (int y = 0; r == 0 && y < t->rows; y++) {
		if (!full && !t->dirty[y])
			continue;
		if (out->len - start > TERM_MAX_MESSAGE / 2) {
			r = term_msg_close(t, out, 0);
			start = out->len;
			if (r == 0)
				r = term_msg_open(t, out, 0);
			first = 1;
		}
		if (r == 0 && !first)
			r = buf_append(out, ",", 1);
		if (r == 0)
			r = term_encode_row(t->vs, y, t->cols, out);
		first = 0;
	}
	return r ? r : term_msg_close(t, out, full || t->members_changed);
}

static long
term_on_frame(struct loop *l, long long id, void *arg)
{
	struct term *t = arg;

	t->timer = 0;	/* term_flush runs before the loop sleeps again */
	return LOOP_NOMORE;
}

/* Send m what it needs (full and update are built on first use). */
static void
term_send_member(struct term *t, struct term_member *m, struct buf *full,
    struct buf *update)
{
	struct buf *b = m->owe_full ? full : update;

	if (!m->owe_full && !t->changed)
		return;
	if (!b->len && term_build(t, b, m->owe_full) < 0) {
		log_error("terminal: a screen update did not fit in %d bytes",
		    TERM_MAX_UPDATE);
		buf_reset(b);
		return;
	}
	room_send_lines(m->c, b->data, b->len);
	m->owe_full = 0;
}

/* 1 when some member waits for something. */
static int
term_owed(const struct term *t)
{
	for (int i = 0; i < t->nm; i++)
		if (t->m[i].owe_full || t->changed)
			return 1;
	return 0;
}

void
term_flush(struct agent *a)
{
	struct term *t = a->term;
	struct buf full, update;
	long long now = time_mono_ms();

	if (!t || !term_owed(t))
		return;
	if (now - t->last_sent < TERM_FRAME_MS) {
		if (!t->timer) {
			t->timer = loop_add_timer(a->loop, TERM_FRAME_MS -
			    (now - t->last_sent), term_on_frame, t);
			if (t->timer < 0)
				t->timer = 0;
		}
		return;
	}
	buf_init(&full, TERM_MAX_UPDATE);
	buf_init(&update, TERM_MAX_UPDATE);
	for (int i = 0; i < t->nm; i++) {
		if (t->m[i].c->out.len > TERM_MAX_BEHIND)
			t->m[i].owe_full = 1;	/* it catches up first */
		else
			term_send_member(t, &t->m[i], &full, &update);
	}
	buf_free(&full);
	buf_free(&update);
	memset(t->dirty, 0, sizeof(t->dirty));
	t->changed = t->members_changed = 0;
	t->last_sent = now;
}

/* --------------------------------------------------------------- life -- */

/* Free t (its shell already ended or abandoned). */
static void
term_free(struct term *t)
{
	if (!t)
		return;
	if (t->master >= 0) {
		loop_del_fd(t->a->loop, t->master);
		close(t->master);
	}
	if (t->timer)
		loop_del_timer(t->a->loop, t->timer);
	if (t->vt)
		vterm_free(t->vt);
	buf_free(&t->in);
	free(t);
}

/* Tell c the terminal ended, and why. */
static void
term_send_end(struct conn *c, const char *reason)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "type", json_object_new_string("term_end"));
	json_object_object_add(ev, "reason", json_object_new_string(reason));
	room_send_link(c, json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN));
	json_object_put(ev);
}

/* Record the shell's end in the audit row of each of its typists. */
static void
term_audit_end(struct term *t, int code, const char *sig)
{
	for (int i = 0; i < t->ntypists; i++) {
		struct term_typist *ty = &t->typist[i];
		int r = room_db_audit_end(t->a->db, ty->audit_id, code, sig);

		if (r == 0)
			undo_mark_end(t->a, &ty->mark, ty->audit_id);
		if (r < 0)
			log_error("terminal: the end of audit row %lld not "
			    "recorded: %s", ty->audit_id, room_db_strerror(r));
	}
}

/* The typist user of t, audited now if new (see the head).  It, or NULL
 * with the reason sent to c: too many people typed, or room.db could not
 * record it. */
static struct term_typist *
term_typist(struct term *t, struct conn *c, const char *user)
{
	struct term_typist *ty;
	int r;

	for (int i = 0; i < t->ntypists; i++)
		if (strcmp(t->typist[i].user, user) == 0)
			return &t->typist[i];
	if (t->ntypists == TERM_MAX_TYPISTS) {
		room_error(c, NULL, "%d people have typed into this terminal, "
		    "the most it records: open a new one (exit its shell)",
		    TERM_MAX_TYPISTS);
		return NULL;
	}
	ty = &t->typist[t->ntypists];
	snprintf(ty->user, sizeof(ty->user), "%s", user);
	undo_mark_start(t->a, &ty->mark);
	if ((r = room_db_audit_start(t->a->db, user, "term", t->ntypists ?
	    "typed into the shared terminal (bash -i)" : "bash -i",
	    "/workspace", &ty->audit_id)) < 0) {
		room_unrecorded(c, NULL, t->ntypists ? "your typing into the "
		    "terminal" : "the terminal's start", r);
		return NULL;
	}
	t->ntypists++;
	return ty;
}

/* bash's sandbox ended: show the last of its output, tell every member,
 * free the terminal. */
static void
term_on_exit(void *arg, const struct proc_end *end)
{
	struct term *t = arg;
	struct agent *a = t->a;
	char reason[96];
	int code = end->how.code;

	while (t->master >= 0 && term_read(t) > 0)
		;	/* the sandbox is gone: nothing writes any more */
	if (end->how.how == SANDBOX_SIGNALED)
		snprintf(reason, sizeof(reason), "the shell was killed (%s)",
		    proc_signal_name(code) ? proc_signal_name(code) : "signal");
	else
		snprintf(reason, sizeof(reason), "the shell exited (status %d)",
		    code);
	term_audit_end(t, end->how.how == SANDBOX_EXITED ? code : 128 + code,
	    end->how.how == SANDBOX_SIGNALED ? proc_signal_name(code) : NULL);
	log_info("terminal ended: %s", reason);
	t->last_sent = 0;
	term_flush(a);
	for (int i = 0; i < t->nm; i++)
		term_send_end(t->m[i].c, reason);
	t->proc = NULL;
	a->term = NULL;
	term_free(t);
}

/* A new pty (master non-blocking, both close-on-exec, UTF-8 input) of
 * cols x rows.  0 or -errno. */
static int
term_open_pty(int *master, int *slave, int cols, int rows)
{
	struct winsize ws = { .ws_col = (unsigned short)cols,
	    .ws_row = (unsigned short)rows };
	struct termios tio;
	char name[64];
	int m, s, r = 0;

	*master = *slave = -1;
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 ||
	    ptsname_r(m, name, sizeof(name)) != 0 ||
	    (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		r = -errno;
		close(m);
		return r ? r : -EIO;
	}
	if (tcgetattr(s, &tio) == 0) {
		tio.c_iflag |= IUTF8;
		tcsetattr(s, TCSANOW, &tio);
	}
	ioctl(m, TIOCSWINSZ, &ws);
	*master = m;
	*slave = s;
	return 0;
}

/* The emulator for t's size. */
static int
term_vterm_new(struct term *t)
{
	t->vt = vterm_new(t->rows, t->cols);
	if (!t->vt)
		return -ENOMEM;
	vterm_set_utf8(t->vt, 1);
	vterm_output_set_callback(t->vt, term_vt_output, t);
	t->vs = vterm_obtain_screen(t->vt);
	vterm_screen_set_callbacks(t->vs, &term_vt_callbacks, t);
	vterm_screen_enable_altscreen(t->vs, 1);
	vterm_screen_reset(t->vs, 1);
	t->cursor_visible = 1;
	return 0;
}

/* Start bash on the pty's slave in the room's sandbox.  0 or -errno. */
static int
term_spawn(struct term *t, int slave)
{
	static char *const argv[] = { "/bin/bash", "-i", NULL };
	static char *const env[] = { "TERM=xterm-256color",
	    "PS1=\\u@\\h:\\w\\$ ", NULL };
	struct proc_opts o = { .fds = { slave, slave, slave } };

	o.argv = argv;
	o.cwd = "/workspace";
	o.env = env;
	o.tty = 1;
	o.timeout_s = t->a->cfg.exec_timeout;
	o.exit = term_on_exit;
	o.arg = t;
	return proc_spawn(t->a, &o, &t->proc);
}

/* Audit, then start the terminal for c at cols x rows.  The new term, or
 * NULL (c was told why). */
static struct term *
term_start(struct agent *a, struct conn *c, int cols, int rows)
{
	struct term *t = calloc(1, sizeof(*t));
	int slave = -1, r;

	if (!t)
		return NULL;
	t->a = a;
	t->cols = cols;
	t->rows = rows;
	buf_init(&t->in, TERM_MAX_INPUT);
	r = term_open_pty(&t->master, &slave, cols, rows);
	if (r == 0)
		r = term_vterm_new(t);
	if (r == 0 && !term_typist(t, c, c->user))
		goto fail;
	if (r == 0 && (r = term_spawn(t, slave)) < 0)
		term_audit_end(t, 126, NULL);
	if (r < 0) {
		log_error("terminal: cannot start: %s", strerror(-r));
		room_error(c, NULL, "the room's terminal could not start%s",
		    r == -ENOTSUP ? ": its resource limits cannot be applied "
		    "on this server (atriumd's log says what is missing)" :
		    "; the agent's log says why");
		goto fail;
	}
	close(slave);
	term_watch(t);
	log_info("terminal started by %s (%dx%d)", c->user, cols, rows);
	return t;
fail:
	if (slave >= 0)
		close(slave);
	term_send_end(c, "the terminal could not start");
	term_free(t);
	return NULL;
}

void
term_kill(struct agent *a)
{
	struct term *t = a->term;

	if (!t)
		return;
	a->term = NULL;
	if (t->proc) {
		proc_abandon(t->proc);
		term_audit_end(t, 128 + 9, "KILL");
	}
	for (int i = 0; i < t->nm; i++)
		term_send_end(t->m[i].c, "the room stopped");
	term_free(t);
}

void
term_conn_gone(struct agent *a, struct conn *c)
{
	if (a->term)
		term_detach(a->term, c);
}

/* ----------------------------------------------------------- requests -- */

/* term_open: attach c (starting the terminal when none runs). */
static void
term_open(struct conn *c, json_object *req)
{
	struct agent *a = c->a;
	struct term_member *m;
	int cols, rows;

	term_req_size(req, &cols, &rows);
	if (!a->term && !(a->term = term_start(a, c, cols, rows)))
		return;
	m = term_member(a->term, c);
	if (!m && a->term->nm == TERM_MAX_MEMBERS) {
		room_error(c, NULL, "%d sessions are in the room's terminal, "
		    "the most it takes: try again when one leaves",
		    TERM_MAX_MEMBERS);
		term_send_end(c, "the terminal is full");
		return;
	}
	if (!m) {
		m = &a->term->m[a->term->nm++];
		m->c = c;
		a->term->members_changed = a->term->changed = 1;
	}
	m->cols = cols;
	m->rows = rows;
	m->owe_full = 1;
	term_fit(a->term);
}

/* The cursor key a member's terminal sent as p[0..3) (CSI or SS3 form,
 * no modifier), or VTERM_KEY_NONE. */
static VTermKey
term_cursor_key(const char *p, size_t n)
{
	static const char keys[] = "ABCDHF";
	static const VTermKey map[] = { VTERM_KEY_UP, VTERM_KEY_DOWN,
	    VTERM_KEY_RIGHT, VTERM_KEY_LEFT, VTERM_KEY_HOME, VTERM_KEY_END };
	const char *k;

	if (n < 3 || p[0] != 0x1b || (p[1] != '[' && p[1] != 'O') || !p[2] ||
	    !(k = strchr(keys, p[2])))
		return VTERM_KEY_NONE;
	return map[k - keys];
}

#define TERM_PASTE_START	"\x1b[200~"	/* a bracketed paste's marks */
#define TERM_PASTE_END		"\x1b[201~"
#define TERM_PASTE_MARK_LEN	6

/* A bracketed paste's start (1) or end (2) at p, else 0. */
static int
term_paste_mark(const char *p, size_t n)
{
	if (n < TERM_PASTE_MARK_LEN)
		return 0;
	if (memcmp(p, TERM_PASTE_START, TERM_PASTE_MARK_LEN) == 0)
		return 1;
	if (memcmp(p, TERM_PASTE_END, TERM_PASTE_MARK_LEN) == 0)
		return 2;
	return 0;
}

/* Send the key or paste mark at p (key, else mark) as the emulator's
 * modes want it.  Bytes it took. */
static size_t
term_encode_special(struct term *t, VTermKey key, int mark)
{
	if (key != VTERM_KEY_NONE) {
		vterm_keyboard_key(t->vt, key, VTERM_MOD_NONE);
		return 3;
	}
	if (mark == 1)
		vterm_keyboard_start_paste(t->vt);
	else
		vterm_keyboard_end_paste(t->vt);
	return TERM_PASTE_MARK_LEN;
}

/* Queue a member's keys for the shell.  The member's terminal sends
 * cursor keys and pastes in its own modes, which know nothing of the
 * shell's: they are sent again as the emulator's modes want them (ESC O
 * A once a program asked for application cursor keys, as vim and less
 * do; a paste bracketed only for a program that asked for bracketed
 * paste, else its text alone), so the program gets the keys it asked
 * for.  0 or -ENOBUFS. */
static int
term_queue_keys(struct term *t, const char *p, size_t n)
{
	size_t i = 0, from = 0;
	int r = 0;

	while (r == 0 && i < n) {
		VTermKey key = term_cursor_key(p + i, n - i);
		int mark = key == VTERM_KEY_NONE ? term_paste_mark(p + i,
		    n - i) : 0;

		if (key == VTERM_KEY_NONE && !mark) {
			i++;
			continue;
		}
		if (i > from)
			r = term_queue_input(t, p + from, i - from);
		if (r == 0 && buf_room(&t->in) < 8)
			r = -ENOBUFS;
		if (r == 0)
			i += term_encode_special(t, key, mark);
		from = i;
	}
	if (r == 0 && n > from)
		r = term_queue_input(t, p + from, n - from);
	return r;
}

/* term_input: bytes from an attached member for the shell. */
static void
term_input(struct conn *c, json_object *req)
{
	struct term *t = c->a->term;
	struct term_member *m = t ? term_member(t, c) : NULL;
	json_object *d = NULL;

	if (!m) {
		room_error(c, NULL, "term_input without term_open: attach to "
		    "the room's terminal first");
		return;
	}
	if (!json_object_object_get_ex(req, "data", &d) ||
	    !json_object_is_type(d, json_type_string) ||
	    json_object_get_string_len(d) > TERM_MAX_INPUT_LINE) {
		room_error(c, NULL, "term_input needs \"data\", a string of at "
		    "most %d bytes", TERM_MAX_INPUT_LINE);
		return;
	}
	if (!term_typist(t, c, c->user))
		return;		/* nothing reaches the shell unaudited */
	if (term_queue_keys(t, json_object_get_string(d),
	    (size_t)json_object_get_string_len(d)) == 0)
		m->told_full = 0;
	else if (!m->told_full) {
		m->told_full = 1;
		room_error(c, NULL, "the terminal's shell is not reading its "
		    "input: what you type is dropped until it reads again");
	}
}

int
term_line(struct conn *c, const char *type, json_object *req)
{
	struct term *t = c->a->term;
	struct term_member *m;

	if (strncmp(type, "term_", 5) != 0)
		return 0;
	if (strcmp(type, "term_open") == 0) {
		term_open(c, req);
	} else if (strcmp(type, "term_input") == 0) {
		term_input(c, req);
	} else if (strcmp(type, "term_resize") == 0) {
		if (t && (m = term_member(t, c))) {
			term_req_size(req, &m->cols, &m->rows);
			m->owe_full = 1;
			term_fit(t);
		}
	} else if (strcmp(type, "term_close") == 0) {
		if (t)
			term_detach(t, c);
	} else {
		return 0;
	}
	return 1;
}
