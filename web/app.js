/*
 * app.js: the room in the browser (served by atriumd-http at /r/ROOM).
 *
 * One WebSocket (/api/rooms/ROOM/ws?presence=1: the page is a person in
 * the room) carries the room protocol's JSON lines both ways
 * (atrium-agent(8), PROTOCOL); this file turns the room's events into the
 * page and the person's keys into requests.  It keeps no state the room
 * does not send again: a reconnect asks for the history since the last
 * stored seq it saw; stored events are placed by seq and shown once each,
 * and a reply (which carries the seq of the room's last event) after the
 * event it follows.
 *
 * Rules, because every byte here comes from someone else (other members,
 * the model, the shell in the shared terminal):
 *   - Nothing received is ever inserted as HTML: every node is built with
 *     createElement and textContent (the Markdown renderer below too), and
 *     a link's href is kept only for http:, https: and mailto:.
 *   - Control characters are removed from every text shown (newlines and
 *     tabs kept where the text is a block).
 *   - The shared terminal is drawn from the cells the agent sends
 *     (term_screen): the escape sequences written into xterm.js are made
 *     here from checked numbers and cleaned text, so nothing the shell
 *     printed reaches xterm.js as a sequence.
 *   - The token is sent once, to POST /api/session, and never stored: the
 *     session is the HttpOnly cookie the server sets.
 * xterm.js (about 120 KB gzipped) loads only when the terminal is first
 * opened, so the chat's first line costs index.html, app.css and this
 * file alone.
 */
'use strict';

