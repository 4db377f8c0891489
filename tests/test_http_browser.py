"""The room in the browser (/r/ROOM on atriumd-http) as people see it: a
real headless chromium driven by selenium (Debian's chromium,
chromium-driver and python3-selenium), two browser users and one SSH user
(the real OpenSSH client in tmux) in one room, with the real agent and a
scripted model (tests/model_server.py).

Chat goes both ways between the page and the terminal chat; the agent's
answer streams into the page and its Markdown is drawn as formatting while
HTML in it (and in people's lines) stays text; an approval clicked in the
page lets the call run; keys typed in the page's terminal reach the shell
the SSH user sees in /term, and the other way; a file uploaded in the page
is there for `ssh ROOM@host cat`; the page and its files come with the
Content-Security-Policy and the headers that keep them inert.  A
screenshot of each browser is kept with the test's output (the path is
printed).

Run as root after `make all`:
    /usr/bin/python3 -m pytest -q -s tests/test_http_browser.py
"""
import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import free_port, make_room
from model_server import Reply, ToolCall
from test_term import Tmux, enter_term, line_alone

try:
    from selenium import webdriver
    from selenium.common.exceptions import (NoAlertPresentException,
                                            WebDriverException)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:         # the skip below says what is missing
    webdriver = None

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0,
                       reason="atriumd mounts FUSE: run as root"),
    pytest.mark.skipif(not shutil.which("tmux"), reason="needs tmux"),
    pytest.mark.skipif(webdriver is None or not os.path.exists(CHROMEDRIVER),
                       reason="needs chromium, chromium-driver and "
                              "python3-selenium (make deps)"),
]

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; "
       "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
       "base-uri 'none'; form-action 'self'")
HOSTILE = "<img src=x onerror=alert(1)> **not bold** `not code`"
TOKEN_RE = re.compile(r"atrium_[A-Za-z0-9_-]{43}")