(function () {

/* ------------------------------------------------------------ helpers -- */

const $ = (id) => document.getElementById(id);
const ROOM_RE = /^\/r\/([^/]+)\/?$/;
const MAX_LOG = 2000;            /* log items kept in the page */
const MAX_TOOL_OUTPUT = 65536;   /* characters of one call's output shown */
const TERM_INPUT_MAX = 4096;     /* bytes of one term_input (the agent's cap) */

/* text without control characters; block keeps newlines and tabs. */
function clean(text, block) {
  if (typeof text !== 'string')
    text = text == null ? '' : String(text);
  return block ? text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '')
               : text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

/* A new element of tag with class cls and text (cleaned) as its content. */
function el(tag, cls, text, block) {
  const e = document.createElement(tag);
  if (cls)
    e.className = cls;
  if (text != null)
    e.textContent = clean(text, block);
  return e;
}

function pad2(n) { return n < 10 ? '0' + n : '' + n; }

/* A <time> for an event's ISO time (local HH:MM; the full time on hover). */
function timeEl(iso) {
  const t = el('time');
  const d = typeof iso === 'string' ? new Date(iso) : new Date();
  if (isNaN(d.getTime()))
    return t;
  t.dateTime = d.toISOString();
  t.textContent = pad2(d.getHours()) + ':' + pad2(d.getMinutes());
  t.title = d.toLocaleString();
  return t;
}

function asList(v) { return Array.isArray(v) ? v : []; }
function names(v) { return asList(v).filter((s) => typeof s === 'string').map((s) => clean(s)); }

/* ----------------------------------------------------------- markdown -- */

/* A small Markdown renderer straight to DOM nodes: fenced and indented
 * code, headings, lists, quotes, rules, paragraphs; inline code, bold,
 * italics, links.  It never makes HTML from text: what it does not know
 * stays as text. */
const md = {
  /* Inline spans of s appended to parent. */
  inline(parent, s) {
    const re = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(^|[^\w])_([^_\s][^_]*)_(?!\w)|\[([^\]]+)\]\(([^)\s]+)\)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;
    let at = 0, m;
    while ((m = re.exec(s)) !== null) {
      let start = m.index;
      if (m[6] !== undefined)
        start += m[6].length;
      if (start > at)
        parent.appendChild(document.createTextNode(clean(s.slice(at, start))));
      if (m[1])
        parent.appendChild(el('code', null, m[2]));
      else if (m[3] !== undefined || m[4] !== undefined)
        md.inline(parent.appendChild(el('strong')), m[3] !== undefined ? m[3] : m[4]);
      else if (m[5] !== undefined || m[7] !== undefined)
        md.inline(parent.appendChild(el('em')), m[5] !== undefined ? m[5] : m[7]);
      else if (m[8] !== undefined)
        parent.appendChild(md.link(m[8], m[9]));
      else
        parent.appendChild(md.link(m[10], m[10]));
      at = re.lastIndex;
    }
    if (at < s.length)
      parent.appendChild(document.createTextNode(clean(s.slice(at))));
  },

  /* A link whose href is kept only when it is http(s) or mailto. */
  link(text, href) {
    let url = null;
    try {
      url = new URL(href, location.href);
    } catch (e) { url = null; }
    if (!url || !/^(https?|mailto):$/.test(url.protocol))
      return document.createTextNode(clean(text + ' (' + href + ')'));
    const a = el('a', null, text);
    a.href = url.href;
    a.rel = 'noopener noreferrer nofollow';
    a.target = '_blank';
    return a;
  },

  /* The block that starts at lines[i]; returns the next index. */
  block(out, lines, i) {
    const line = lines[i];
    let m;
    if ((m = /^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)/.exec(line))) {
      const fence = m[1], code = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence); i++)
        code.push(lines[i]);
      const pre = out.appendChild(el('pre'));
      const c = pre.appendChild(el('code', null, code.join('\n'), true));
      if (m[2])
        c.dataset.lang = m[2];
      return i + 1;
    }
    if ((m = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line))) {
      md.inline(out.appendChild(el('h' + Math.min(m[1].length, 4))), m[2]);
      return i + 1;
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.appendChild(el('hr'));
      return i + 1;
    }
    if (/^\s{0,3}>/.test(line)) {
      const inner = [];
      for (; i < lines.length && /^\s{0,3}>/.test(lines[i]); i++)
        inner.push(lines[i].replace(/^\s{0,3}>\s?/, ''));
      md.blocks(out.appendChild(el('blockquote')), inner);
      return i;
    }
    if (/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(line))
      return md.list(out, lines, i);
    if (/^( {4}|\t)/.test(line)) {
      const code = [];
      for (; i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim()); i++)
        code.push(lines[i].replace(/^( {4}|\t)/, ''));
      while (code.length && !code[code.length - 1].trim())
        code.pop();
      out.appendChild(el('pre')).appendChild(el('code', null, code.join('\n'), true));
      return i;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !md.starts(lines[i]); i++)
      para.push(lines[i]);
    if (!para.length)
      para.push(lines[i++]);
    const p = out.appendChild(el('p'));
    para.forEach((l, n) => {
      if (n)
        p.appendChild(el('br'));
      md.inline(p, l.trim());
    });
    return i;
  },

  /* 1 when line opens a block other than a paragraph. */
  starts(line) {
    return /^\s{0,3}(`{3,}|~{3,}|#{1,6}\s|>|([-*+]|\d{1,9}[.)])\s+)/.test(line) ||
      /^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line);
  },

  /* A list from lines[i]: items and their indented continuation lines. */
  list(out, lines, i) {
    const ordered = /^\s{0,3}\d/.test(lines[i]);
    const list = out.appendChild(el(ordered ? 'ol' : 'ul'));
    const item = /^(\s{0,3})([-*+]|\d{1,9}[.)])\s+(.*)$/;
    let m = item.exec(lines[i]);
    if (ordered) {
      const n = parseInt(m[2], 10);
      if (n > 1)
        list.start = n;
    }
    while (i < lines.length && (m = item.exec(lines[i])) &&
           /^\d/.test(m[2]) === ordered) {
      const body = [m[3]];
      for (i++; i < lines.length && /^(\s{2,}|\t)\S/.test(lines[i]) && !item.test(lines[i]); i++)
        body.push(lines[i].trim());
      md.blocks(list.appendChild(el('li')), body, true);
      while (i < lines.length && !lines[i].trim() && i + 1 < lines.length &&
             item.test(lines[i + 1]))
        i++;
    }
    return i;
  },

  /* Every block of lines into out; tight: a lone paragraph without <p>. */
  blocks(out, lines, tight) {
    if (tight && lines.length && !lines.some((l, n) => n && md.starts(l))) {
      md.inline(out, lines.join(' '));
      return;
    }
    for (let i = 0; i < lines.length;) {
      if (!lines[i].trim()) {
        i++;
        continue;
      }
      i = md.block(out, lines, i);
    }
  },

  /* A <div class="md"> holding text rendered. */
  render(text) {
    const div = el('div', 'md');
    md.blocks(div, clean(text, true).replace(/\t/g, '    ').split('\n'));
    return div;
  },
};

/* -------------------------------------------------------------- state -- */

const st = {
  room: null,
  me: null,
  owner: null,
  ws: null,
  open: false,
  denied: false,
  retry: 0,
  lastSeq: 0,
  seen: new Set(),
  streams: new Map(),     /* turn -> {li, text} of the answer streaming in */
  tools: new Map(),       /* call or exec id -> {li, pre, size} */
  approvals: new Map(),   /* approval id -> card */
  consents: new Map(),    /* consent id -> card */
  typing: new Map(),      /* user -> timer */
  lastTyping: 0,
  turn: false,
  term: null,             /* the terminal, once loaded */
  execId: 0,
  shown: false,           /* a line has been shown */
  stick: true,            /* the log follows new lines */
  sent: [],               /* lines sent from this page, for Up */
  recall: 0,              /* which of them the box shows */
};

/* ---------------------------------------------------------------- log -- */

/* Put li into the log at its place by seq (events without one go last;
 * a reply, which carries the seq of the room's last event, goes after
 * that event). */
function place(li, ev) {
  const log = $('log');
  const seq = ev && Number.isInteger(ev.seq) ? ev.seq : 0;
  li.dataset.seq = seq;
  let before = null;
  if (seq) {
    for (let n = log.lastElementChild; n; n = n.previousElementSibling) {
      const s = Number(n.dataset.seq);
      if (!s || s <= seq)
        break;
      before = n;
    }
  }
  log.insertBefore(li, before);
  if (!st.shown) {
    /* For the README's load time: navigation to the first line shown. */
    st.shown = true;
    performance.mark('atrium-first-line');
  }
  while (log.childElementCount > MAX_LOG)
    log.removeChild(log.firstElementChild);
  return li;
}

/* A log item: its time, then body (a node) under class cls. */
function line(ev, cls, body) {
  const li = el('li', cls);
  li.appendChild(timeEl(ev && ev.time));
  const b = li.appendChild(el('div', 'body'));
  if (body)
    b.appendChild(body);
  return place(li, ev);
}

/* A line of the room's own (notices, changes): dim text. */
function sysLine(ev, text) {
  return line(ev, 'sys', el('span', 'text', text, true));
}

function errLine(ev, text) {
  return line(ev, 'err', el('span', 'text', text, true));
}

/* Someone's words: their name, then the text (Markdown for the agent). */
function said(ev, user, text, cls) {
  const frag = document.createDocumentFragment();
  frag.appendChild(el('span', 'who', user));
  frag.appendChild(user === 'agent' ? md.render(text) : el('span', 'text', text, true));
  return line(ev, cls, frag);
}

/* Keep the log at its bottom while the reader is there, whatever grows
 * it (a line, a streamed answer, a card answered, a panel opened); once
 * they scroll up it stays where they are until they come back down. */
function followLog() {
  const log = $('log');
  const bottom = () => {
    if (st.stick)
      log.scrollTop = log.scrollHeight;
  };
  log.addEventListener('scroll', () => {
    st.stick = log.scrollHeight - log.scrollTop - log.clientHeight < 60;
  });
  new MutationObserver(bottom).observe(log, { childList: true, subtree: true, characterData: true });
  new ResizeObserver(bottom).observe(log);
}

/* ------------------------------------------------------------ sending -- */

function send(obj) {
  if (!st.ws || !st.open) {
    errLine(null, 'Not connected: the line was not sent. It reconnects by itself; try again in a moment.');
    return false;
  }
  st.ws.send(JSON.stringify(obj));
  return true;
}

/* ------------------------------------------------------- agent events -- */

/* The streaming answer of turn (a new log item when none). */
function stream(ev) {
  const key = String(ev.turn == null ? '' : ev.turn);
  let s = st.streams.get(key);
  if (!s) {
    const frag = document.createDocumentFragment();
    frag.appendChild(el('span', 'who', 'agent'));
    const li = line(ev, 'agent streaming', frag);
    s = { li, text: '', body: null, queued: false };
    st.streams.set(key, s);
  }
  return s;
}

/* Draw a stream's text again, once per frame however many deltas came. */
function redraw(s) {
  if (s.queued)
    return;
  s.queued = true;
  requestAnimationFrame(() => {
    s.queued = false;
    const body = s.li.querySelector('.body');
    const node = md.render(s.text);
    if (s.body)
      body.replaceChild(node, s.body);
    else
      body.appendChild(node);
    s.body = node;
  });
}

/* A tool call or a shared command: a collapsible item with its output. */
function toolItem(ev, id, title, input) {
  const d = el('details', 'tool');
  const sum = d.appendChild(el('summary', null, title));
  if (input)
    d.appendChild(el('pre', null, input, true));
  const pre = d.appendChild(el('pre', 'out'));
  pre.hidden = true;
  const li = line(ev, 'sys', d);
  const t = { li, pre, sum, size: 0 };
  if (id != null)
    st.tools.set(String(id), t);
  return t;
}

/* What a call's input says in one line (a bash call: its command). */
function inputText(input) {
  if (input && typeof input === 'object') {
    if (typeof input.command === 'string')
      return input.command;
    if (typeof input.path === 'string')
      return input.path;
    return JSON.stringify(input);
  }
  return input == null ? '' : String(input);
}

function appendOutput(id, text) {
  const t = st.tools.get(String(id));
  if (!t || typeof text !== 'string' || t.size >= MAX_TOOL_OUTPUT)
    return;
  const s = clean(text, true).slice(0, MAX_TOOL_OUTPUT - t.size);
  t.size += s.length;
  t.pre.hidden = false;
  t.pre.appendChild(document.createTextNode(s));
  if (t.size >= MAX_TOOL_OUTPUT)
    t.pre.appendChild(document.createTextNode('\n[more output not shown]'));
}

function setTurn(on) {
  st.turn = on;
  $('btn-stop').disabled = !on;
  status(on ? 'the agent is working' : 'connected', on ? 'busy' : '');
}

/* ---------------------------------------------------------- approvals -- */

/* A card asking the room's members to approve a call. */
function approvalCard(ev) {
  const id = String(ev.id);
  let card = st.approvals.get(id);
  if (card) {
    if (!ev.replay && !card.done)
      arm(card, ev);
    return;
  }
  const box = el('div', 'card');
  box.appendChild(el('div', null, 'The agent asks to run ' + clean(ev.tool) +
    (ev.modifies ? ' (it may change files)' : '') + ':'));
  box.appendChild(el('pre', 'mono', inputText(ev.input), true));
  const rowEl = box.appendChild(el('div', 'row'));
  card = { box, row: rowEl, done: false, timer: 0 };
  st.approvals.set(id, card);
  line(ev, '', box);
  if (!ev.replay)
    arm(card, ev);
  else
    rowEl.appendChild(el('span', 'hint', 'asked'));
}

/* Give card its buttons: approve; deny with an optional reason. */
function arm(card, ev) {
  const row = card.row;
  row.textContent = '';
  const yes = row.appendChild(el('button', 'approve', 'Approve'));
  const no = row.appendChild(el('button', 'deny', 'Deny'));
  const why = row.appendChild(el('input'));
  why.placeholder = 'reason (optional, sent with a denial)';
  why.maxLength = 1000;
  why.setAttribute('aria-label', 'Reason for a denial');
  const left = row.appendChild(el('span', 'hint'));
  yes.type = no.type = 'button';
  const answer = (ok) => {
    const req = { type: 'approve', id: ev.id, approve: ok };
    if (!ok && why.value.trim())
      req.reason = why.value.trim();
    if (send(req)) {
      yes.disabled = no.disabled = why.disabled = true;
      left.textContent = ok ? 'approved, waiting for the room' : 'denied, waiting for the room';
    }
  };
  yes.addEventListener('click', () => answer(true));
  no.addEventListener('click', () => answer(false));
  why.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      answer(false);
    }
  });
  let secs = Number.isFinite(ev.seconds) ? Math.floor(ev.seconds) : 0;
  const tick = () => {
    if (secs > 0 && !yes.disabled)
      left.textContent = secs + ' s left';
    secs--;
  };
  tick();
  clearInterval(card.timer);
  card.timer = setInterval(tick, 1000);
}

function approvalResult(ev) {
  const card = st.approvals.get(String(ev.id));
  const text = typeof ev.text === 'string' ? ev.text :
    clean(ev.tool) + ' ' + clean(ev.status) + (ev.user ? ' by ' + clean(ev.user) : '');
  if (!card) {
    sysLine(ev, text);
    return;
  }
  clearInterval(card.timer);
  card.done = true;
  card.box.classList.add('done');
  card.row.textContent = '';
  const reason = typeof ev.reason === 'string' && !text.includes(ev.reason) ? ': ' + clean(ev.reason) : '';
  card.row.appendChild(el('span', 'hint', text + reason));
}

/* --------------------------------------------------- undo and consent -- */

/* What a preview or done event does to the files, a row per list, in
 * the chat's words (a redo brings back what it added). */
function pathList(ev) {
  const redo = ev.type.startsWith('redo');
  const ul = el('ul', 'paths');
  const row = (list, verb, cls) => {
    const paths = names(list);
    if (!paths.length)
      return;
    const li = ul.appendChild(el('li', cls));
    li.appendChild(el('span', 'verb', verb + ': '));
    li.appendChild(el('span', 'mono', paths.slice(0, 200).join(', ') +
      (paths.length > 200 ? ', …' : '')));
  };
  row(ev.added, redo ? 'brings back' : 'removes', redo ? 'add' : 'del');
  row(ev.removed, redo ? 'removes' : 'brings back', redo ? 'del' : 'add');
  row(ev.modified, 'changes back', 'mod');
  if (ev.truncated)
    ul.appendChild(el('li', null, '(more files than listed)'));
  return ul;
}

/* What an undo, redo or restore acts on. */
function undoObject(ev) {
  return typeof ev.name === 'string' ? 'snapshot ' + clean(ev.name) :
    "the agent's turn " + clean(ev.turn);
}

/* undo_preview, redo_preview, restore_preview: what it would do, and a
 * button that does it. */
function preview(ev) {
  const what = ev.type.replace('_preview', '');
  const box = el('div', 'card');
  box.appendChild(el('div', null, '/' + what + ' would ' +
    (what === 'restore' ? 'restore the workspace to ' : what + ' ') + undoObject(ev) + ':'));
  box.appendChild(pathList(ev));
  const users = names(ev.users), ask = names(ev.ask);
  if (users.length)
    box.appendChild(el('div', null, 'It also takes back what ' + users.join(', ') + ' changed since.'));
  if (ask.length)
    box.appendChild(el('div', null, ask.join(', ') + ' will be asked to agree (' +
      (Number.isFinite(ev.seconds) ? ev.seconds : 120) + ' s).'));
  const row = box.appendChild(el('div', 'row'));
  const go = row.appendChild(el('button', 'approve', what === 'undo' ? 'Undo it' : what === 'redo' ? 'Redo it' : 'Restore it'));
  const cancel = row.appendChild(el('button', null, 'Cancel'));
  go.type = cancel.type = 'button';
  const finish = (text) => {
    row.textContent = '';
    row.appendChild(el('span', 'hint', text));
    box.classList.add('done');
    $('input').focus();
  };
  go.addEventListener('click', () => {
    const req = { type: what, confirm: true };
    if (what === 'restore')
      req.name = ev.name;
    if (send(req))
      finish('asked');
  });
  cancel.addEventListener('click', () => finish('cancelled'));
  line(ev, '', box);
  go.focus();
}

/* undo_done, redo_done, restore_done. */
function done(ev) {
  const what = ev.type.replace('_done', '');
  const box = document.createDocumentFragment();
  box.appendChild(el('div', null, clean(ev.user) + ' ' +
    (what === 'undo' ? 'undid ' : what === 'redo' ? 'redid ' : 'restored the workspace to ') +
    undoObject(ev) + (ev.forced ? ', forced over the work of ' + names(ev.over).join(', ') : '')));
  box.appendChild(pathList(ev));
  line(ev, 'sys', box);
}

function consentRequest(ev) {
  const box = el('div', 'card');
  const users = names(ev.users);
  box.appendChild(el('div', null, clean(ev.user) + ' asks ' + users.join(', ') +
    ' to agree to /' + clean(ev.action) + ' ' + undoObject(ev) + ', which takes back their work:'));
  box.appendChild(pathList(ev));
  const row = box.appendChild(el('div', 'row'));
  const card = { box, row };
  st.consents.set(String(ev.id), card);
  line(ev, '', box);
  if (ev.replay || !users.includes(st.me)) {
    row.appendChild(el('span', 'hint', 'waiting for ' + users.join(', ')));
    return;
  }
  const yes = row.appendChild(el('button', 'approve', 'Agree'));
  const no = row.appendChild(el('button', 'deny', 'Refuse'));
  yes.type = no.type = 'button';
  const answer = (ok) => {
    if (send({ type: 'consent', id: ev.id, approve: ok }))
      yes.disabled = no.disabled = true;
  };
  yes.addEventListener('click', () => answer(true));
  no.addEventListener('click', () => answer(false));
}

function consentEnd(ev) {
  const card = st.consents.get(String(ev.id));
  const text = clean(ev.action) + ': ' + clean(ev.result) +
    (ev.user ? ' (' + clean(ev.user) + ')' : '') + (ev.text ? ': ' + clean(ev.text) : '');
  if (!card) {
    sysLine(ev, text);
    return;
  }
  card.box.classList.add('done');
  card.row.textContent = '';
  card.row.appendChild(el('span', 'hint', text));
}

/* ----------------------------------------------------------- presence -- */

function presence(ev) {
  const users = names(ev.users);
  const term = names(ev.term);
  const p = $('presence');
  p.textContent = users.length ? 'here: ' + users.join(', ') : '';
  p.title = users.map((u) => u + (term.includes(u) ? ' (in the terminal)' : '')).join('\n');
  $('term-members').textContent = term.length ? '(' + term.join(', ') + ')' : '';
  if (ev.replay)
    return;
  if (typeof ev.joined === 'string')
    sysLine(ev, clean(ev.joined) + ' joined');
  if (typeof ev.left === 'string')
    sysLine(ev, clean(ev.left) + ' left');
}

function typing(ev) {
  const who = clean(ev.user);
  if (!who || who === st.me)
    return;
  clearTimeout(st.typing.get(who));
  st.typing.set(who, setTimeout(() => {
    st.typing.delete(who);
    showTyping();
  }, 4000));
  showTyping();
}

function showTyping() {
  const who = [...st.typing.keys()];
  $('typing').textContent = who.length ? who.join(', ') + (who.length > 1 ? ' are' : ' is') + ' typing…' : '';
}

/* ------------------------------------------------------------- events -- */

/* One handler per event type; types not here are shown by their text, or
 * not at all. */
const on = {
  welcome(ev) {
    st.me = clean(ev.user);
    st.owner = clean(ev.owner);
    $('room-name').textContent = clean(ev.room || st.room);
    document.title = clean(ev.room || st.room) + ' · Atrium';
    status('connected', '');
    /* What happened before (or while away): the room answers with the
     * stored events, placed by seq and each shown once. */
    const req = { type: 'history', limit: 200 };
    if (st.lastSeq)
      req.since = st.lastSeq;
    send(req);
    send({ type: 'who' });
    probeFiles();
    if (st.term && !$('term-panel').hidden)
      termSize('term_open');
  },
  message(ev) {
    const user = clean(ev.user);
    if (user === 'agent') {
      const key = String(ev.turn == null ? '' : ev.turn);
      const s = st.streams.get(key);
      if (s) {
        /* The finished text replaces what streamed. */
        st.streams.delete(key);
        s.li.classList.remove('streaming');
        s.text = typeof ev.text === 'string' ? ev.text : s.text;
        s.li.dataset.seq = Number.isInteger(ev.seq) ? ev.seq : 0;
        const body = s.li.querySelector('.body');
        const node = md.render(s.text);
        if (s.body)
          body.replaceChild(node, s.body);
        else
          body.appendChild(node);
        s.body = node;
        s.queued = true;     /* a frame still queued draws nothing */
        return;
      }
    }
    said(ev, user, ev.text, user === 'agent' ? 'agent' : '');
  },
  prompt(ev) { said(ev, clean(ev.user), ev.text, 'prompt'); },
  agent_delta(ev) {
    if (typeof ev.text !== 'string')
      return;
    const s = stream(ev);
    s.text += ev.text;
    redraw(s);
  },
  agent_discard(ev) {
    const key = String(ev.turn == null ? '' : ev.turn);
    const s = st.streams.get(key);
    if (s) {
      s.li.remove();
      st.streams.delete(key);
    }
  },
  turn_start(ev) {
    if (!ev.replay)
      setTurn(true);
  },
  turn_end(ev) {
    if (!ev.replay)
      setTurn(false);
    for (const [key, s] of st.streams) {
      s.li.classList.remove('streaming');
      st.streams.delete(key);
    }
  },
  tool_call(ev) {
    toolItem(ev, ev.id, 'agent ▸ ' + clean(ev.name) + ': ' + clean(inputText(ev.input)).slice(0, 200),
      ev.input && typeof ev.input === 'object' && typeof ev.input.command !== 'string'
        ? JSON.stringify(ev.input, null, 2) : null);
  },
  approval_request: approvalCard,
  approval_result: approvalResult,
  tool_output(ev) { appendOutput(ev.id, ev.text); },
  tool_result(ev) {
    const t = st.tools.get(String(ev.id));
    if (!t) {
      sysLine(ev, clean(ev.name) + ': ' + clean(ev.status));
      return;
    }
    if (ev.status !== 'ok')
      t.sum.appendChild(el('span', 'hint', ' (' + clean(ev.status) + ')'));
    if (!t.size && typeof ev.output === 'string')
      appendOutput(ev.id, ev.output);
  },
  exec_start(ev) {
    toolItem(ev, 'x' + ev.id, clean(ev.user) + ' ran: ' + clean(ev.command));
  },
  exec_output(ev) { appendOutput('x' + ev.id, ev.text); },
  exec_result(ev) {
    const t = st.tools.get('x' + ev.id);
    if (!t) {
      if (typeof ev.stdout === 'string' || typeof ev.stderr === 'string') {
        /* One's own command, not shared: its output in one item. */
        const o = toolItem(ev, 'x' + ev.id, 'exit ' + clean(ev.exitCode));
        appendOutput('x' + ev.id, (ev.stdout || '') + (ev.stderr || ''));
        o.li.querySelector('details').open = true;
      }
      return;
    }
    if (!t.size)
      appendOutput('x' + ev.id, (ev.stdout || '') + (ev.stderr || ''));
    t.sum.appendChild(el('span', 'hint', ' (exit ' + clean(ev.exitCode) +
      (ev.signal ? ', ' + clean(ev.signal) : '') + ')'));
  },
  presence,
  typing,
  undo_preview: preview,
  redo_preview: preview,
  restore_preview: preview,
  undo_done: done,
  redo_done: done,
  restore_done: done,
  consent_request: consentRequest,
  consent_answer(ev) {
    const card = st.consents.get(String(ev.id));
    if (card)
      card.box.appendChild(el('div', 'hint', clean(ev.user) + (ev.approve ? ' agreed' : ' refused')));
  },
  consent_end: consentEnd,
  notice(ev) { sysLine(ev, ev.text); },
  dropped(ev) {
    /* This page fell behind and atriumd-http dropped what waited for it:
     * the stored events come again from the room, placed by seq. */
    sysLine(ev, 'This page fell behind and missed some of the room; fetching it again.');
    send({ type: 'history', since: st.lastSeq, limit: 500 });
  },
  error(ev) { errLine(ev, ev.message || 'error'); },
  access_denied(ev) {
    st.denied = true;
    errLine(ev, ev.message || 'You may not enter this room.');
    status('not allowed in', 'bad');
  },
  config(ev) {
    if (ev.replay === undefined && ev.changed === undefined)
      return;
    sysLine(ev, (ev.user ? clean(ev.user) + ' set ' : 'settings: ') + 'model ' + clean(ev.model) +
      ', approval ' + clean(ev.approval));
  },
  term_screen(ev) { if (st.term) termDraw(ev); },
  term_end(ev) {
    sysLine(ev, 'The shared terminal ended: ' + clean(ev.reason) + '; /term starts a new one.');
    if (st.term) {
      st.term.attached = false;
      st.term.x.reset();
    }
    $('term-panel').hidden = true;
    $('input').focus();
  },
  snapshots(ev) {
    sysLine(ev, 'snapshots: ' + asList(ev.snapshots).map((s) => s && clean(s.name)).join(', '));
  },
  usage(ev) {
    sysLine(ev, 'model tokens today: ' + clean(ev.input_tokens) + ' in, ' + clean(ev.output_tokens) + ' out');
  },
};

/* Events of these types say what happened in their text field. */
const BY_TEXT = ['access', 'snapshot', 'limits', 'caps', 'imported', 'compaction'];

/* The types the room stores and replays (atrium-agent(8), "From the
 * room", those marked *): each has a seq of its own. */
const STORED = new Set(['message', 'prompt', 'turn_start', 'tool_call',
  'approval_request', 'approval_result', 'tool_result', 'turn_end', 'exec_start',
  'exec_result', 'config', 'compaction', 'access', 'snapshot', 'limits', 'caps',
  'imported', 'undo_done', 'redo_done', 'restore_done', 'consent_request',
  'consent_answer', 'consent_end']);

function dispatch(ev) {
  if (!ev || typeof ev !== 'object' || typeof ev.type !== 'string')
    return;
  /* Only a stored event's seq is its own (a reply to this page carries
   * the seq of the room's last event): those are shown once each, and
   * the last of them is where a reconnect resumes. */
  if (Number.isInteger(ev.seq) && ev.seq > 0 && STORED.has(ev.type)) {
    /* A waiting approval comes again, live, to one who joins: not a
     * repeat to drop. */
    if (st.seen.has(ev.seq) && !(ev.type === 'approval_request' && !ev.replay))
      return;
    st.seen.add(ev.seq);
    if (ev.seq > st.lastSeq)
      st.lastSeq = ev.seq;
  }
  const h = Object.prototype.hasOwnProperty.call(on, ev.type) ? on[ev.type] : null;
  if (h)
    h(ev);
  else if (BY_TEXT.includes(ev.type) && typeof ev.text === 'string' && ev.text)
    sysLine(ev, ev.text);
  else if (ev.type === 'compaction')
    sysLine(ev, 'older turns were summarised for the model');
}

/* ------------------------------------------------------------ network -- */

function status(text, cls) {
  const s = $('status');
  s.textContent = text;
  s.className = cls || '';
}

function wsUrl() {
  return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host +
    '/api/rooms/' + encodeURIComponent(st.room) + '/ws?presence=1';
}

function connect() {
  if (st.denied)
    return;
  status('connecting', '');
  const ws = new WebSocket(wsUrl());
  st.ws = ws;
  ws.onopen = () => {
    st.open = true;
    st.retry = 0;
    showRoom();
  };
  ws.onmessage = (m) => {
    if (typeof m.data !== 'string')
      return;
    for (const text of m.data.split('\n')) {
      if (!text)
        continue;
      let ev;
      try {
        ev = JSON.parse(text);
      } catch (e) {
        continue;
      }
      dispatch(ev);
    }
  };
  ws.onclose = (e) => {
    const was = st.open;
    st.open = false;
    if (st.ws !== ws)
      return;
    if (!was) {
      whyClosed();
      return;
    }
    if (e.reason)
      errLine(null, 'The room closed the connection: ' + e.reason);
    retry();
  };
}

/* The WebSocket did not open: ask the server why (a browser hides the
 * status of a refused upgrade). */
function whyClosed() {
  fetch('/api/rooms', { credentials: 'same-origin', cache: 'no-store' })
    .then((r) => {
      if (r.status === 401) {
        showSignin('');
        return;
      }
      if (r.ok) {
        return r.json().then((list) => {
          const rooms = Array.isArray(list) ? list : asList(list && list.rooms);
          const known = rooms.some((x) => (typeof x === 'string' ? x : x && (x.room || x.name)) === st.room);
          if (known) {
            retry();
            return;
          }
          /* Not a passing failure: say so once and stop asking. */
          st.denied = true;
          showRoom();
          status('not here', 'bad');
          errLine(null, 'Room ' + st.room + ' does not exist, or this token may not enter it. ' +
            'A room is made by its first chat (ssh -t ' + st.room + '@HOST); ' +
            'Sign out to use another token.');
        });
      }
      status('server answered ' + r.status, 'bad');
      retry();
    })
    .catch(() => {
      status('offline', 'bad');
      retry();
    });
}

function retry() {
  if (st.denied)
    return;
  status('reconnecting', 'bad');
  const wait = Math.min(10000, 500 * Math.pow(2, st.retry++));
  setTimeout(connect, wait);
}

/* ------------------------------------------------------------ sign-in -- */

function showSignin(msg) {
  $('signin').hidden = false;
  $('room').hidden = true;
  $('compose').hidden = true;
  $('actions').hidden = true;
  $('signin-room').textContent = st.room;
  $('signin-error').textContent = msg || '';
  status('signed out', '');
  $('token').focus();
}

function showRoom() {
  const first = $('room').hidden;
  $('signin').hidden = true;
  $('room').hidden = false;
  $('compose').hidden = false;
  $('actions').hidden = false;
  if (first)
    $('input').focus();
}

function signIn(e) {
  e.preventDefault();
  const input = $('token');
  const token = input.value.trim();
  input.value = '';
  if (!token)
    return;
  $('signin-error').textContent = 'signing in…';
  fetch('/api/session', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { Authorization: 'Bearer ' + token },
  }).then((r) => {
    if (r.ok) {
      $('signin-error').textContent = '';
      st.denied = false;
      connect();
      return;
    }
    return r.json().catch(() => ({})).then((j) => {
      $('signin-error').textContent = (j && typeof j.error === 'string' ? clean(j.error) : 'refused (' + r.status + ')');
      input.focus();
    });
  }).catch(() => {
    $('signin-error').textContent = 'The server could not be reached; try again.';
  });
}

function signOut() {
  fetch('/api/session', { method: 'DELETE', credentials: 'same-origin' }).finally(() => {
    st.denied = true;
    if (st.ws)
      st.ws.close();
    st.ws = null;
    showSignin('Signed out.');
  });
}

/* ------------------------------------------------------------ compose -- */

const HELP = 'Enter sends, Shift+Enter a new line, Up and Down the lines sent before; "@agent ..." asks the agent. ' +
  'Commands: /undo, /redo, /stop, /term, /files, /who, /usage, /snapshots, /snapshot NAME, /restore NAME, /help; ' +
  '!CMD runs CMD in the workspace for everyone to see. ' +
  'Keys: / or Alt+M the message box, Alt+T the terminal (Esc back), Alt+F the files, Esc closes a panel.';

/* A line starting with "/": one of the page's commands. */
function command(text) {
  const [cmd] = text.split(/\s+/, 1);
  switch (cmd) {
  case '/undo': send({ type: 'undo' }); return;
  case '/redo': send({ type: 'redo' }); return;
  case '/stop': send({ type: 'stop' }); return;
  case '/who': send({ type: 'who' }); return;
  case '/usage': send({ type: 'usage' }); return;
  case '/snapshots': send({ type: 'snapshots' }); return;
  case '/snapshot':
  case '/restore': {
    const name = text.slice(cmd.length).trim();
    if (!name)
      errLine(null, 'usage: ' + cmd + ' NAME (/snapshots lists them)');
    else
      send({ type: cmd.slice(1), name });
    return;
  }
  case '/term': openTerm(); return;
  case '/files':
    if ($('btn-files').hidden)
      errLine(null, 'This server does not serve the workspace\'s files.');
    openFiles('');
    return;
  case '/help': sysLine(null, HELP); return;
  default:
    errLine(null, 'Unknown command ' + cmd + ': /help lists them; start a line with // to send it as it is.');
  }
}

function submit(e) {
  if (e)
    e.preventDefault();
  const input = $('input');
  const text = input.value;
  if (!text.trim())
    return;
  if (text.startsWith('//')) {
    if (!send({ type: 'chat', text: text.slice(1) }))
      return;
  } else if (text.startsWith('/')) {
    command(text.trim());
  } else if (text.startsWith('!') && text.length > 1) {
    if (!send({ type: 'exec', id: 'web-' + (++st.execId), command: text.slice(1), share: true }))
      return;
  } else if (!send({ type: 'chat', text })) {
    return;
  }
  st.sent.push(text);
  if (st.sent.length > 50)
    st.sent.shift();
  st.recall = st.sent.length;
  input.value = '';
  grow();
}

/* Up and Down in the message box: the lines sent before, while the box
 * is empty or shows one of them unchanged. */
function recall(e) {
  const input = $('input');
  const showing = st.recall < st.sent.length && input.value === st.sent[st.recall];
  if ((input.value && !showing) || e.shiftKey || e.altKey || e.ctrlKey)
    return false;
  const next = st.recall + (e.key === 'ArrowUp' ? -1 : 1);
  if (next < 0 || next > st.sent.length)
    return false;
  st.recall = next;
  input.value = next < st.sent.length ? st.sent[next] : '';
  grow();
  return true;
}

/* The message box as tall as its text, up to its CSS maximum. */
function grow() {
  const input = $('input');
  input.style.height = 'auto';
  input.style.height = input.scrollHeight + 2 + 'px';
}

function onInputKey(e) {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    submit(e);
    return;
  }
  if ((e.key === 'ArrowUp' || e.key === 'ArrowDown') && recall(e)) {
    e.preventDefault();
    return;
  }
  const now = Date.now();
  if (st.open && now - st.lastTyping > 3000 && e.key.length === 1) {
    st.lastTyping = now;
    st.ws.send('{"type":"typing"}');
  }
}

/* Keys anywhere on the page. */
function onKey(e) {
  const t = e.target;
  const inField = t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.isContentEditable);
  const inTerm = t && t.closest && t.closest('#term');
  if (e.altKey && !e.ctrlKey && !e.metaKey) {
    const k = e.key.toLowerCase();
    if (k === 't' || k === 'f' || k === 'm') {
      e.preventDefault();
      if (k === 't')
        openTerm();
      else if (k === 'f')
        openFiles(null);
      else
        $('input').focus();
    }
    return;
  }
  if (inTerm)
    return;          /* the terminal's own handler sees every key */
  if (e.key === 'Escape') {
    if (!$('files-panel').hidden) {
      $('files-panel').hidden = true;
      $('input').focus();
    } else if (!$('term-panel').hidden) {
      closeTerm(false);
    }
    return;
  }
  if (!inField && e.key === '/' && !$('room').hidden) {
    e.preventDefault();
    $('input').focus();
  }
}

/* ----------------------------------------------------------- terminal -- */

/* Load a script or stylesheet of /assets once; a promise. */
function loadAsset(url, css) {
  return new Promise((resolve, reject) => {
    const n = document.createElement(css ? 'link' : 'script');
    if (css) {
      n.rel = 'stylesheet';
      n.href = url;
    } else {
      n.src = url;
    }
    n.onload = () => resolve();
    n.onerror = () => reject(new Error('could not load ' + url));
    document.head.appendChild(n);
  });
}

let xtermLoading = null;

function loadXterm() {
  if (!xtermLoading)
    xtermLoading = Promise.all([
      loadAsset('/assets/xterm.css', true),
      loadAsset('/assets/xterm.js').then(() => loadAsset('/assets/addon-fit.js')),
    ]);
  return xtermLoading;
}

function openTerm() {
  $('files-panel').hidden = true;
  $('term-panel').hidden = false;
  loadXterm().then(() => {
    if (!st.term)
      makeTerm();
    st.term.fit.fit();
    if (!st.term.attached)
      termSize('term_open');
    st.term.x.focus();
  }).catch((err) => errLine(null, err.message + '; is the page installed whole?'));
}

/* Leave the terminal for the message box; close: also detach from it. */
function closeTerm(detach) {
  if (detach && st.term && st.term.attached) {
    send({ type: 'term_close' });
    st.term.attached = false;
  }
  if (detach || !window.matchMedia('(min-width: 1000px)').matches)
    $('term-panel').hidden = true;
  $('input').focus();
}

/* xterm.js styles its rows through <style> elements it fills at run time,
 * which the page's Content-Security-Policy (style-src 'self', no inline
 * style) does not apply.  Their text is xterm.js's own (sizes, colours of
 * its theme; the page never writes a sequence that changes them), so each
 * is mirrored into a constructed stylesheet, which the policy allows. */
function mirrorStyles(root) {
  const sheets = new Map();
  const sync = (node) => {
    let sheet = sheets.get(node);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheets.set(node, sheet);
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    }
    sheet.replaceSync(node.textContent || '');
  };
  new MutationObserver((list) => {
    for (const m of list) {
      const n = m.target.nodeType === Node.TEXT_NODE ? m.target.parentNode : m.target;
      if (n && n.tagName === 'STYLE')
        sync(n);
      for (const a of m.addedNodes)
        if (a.tagName === 'STYLE')
          sync(a);
        else if (a.querySelectorAll)
          a.querySelectorAll('style').forEach(sync);
    }
  }).observe(root, { subtree: true, childList: true, characterData: true });
}

function makeTerm() {
  mirrorStyles($('term'));
  const x = new window.Terminal({
    cursorBlink: true, scrollback: 0, convertEol: false,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace', fontSize: 13,
  });
  const fit = new window.FitAddon.FitAddon();
  x.loadAddon(fit);
  x.open($('term'));
  st.term = { x, fit, attached: false, cols: 0, rows: 0 };
  x.attachCustomKeyEventHandler((e) => {
    if (e.type === 'keydown' && ((e.key === 'Escape' && !e.ctrlKey) ||
        (e.key === ']' && e.ctrlKey))) {
      e.preventDefault();
      closeTerm(false);
      return false;
    }
    if (e.type === 'keydown' && e.altKey && /^[tfm]$/i.test(e.key))
      return false;   /* the page's keys */
    return true;
  });
  x.onData(termInput);
  new ResizeObserver(() => {
    if ($('term-panel').hidden)
      return;
    st.term.fit.fit();
    termSize('term_resize');
  }).observe($('term'));
}

/* term_open or term_resize with this page's area for the terminal. */
function termSize(type) {
  const t = st.term;
  const cols = Math.max(10, Math.min(500, t.x.cols));
  const rows = Math.max(2, Math.min(200, t.x.rows));
  if (type === 'term_resize' && (!t.attached || (cols === t.cols && rows === t.rows)))
    return;
  if (send({ type, cols, rows })) {
    t.cols = cols;
    t.rows = rows;
    t.attached = true;
  }
}

/* Keys for the shell, in term_input lines of at most TERM_INPUT_MAX bytes,
 * never splitting a character. */
function termInput(data) {
  const enc = new TextEncoder();
  let chunk = '', bytes = 0;
  for (const ch of data) {
    const n = enc.encode(ch).length;
    if (bytes + n > TERM_INPUT_MAX) {
      send({ type: 'term_input', data: chunk });
      chunk = '';
      bytes = 0;
    }
    chunk += ch;
    bytes += n;
  }
  if (chunk)
    send({ type: 'term_input', data: chunk });
}

/* SGR for a run's attributes and colours, from checked numbers only. */
function sgr(attrs, fg, bg) {
  let s = '\x1b[0';
  const bits = [[1, 1], [2, 4], [4, 3], [8, 5], [16, 7], [32, 9]];
  for (const [bit, code] of bits)
    if (attrs & bit)
      s += ';' + code;
  const color = (c, base) => {
    if (!Number.isInteger(c) || c < 0)
      return '';
    if (c <= 255)
      return ';' + base + ';5;' + c;
    if (c & 0x1000000)
      return ';' + base + ';2;' + ((c >> 16) & 255) + ';' + ((c >> 8) & 255) + ';' + (c & 255);
    return '';
  };
  return s + color(fg, 38) + color(bg, 48) + 'm';
}

/* The cells of text: a base character and its combining marks each. */
function cells(text) {
  return clean(text).match(/[^\p{M}]\p{M}*/gu) || [];
}

/* Draw a term_screen event: each row cleared and its runs placed at their
 * columns, clipped to this terminal's width. */
function termDraw(ev) {
  const x = st.term.x;
  const cols = x.cols, rows = x.rows;
  let out = '';
  if (ev.full === true)
    out += '\x1b[0m\x1b[2J';
  for (const row of asList(ev.lines)) {
    if (!Array.isArray(row) || !Number.isInteger(row[0]) || row[0] < 0 || row[0] >= rows)
      continue;
    const y = row[0];
    out += '\x1b[0m\x1b[' + (y + 1) + ';1H\x1b[2K';
    for (const run of asList(row[1])) {
      if (!Array.isArray(run) || run.length < 6)
        continue;
      const [cx, w, attrs, fg, bg, text] = run;
      if (!Number.isInteger(cx) || cx < 0 || cx >= cols || (w !== 1 && w !== 2) ||
          !Number.isInteger(attrs) || typeof text !== 'string')
        continue;
      const fit = Math.floor((cols - cx) / w);
      out += '\x1b[' + (y + 1) + ';' + (cx + 1) + 'H' + sgr(attrs, fg, bg) +
        cells(text).slice(0, fit).join('');
    }
  }
  const c = asList(ev.cursor);
  out += '\x1b[0m';
  if (Number.isInteger(c[0]) && Number.isInteger(c[1]) && c[0] >= 0 && c[1] >= 0)
    out += '\x1b[' + (Math.min(c[1], rows - 1) + 1) + ';' + (Math.min(c[0], cols - 1) + 1) + 'H' +
      (c[2] ? '\x1b[?25h' : '\x1b[?25l');
  x.write(out);
  const members = names(ev.members);
  if (members.length)
    $('term-members').textContent = '(' + members.join(', ') + ')';
}

/* -------------------------------------------------------------- files -- */

let filesDir = '';

function filesUrl(path) {
  return '/api/rooms/' + encodeURIComponent(st.room) + '/files/' +
    path.split('/').filter(Boolean).map(encodeURIComponent).join('/');
}

function filesError(msg) {
  $('files-error').textContent = msg || '';
}

/* The error a failed response says, or its status. */
function why(r) {
  return r.json().then((j) => (j && typeof j.error === 'string' ? clean(j.error) : 'HTTP ' + r.status),
    () => 'HTTP ' + r.status);
}

/* A directory listing's entries, whatever its wrapper: {name, dir, size}. */
function entries(j) {
  const list = Array.isArray(j) ? j : asList(j && (j.entries || j.files || j.children));
  return list.filter((e) => e && typeof e.name === 'string').map((e) => ({
    name: clean(e.name),
    dir: e.dir === true || e.is_dir === true || e.type === 'dir' || e.type === 'directory',
    size: Number.isFinite(e.size) ? e.size : null,
  })).sort((a, b) => (b.dir - a.dir) || a.name.localeCompare(b.name));
}

/* Show the Files button once the server answers for the workspace's
 * files (a server without the files routes has none to show). */
function probeFiles() {
  if (!$('btn-files').hidden)
    return;
  fetch(filesUrl(''), { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' })
    .then((r) => {
      if (r.ok)
        $('btn-files').hidden = false;
    }).catch(() => {});
}

function openFiles(dir) {
  if ($('btn-files').hidden)
    return;
  if (dir == null)
    dir = filesDir;
  filesDir = dir;
  $('term-panel').hidden = true;
  $('files-panel').hidden = false;
  $('files-view').hidden = true;
  $('files-path').textContent = '/' + dir;
  filesError('');
  fetch(filesUrl(dir), { credentials: 'same-origin', cache: 'no-store' }).then((r) => {
    if (!r.ok)
      return why(r).then(filesError);
    return r.json().then((j) => showDir(dir, entries(j)));
  }).catch(() => filesError('The server could not be reached.'));
}

function showDir(dir, list) {
  const ul = $('files-list');
  ul.textContent = '';
  if (dir) {
    const up = dir.split('/').slice(0, -1).join('/');
    const li = ul.appendChild(el('li'));
    const b = li.appendChild(el('button', 'link name', '..'));
    b.type = 'button';
    b.addEventListener('click', () => openFiles(up));
  }
  for (const e of list) {
    const path = (dir ? dir + '/' : '') + e.name;
    const li = ul.appendChild(el('li'));
    const b = li.appendChild(el('button', 'link name', e.name + (e.dir ? '/' : '')));
    b.type = 'button';
    b.addEventListener('click', () => (e.dir ? openFiles(path) : readFile(path)));
    if (!e.dir) {
      li.appendChild(el('span', 'size', e.size == null ? '' : fmtSize(e.size)));
      const a = li.appendChild(el('a', null, 'download'));
      a.href = filesUrl(path);
      a.download = e.name;
    }
  }
  const first = ul.querySelector('button');
  if (first)
    first.focus();
}

function fmtSize(n) {
  return n < 1024 ? n + ' B' : n < 1048576 ? (n / 1024).toFixed(1) + ' KiB' : (n / 1048576).toFixed(1) + ' MiB';
}

/* Show a file's first 256 KiB as text. */
function readFile(path) {
  filesError('');
  fetch(filesUrl(path), { credentials: 'same-origin', cache: 'no-store',
    headers: { Range: 'bytes=0-262143' } }).then((r) => {
    if (!r.ok)
      return why(r).then(filesError);
    return r.text().then((t) => {
      const v = $('files-view');
      v.textContent = clean(t, true);
      v.hidden = false;
    });
  }).catch(() => filesError('The server could not be reached.'));
}

function upload() {
  const files = [...$('files-upload').files];
  $('files-upload').value = '';
  let chain = Promise.resolve();
  for (const f of files) {
    const path = (filesDir ? filesDir + '/' : '') + f.name;
    chain = chain.then(() => fetch(filesUrl(path), {
      method: 'PUT', credentials: 'same-origin', body: f,
      headers: { 'Content-Type': 'application/octet-stream' },
    })).then((r) => (r.ok ? null : why(r).then((m) => filesError(f.name + ': ' + m))));
  }
  chain.then(() => openFiles(filesDir)).catch(() => filesError('The upload was cut; try again.'));
}

/* --------------------------------------------------------------- main -- */

function start() {
  const m = ROOM_RE.exec(location.pathname);
  st.room = m ? decodeURIComponent(m[1]) : '';
  $('room-name').textContent = st.room || 'Atrium';
  followLog();
  $('signin-form').addEventListener('submit', signIn);
  $('send-form').addEventListener('submit', submit);
  $('input').addEventListener('keydown', onInputKey);
  $('input').addEventListener('input', grow);
  document.addEventListener('keydown', onKey);
  $('btn-term').addEventListener('click', openTerm);
  $('btn-files').addEventListener('click', () => openFiles(null));
  $('btn-undo').addEventListener('click', () => send({ type: 'undo' }));
  $('btn-stop').addEventListener('click', () => send({ type: 'stop' }));
  $('btn-signout').addEventListener('click', signOut);
  $('term-close').addEventListener('click', () => closeTerm(true));
  $('files-close').addEventListener('click', () => {
    $('files-panel').hidden = true;
    $('input').focus();
  });
  $('files-upload').addEventListener('change', upload);
  if (!st.room) {
    showSignin('This page is a room: open /r/ROOM.');
    return;
  }
  connect();
}

start();

})();