@pytest.fixture
def srv(atriumd, data_dir, model_server, build):
    """atriumd with atriumd-http on a loopback port (plain HTTP, so the
    cookie goes without Secure), and eve's key authorized too: she is the
    SSH user beside the two browsers of alice and bob."""
    with open(os.path.join(str(data_dir), "authorized_keys"), "a") as f:
        f.write(data_dir.pubkey("eve") + "\n")
    port = free_port()
    env = dict(os.environ, ANTHROPIC_API_KEY="test-key")
    s = atriumd(data_dir, "--provider", "anthropic", "--model-url",
                model_server.url, "--model", "test-model",
                "--approval", "ask",
                "--http-listen", "127.0.0.1:%d" % port,
                "--http-insecure-cookie", "1",
                "--http-web-dir", os.path.join(build, "web"), env=env)
    s.http = "http://127.0.0.1:%d" % port
    deadline = time.time() + 15
    while True:
        try:
            with urllib.request.urlopen(s.http + "/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            if time.time() > deadline:
                pytest.fail("atriumd-http did not answer:\n" + s.read_log())
            time.sleep(0.05)
    return s


def make_token(ssh_run, srv, user):
    rc, out, err = ssh_run(srv, "tokens", "atrium-token", "create",
                           user=user)
    assert rc == 0, err
    m = TOKEN_RE.search(out)
    assert m, out
    return m.group(0)


def get(url, headers=None):
    """(status, headers, body) of a GET, whatever the status."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


class Browser:
    """A headless chromium on one page of the room; its own profile, so
    two of them are two people."""

    def __init__(self, tmp_path, name, width=1280, height=860):
        self.name = name
        opts = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
                  "--disable-dev-shm-usage", "--no-first-run",
                  "--user-data-dir=%s" % (tmp_path / ("chromium-" + name)),
                  "--window-size=%d,%d" % (width, height)):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        service = webdriver.ChromeService(executable_path=CHROMEDRIVER) \
            if hasattr(webdriver, "ChromeService") else None
        self.d = (webdriver.Chrome(options=opts, service=service) if service
                  else webdriver.Chrome(options=opts))
        if width < 500:
            # A window is never narrower than 500 px: a phone's width is
            # the page's viewport, as the browser's device mode sets it.
            self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 1,
                "mobile": False})
        assert self.js("return window.innerWidth") == width

    def quit(self):
        try:
            self.d.quit()
        except WebDriverException:
            pass

    def wait(self, what, timeout=30):
        """Wait until what() is true (polled every 50 ms); its value."""
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.05).until(
                lambda _: what())
        except Exception:
            pytest.fail("%s: not seen in %d s; the page says %r; its "
                        "log:\n%s\nits console:\n%s" % (
                            self.name, timeout, self.js(
                                "return document.getElementById('status')"
                                ".textContent"), self.log_text(),
                            "\n".join(str(e) for e in
                                      self.d.get_log("browser"))))

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def log_text(self):
        try:
            return self.d.find_element(By.ID, "log").text
        except WebDriverException:
            return ""

    def open_room(self, base, room, token, connected=True):
        """Load /r/ROOM, trade the token for the cookie, see the room
        (connected: wait until its WebSocket is open)."""
        self.d.get("%s/r/%s" % (base, room))
        box = self.wait(lambda: (lambda e: e.is_displayed() and e)(
            self.d.find_element(By.ID, "token")))
        box.send_keys(token + Keys.ENTER)
        if connected:
            self.wait(lambda: self.d.find_element(By.ID, "input")
                      .is_displayed() and self.d.find_element(
                          By.ID, "status").text == "connected")
        else:
            self.wait(lambda: not self.d.find_element(By.ID, "token")
                      .is_displayed())
        # The token is not kept anywhere the page's scripts can read.
        assert token not in self.js(
            "return document.cookie + JSON.stringify(localStorage) + "
            "JSON.stringify(sessionStorage) + document.body.innerHTML")

    def say(self, text):
        box = self.d.find_element(By.ID, "input")
        box.send_keys(text + Keys.ENTER)

    def lines(self):
        """The log's items as text, one string each."""
        return self.js("return [...document.querySelectorAll('#log > li')]"
                       ".map(li => li.innerText)")

    def term_rows(self):
        return self.js("return [...document.querySelectorAll("
                       "'#term .xterm-rows > div')].map(r => r.textContent)")

    def shot(self, path):
        self.d.save_screenshot(str(path))
        print("screenshot of %s: %s" % (self.name, path))


@pytest.fixture
def browsers(tmp_path):
    made = []

    def make(name, **kw):
        b = Browser(tmp_path, name, **kw)
        made.append(b)
        return b
    yield make
    for b in made:
        b.quit()


@pytest.fixture
def tmux():
    t = Tmux()
    yield t
    t.kill()


def no_alert(b):
    try:
        b.d.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


def test_page_and_assets_carry_the_policy_and_nothing_else_is_served(srv):
    """The page is served without a token (it asks for one), with the
    strict policy and headers; its files likewise, with an ETag a cache
    revalidates; no other file, nor any path out of the page's folder."""
    status, h, body = get(srv.http + "/r/webroom")
    assert status == 200, body
    assert h["Content-Security-Policy"] == CSP
    assert h["X-Content-Type-Options"] == "nosniff"
    assert h["X-Frame-Options"] == "DENY"
    assert h["Referrer-Policy"] == "no-referrer"
    assert h["Content-Type"].startswith("text/html")
    assert b'src="/assets/app.js"' in body
    # No inline script or style anywhere in the page.
    assert not re.search(rb"<script(?![^>]*\bsrc=)", body)
    assert b"<style" not in body and b" style=" not in body
    for name, kind in (("app.js", "javascript"), ("app.css", "css"),
                       ("xterm.js", "javascript"), ("xterm.css", "css"),
                       ("addon-fit.js", "javascript")):
        status, h, body = get(srv.http + "/assets/" + name)
        assert status == 200 and kind in h["Content-Type"], (name, status)
        assert h["Content-Security-Policy"] == CSP
        status, h2, body = get(srv.http + "/assets/" + name,
                               {"If-None-Match": h["ETag"]})
        assert status == 304 and not body, (name, status)
    status, h, body = get(srv.http + "/assets/app.js",
                          {"Accept-Encoding": "gzip"})
    assert status == 200 and h["Content-Encoding"] == "gzip"
    for path in ("/assets/index.html.gz", "/assets/package.json",
                 "/assets/..%2fatriumd", "/assets/%2e%2e/app.js",
                 "/assets/../../etc/passwd", "/r/Not_A_Room",
                 "/r/room/extra"):
        status, _, body = get(srv.http + path)
        assert status in (400, 404), (path, status)
        assert b"root:" not in body and b"<html" not in body, path


def test_two_browsers_and_an_ssh_user_share_a_room(srv, ssh_run, tmux,
                                                     browsers, model_server,
                                                     tmp_path):
    room = "webroom"
    make_room(srv, room, user="alice")
    a, b = browsers("alice"), browsers("bob", width=375, height=740)
    a.open_room(srv.http, room, make_token(ssh_run, srv, "alice"))
    b.open_room(srv.http, room, make_token(ssh_run, srv, "bob"))
    tmux.open("eve", srv, room, "eve", cols=100, rows=30)

    # Chat both ways, with people's names and times.
    a.say("hello from the page, said alice")
    box = a.d.find_element(By.ID, "input")
    box.send_keys(Keys.ARROW_UP)
    assert box.get_attribute("value") == "hello from the page, said alice"
    box.send_keys(Keys.ARROW_DOWN)
    assert box.get_attribute("value") == ""
    tmux.wait("eve", "hello from the page, said alice")
    b.wait(lambda: any("alice" in l and "hello from the page, said alice"
                       in l for l in b.lines()))
    assert re.search(r"^\d\d:\d\d\s", [l for l in b.lines()
                                       if "said alice" in l][0])
    tmux.type("eve", "hi from the terminal, said eve")
    for br in (a, b):
        br.wait(lambda br=br: any("eve" in l and "said eve" in l
                                  for l in br.lines()))
    # Who is here: the two in browsers as well as the one in the chat.
    b.wait(lambda: all(n in b.d.find_element(By.ID, "presence")
                       .get_attribute("textContent")
                       for n in ("alice", "bob", "eve")))

    # A person's HTML and Markdown are shown as the text they typed.
    b.say(HOSTILE)
    a.wait(lambda: any(HOSTILE in l for l in a.lines()))
    assert not a.d.find_elements(By.CSS_SELECTOR, "#log img, #log strong")
    assert no_alert(a) and no_alert(b)

    # The agent's answer streams in, then is drawn as Markdown; the HTML
    # the model wrote stays text.
    answer = ("Here is **bold words** and <img src=x onerror=alert(1)> "
              "as text, [a link](javascript:alert(1)) that is not one, "
              "[the docs](https://example.org/docs) that is, then `code` "
              "and more words until done-streaming")
    model_server.script(Reply(text=answer, delay=0.25))
    a.say("@agent show me some markdown")
    partial = a.wait(lambda: a.js(
        "const s = document.querySelector('#log li.agent.streaming');"
        "return s && s.innerText.includes('Here') && "
        "!s.innerText.includes('done-streaming') && s.innerText"))
    assert "done-streaming" not in partial
    a.wait(lambda: a.js(
        "return [...document.querySelectorAll('#log li.agent:not(.streaming)"
        " strong')].some(e => e.textContent === 'bold words')"))
    final = [l for l in a.lines() if "done-streaming" in l]
    assert len(final) == 1 and "<img src=x onerror=alert(1)>" in final[0]
    assert "**" not in final[0]
    hrefs = a.js("return [...document.querySelectorAll('#log a')]"
                 ".map(e => e.href)")
    assert hrefs == ["https://example.org/docs"], hrefs
    b.wait(lambda: any("done-streaming" in l for l in b.lines()))
    assert not a.d.find_elements(By.CSS_SELECTOR, "#log img")
    assert not b.d.find_elements(By.CSS_SELECTOR, "#log img")
    assert no_alert(a) and no_alert(b)

    # An approval asked of the room, answered by a click in bob's page.
    model_server.script(
        Reply(text="Running it.", tool_calls=[ToolCall(
            "bash", {"command": "echo approved-$((40+2)) | tee ran.txt"})]),
        Reply(text="It ran: all-done."))
    a.say("@agent run it")
    button = b.wait(lambda: (lambda e: e and e[0].is_displayed() and e[0])(
        b.d.find_elements(By.CSS_SELECTOR, "#log .card button.approve")))
    button.click()
    a.wait(lambda: any("approved-42" in l for l in a.lines())
           or a.js("return document.getElementById('log').textContent"
                   ".includes('approved-42')"))
    a.wait(lambda: any("all-done" in l for l in a.lines()))
    tmux.wait("eve", "all-done")

    # A denial with a reason, typed in the page: the model is told why.
    model_server.script(
        Reply(text="Trying again.", tool_calls=[ToolCall(
            "bash", {"command": "touch denied.txt"})]),
        Reply(text="Understood: not-run."))
    a.say("@agent once more")
    card = a.wait(lambda: (lambda c: c and c[-1].find_elements(
        By.CSS_SELECTOR, "button.deny") and c[-1])(
        a.d.find_elements(By.CSS_SELECTOR, "#log .card")))
    card.find_element(By.TAG_NAME, "input").send_keys(
        "not on a Sunday" + Keys.ENTER)
    a.wait(lambda: any("not-run" in l for l in a.lines()))
    assert "not on a Sunday" in card.text
    assert "not on a Sunday" in json.dumps(model_server.requests[-1]["body"])

    # /undo: its preview in the page, then the undo, by the room's owner.
    a.say("/undo")
    preview = a.wait(lambda: (lambda c: c and "Undo it" in c[-1].text and
                              c[-1])(a.d.find_elements(By.CSS_SELECTOR,
                                                       "#log .card")))
    assert "removes: ran.txt" in preview.text, preview.text
    preview.find_element(By.CSS_SELECTOR, "button.approve").click()
    a.wait(lambda: any("alice undid" in l for l in a.lines()))
    rc, out, err = ssh_run(srv, room, "cat", "ran.txt", user="eve")
    assert rc != 0 and "No such file" in err, (rc, out, err)

    # A named snapshot, and a restore's preview, which changes nothing
    # until its button is pressed.
    a.say("/snapshot kept-1")
    a.wait(lambda: any("kept-1" in l for l in a.lines()))
    a.say("/restore kept-1")
    card = a.wait(lambda: (lambda c: c and "Restore it" in c[-1].text and
                           c[-1])(a.d.find_elements(By.CSS_SELECTOR,
                                                    "#log .card")))
    assert "/restore would restore the workspace to snapshot kept-1" \
        in card.text, card.text
    card.find_elements(By.TAG_NAME, "button")[1].click()
    a.wait(lambda: "cancelled" in card.text)

    # The shared terminal: typed in alice's page, seen in eve's /term, and
    # the other way.
    enter_term(tmux, "eve")
    a.d.find_element(By.ID, "btn-term").click()
    a.wait(lambda: any(r.rstrip().endswith("$") for r in a.term_rows()))
    area = a.d.find_element(By.CSS_SELECTOR, "#term .xterm-helper-textarea")
    area.send_keys("echo web-$((6*7))" + Keys.ENTER)
    tmux.wait("eve", line_alone("web-42"))
    a.wait(lambda: any(r.rstrip() == "web-42" for r in a.term_rows()))
    tmux.type("eve", "printf 'ssh-%s\\033]0;title\\007\\n' $((5*5))")
    a.wait(lambda: any(r.rstrip() == "ssh-25" for r in a.term_rows()))
    # Esc leaves the terminal for the message box.
    area.send_keys(Keys.ESCAPE)
    a.wait(lambda: a.js("return document.activeElement.id") == "input")

    a.shot(tmp_path / "browser-alice.png")
    b.shot(tmp_path / "browser-bob-375px.png")
    assert no_alert(a) and no_alert(b)

    # Signing out clears the session: a reload asks for a token again.
    b.d.find_element(By.ID, "btn-signout").click()
    b.wait(lambda: b.d.find_element(By.ID, "token").is_displayed())
    b.d.refresh()
    b.wait(lambda: b.d.find_element(By.ID, "token").is_displayed())
    assert not b.d.find_element(By.ID, "input").is_displayed()


def test_time_to_the_first_line(srv, ssh_run, browsers, tmp_path):
    """A page loaded again shows the room's history (placed by seq, each
    event once), and how fast: the page's bytes and the time from
    navigation to the first line shown, with an empty cache and with a
    warm one (README.md quotes both)."""
    room = "loadroom"
    make_room(srv, room, user="alice")
    a = browsers("alice")
    a.open_room(srv.http, room, make_token(ssh_run, srv, "alice"))
    a.say("a first line")
    a.wait(lambda: any("a first line" in l for l in a.lines()))
    a.d.execute_cdp_cmd("Network.enable", {})
    times = {}
    for cache in ("cold", "warm"):
        a.d.execute_cdp_cmd("Network.setCacheDisabled",
                            {"cacheDisabled": cache == "cold"})
        times[cache] = []
        for _ in range(3):
            a.d.get("%s/r/%s" % (srv.http, room))
            t = a.wait(lambda: a.js(
                "const m = performance.getEntriesByName("
                "'atrium-first-line');"
                "return m.length && document.getElementById('log')"
                ".textContent.includes('a first line') && m[0].startTime"))
            times[cache].append(t)
            assert sum("a first line" in l for l in a.lines()) == 1
        if cache == "cold":
            sizes = a.js(
                "return performance.getEntriesByType('navigation')"
                ".concat(performance.getEntriesByType('resource'))"
                ".filter(e => !e.name.includes('/api/'))"
                ".map(e => [e.name.replace(location.origin, ''),"
                " e.encodedBodySize, e.decodedBodySize])")
    print("time to the first line, ms: cold cache %s, warm %s" % (
        ", ".join("%.0f" % t for t in times["cold"]),
        ", ".join("%.0f" % t for t in times["warm"])))
    print("the page's files (sent gzipped, bytes): %s; in all %d sent, "
          "%d bytes" % (sizes, sum(s[1] for s in sizes),
                        sum(s[2] for s in sizes)))
    assert sorted(times["cold"])[1] < 3000, times


def test_a_file_uploaded_in_the_page_is_in_the_workspace(srv, ssh_run,
                                                          browsers, tmp_path):
    """The file view: upload from the page, see it listed and read it
    there, and find it with `ssh ROOM@host cat`."""
    room = "filesroom"
    make_room(srv, room, user="alice")
    token = make_token(ssh_run, srv, "alice")
    a = browsers("alice")
    a.open_room(srv.http, room, token)
    a.wait(lambda: a.d.find_element(By.ID, "btn-files").is_displayed())
    a.d.find_element(By.ID, "btn-files").click()
    a.wait(lambda: a.d.find_element(By.ID, "files-panel").is_displayed())
    local = tmp_path / "from-the-page.txt"
    local.write_text("uploaded <b>from</b> the page\n")
    a.d.find_element(By.ID, "files-upload").send_keys(str(local))
    name = a.wait(lambda: [e for e in a.d.find_elements(
        By.CSS_SELECTOR, "#files-list button.name")
        if e.text == "from-the-page.txt"])[0]
    rc, out, err = ssh_run(srv, room, "cat", "from-the-page.txt",
                           user="alice")
    assert (rc, out) == (0, "uploaded <b>from</b> the page\n"), err
    name.click()
    a.wait(lambda: a.d.find_element(By.ID, "files-view").text ==
           "uploaded <b>from</b> the page")
    assert not a.d.find_elements(By.CSS_SELECTOR, "#files-view b")


def test_a_room_that_is_not_there_says_so(srv, ssh_run, browsers):
    """A room that does not exist (or that the token may not enter) is
    said plainly, once, and the page stops knocking."""
    a = browsers("alice")
    a.open_room(srv.http, "nosuchroom", make_token(ssh_run, srv, "alice"),
                connected=False)
    a.wait(lambda: "Room nosuchroom does not exist" in a.log_text())
    assert a.d.find_element(By.ID, "status").text == "not here"
