#!/usr/bin/python3
"""An S3-compatible object store for tests (standard library only), one
that checks every request's AWS Signature Version 4 as S3 does.

    with S3Server(access_key="AK", secret_key="SK") as s3:
        ... point a client at s3.url (path style: s3.url/BUCKET/KEY) ...
        s3.objects("bucket")          -> {key: bytes}
        s3.set(slow=0.5)              every answer waits 0.5 s
        s3.set(slowdown=3)            the next 3 requests get 503 SlowDown
        s3.set(cut=2)                 the next 2 connections are dropped
                                      before any answer
        s3.set(refuse=True)           every request gets 503 until unset
        s3.set(stall=True)            every request waits, unanswered, until
                                      unset (s3.stalled: the "METHOD PATH"
                                      of each that began to wait)
        s3.wait_requests(n, timeout)  until n requests were answered

Operations (path style only, as a client with an endpoint URL uses):
PUT /B (make a bucket), PUT /B/KEY, GET /B/KEY (Range: bytes=A-B, A-,
-N; 206 with Content-Range, 416 when unsatisfiable), HEAD /B/KEY,
DELETE /B/KEY (204, also when absent), GET /B?list-type=2 (ListObjectsV2:
prefix, max-keys, continuation-token, start-after; keys in byte order).
Missing bucket: 404 NoSuchBucket; missing key: 404 NoSuchKey.

Signatures (the header form, "Authorization: AWS4-HMAC-SHA256
Credential=AK/DATE/REGION/s3/aws4_request, SignedHeaders=...,
Signature=..."): the canonical request is rebuilt from what arrived
(method; the path, each byte outside A-Z a-z 0-9 - _ . ~ / percent-encoded
once, as S3 does not encode it twice; the query's pairs encoded and
sorted; the signed headers, lowercased, values trimmed with inner runs of
spaces made one; the signed header names; x-amz-content-sha256's value),
hashed into the string to sign with x-amz-date and the scope, and signed
with the key derived from "AWS4" + secret through date, region, "s3" and
"aws4_request".  A request with no or a malformed Authorization gets 403
AccessDenied; an unknown access key 403 InvalidAccessKeyId; a signature
that does not match (a wrong secret) 403 SignatureDoesNotMatch; host,
x-amz-date and x-amz-content-sha256 must be signed; a date more than 15
minutes off 403 RequestTimeTooSkewed; a body whose SHA-256 is not the
x-amz-content-sha256 given 400 XAmzContentSHA256Mismatch.  The
documentation's own example (GET /test.txt, Range bytes=0-9) is checked
by sigv4_selftest() and by tests/test_replicate.py.

    /usr/bin/python3 tests/s3_server.py --port 9000 --access-key AK \
        --secret-key SK --bucket b [--region us-east-1]

The standalone server prints "listening on PORT" and takes the switches
as POST /_control?slow=S&slowdown=N&cut=N&refuse=0|1&stall=0|1
(unsigned: a test tool on loopback).
"""
import argparse
import datetime
import hashlib
import hmac
import http.server
import re
import socket
import socketserver
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

UNSIGNED = "UNSIGNED-PAYLOAD"
MAX_BODY = 256 << 20
SKEW = datetime.timedelta(minutes=15)
AUTH_RE = re.compile(
    r"^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*"
    r"SignedHeaders=([^,\s]+)\s*,\s*Signature=([0-9a-f]{64})\s*$")


def uri_encode(s, safe):
    """AWS's UriEncode of text s: every byte but the unreserved ones (and
    those in safe) as %XY, upper-case hex."""
    return urllib.parse.quote(s, safe=safe + "-_.~")


def canonical_query(query):
    """The query string's pairs, each side decoded then encoded, sorted."""
    pairs = []
    for part in query.split("&") if query else []:
        k, _, v = part.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(k), ""),
                      uri_encode(urllib.parse.unquote(v), "")))
    pairs.sort()
    return "&".join(f"{k}={v}" for k, v in pairs)


def canonical_request(method, path, query, headers, signed, payload_hash):
    """The canonical request of AWS SigV4 for S3 (no double path encoding).
    headers maps lower-cased names to their values as received."""
    uri = uri_encode(urllib.parse.unquote(path), "/") or "/"
    lines = [method, uri, canonical_query(query)]
    for name in signed:
        value = " ".join(headers.get(name, "").split())
        lines.append(f"{name}:{value}")
    lines.append("")
    lines.append(";".join(signed))
    lines.append(payload_hash)
    return "\n".join(lines)


def signing_key(secret, date, region, service="s3"):
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def signature(secret, amz_date, scope, creq):
    """The hex signature of canonical request creq in scope."""
    date, region, service, _ = scope.split("/")
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    return hmac.new(signing_key(secret, date, region, service), sts.encode(),
                    hashlib.sha256).hexdigest()


def sigv4_selftest():
    """The example of AWS's "Signature Calculations for the Authorization
    Header: Transferring Payload in a Single Chunk" (GET Object): True
    when this module's signing gives the documented signature."""
    empty = hashlib.sha256(b"").hexdigest()
    headers = {"host": "examplebucket.s3.amazonaws.com",
               "range": "bytes=0-9", "x-amz-content-sha256": empty,
               "x-amz-date": "20130524T000000Z"}
    signed = ["host", "range", "x-amz-content-sha256", "x-amz-date"]
    creq = canonical_request("GET", "/test.txt", "", headers, signed, empty)
    sig = signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                    "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
                    creq)
    return sig == ("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd9103"
                   "9c6036bdb41")


class S3Error(Exception):
    def __init__(self, status, code, message=""):
        super().__init__(message or code)
        self.status, self.code, self.message = status, code, message or code


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    # --- dispatch ---------------------------------------------------------
    def do_PUT(self):
        self._serve()

    def do_GET(self):
        self._serve()

    def do_HEAD(self):
        self._serve()

    def do_DELETE(self):
        self._serve()

    def do_POST(self):
        self._serve()

    def _serve(self):
        srv = self.server.s3
        path, _, query = self.path.partition("?")
        try:
            body = self._read_body()
        except S3Error as e:
            self._error(e)
            return
        if self.command == "POST" and path == "/_control":
            srv.control(urllib.parse.parse_qs(query))
            self._send(200, b"ok\n", {"Content-Type": "text/plain"})
            return
        srv.wait_unstalled(self.command, path)
        if srv.take_cut():
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if srv.slow:
            time.sleep(srv.slow)
        try:
            if srv.take_slowdown():
                raise S3Error(503, "SlowDown", "Please reduce your request rate.")
            self._check_signature(path, query, body)
            self._operation(path, query, body)
        except S3Error as e:
            self._error(e)
        finally:
            srv.count()

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            raise S3Error(501, "NotImplemented", "chunked uploads")
        n = int(self.headers.get("Content-Length") or 0)
        if n < 0 or n > MAX_BODY:
            raise S3Error(400, "EntityTooLarge")
        return self.rfile.read(n) if n else b""

    # --- SigV4 ------------------------------------------------------------
    def _check_signature(self, path, query, body):
        srv = self.server.s3
        m = AUTH_RE.match(self.headers.get("Authorization", ""))
        if not m:
            raise S3Error(403, "AccessDenied", "no SigV4 Authorization")
        cred, signed_s, sig = m.groups()
        parts = cred.split("/")
        if len(parts) != 5 or parts[4] != "aws4_request" or parts[3] != "s3":
            raise S3Error(403, "AuthorizationHeaderMalformed", cred)
        access, date, region = parts[0], parts[1], parts[2]
        if access != srv.access_key:
            raise S3Error(403, "InvalidAccessKeyId")
        if region != srv.region:
            raise S3Error(400, "AuthorizationHeaderMalformed",
                          f"the region '{region}' is wrong; expecting "
                          f"'{srv.region}'")
        signed = signed_s.split(";")
        if signed != sorted(signed) or not {
                "host", "x-amz-date", "x-amz-content-sha256"} <= set(signed):
            raise S3Error(403, "AccessDenied", "unsigned required header")
        headers = {k.lower(): v for k, v in self.headers.items()}
        amz_date = headers.get("x-amz-date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
        except ValueError:
            raise S3Error(403, "AccessDenied", "bad x-amz-date")
        if amz_date[:8] != date:
            raise S3Error(403, "SignatureDoesNotMatch", "date not in scope")
        if abs(datetime.datetime.utcnow() - when) > SKEW:
            raise S3Error(403, "RequestTimeTooSkewed")
        payload = headers.get("x-amz-content-sha256", "")
        if payload != UNSIGNED and payload != hashlib.sha256(body).hexdigest():
            raise S3Error(400, "XAmzContentSHA256Mismatch")
        creq = canonical_request(self.command, path, query, headers, signed,
                                 payload)
        want = signature(srv.secret_key, amz_date,
                         f"{date}/{region}/s3/aws4_request", creq)
        if not hmac.compare_digest(want, sig):
            srv.mismatches += 1
            raise S3Error(403, "SignatureDoesNotMatch",
                          "The request signature we calculated does not "
                          "match the signature you provided.")

    # --- operations -------------------------------------------------------
    def _operation(self, path, query, body):
        srv = self.server.s3
        segs = path.lstrip("/").split("/", 1)
        bucket = urllib.parse.unquote(segs[0])
        key = urllib.parse.unquote(segs[1]) if len(segs) > 1 else ""
        if not bucket:
            raise S3Error(400, "InvalidRequest", "path-style only")
        if not key:
            if self.command == "PUT":
                srv.make_bucket(bucket)
                self._send(200, b"")
            elif self.command == "GET":
                self._list(bucket, urllib.parse.parse_qs(query))
            else:
                raise S3Error(405, "MethodNotAllowed")
            return
        if self.command == "PUT":
            etag = srv.put(bucket, key, body)
            self._send(200, b"", {"ETag": f'"{etag}"'})
        elif self.command in ("GET", "HEAD"):
            self._get(bucket, key)
        elif self.command == "DELETE":
            srv.delete(bucket, key)
            self._send(204, b"")
        else:
            raise S3Error(405, "MethodNotAllowed")

    def _get(self, bucket, key):
        data = self.server.s3.get(bucket, key)
        rng = self.headers.get("Range")
        hdrs = {"ETag": f'"{hashlib.md5(data).hexdigest()}"',
                "Accept-Ranges": "bytes",
                "Content-Type": "application/octet-stream"}
        if not rng:
            self._send(200, data, hdrs)
            return
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
        if not m or (not m.group(1) and not m.group(2)):
            self._send(200, data, hdrs)
            return
        size = len(data)
        if m.group(1):
            first = int(m.group(1))
            last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
        else:
            first, last = max(size - int(m.group(2)), 0), size - 1
        if first >= size or first > last:
            hdrs["Content-Range"] = f"bytes */{size}"
            raise S3Error(416, "InvalidRange")
        hdrs["Content-Range"] = f"bytes {first}-{last}/{size}"
        self._send(206, data[first:last + 1], hdrs)

    def _list(self, bucket, q):
        srv = self.server.s3
        if q.get("list-type", [""])[0] != "2":
            raise S3Error(400, "InvalidArgument", "ListObjectsV2 only")
        prefix = q.get("prefix", [""])[0]
        try:
            max_keys = min(int(q.get("max-keys", ["1000"])[0]), 1000)
        except ValueError:
            raise S3Error(400, "InvalidArgument", "max-keys")
        after = q.get("continuation-token", q.get("start-after", [""]))[0]
        keys = srv.keys(bucket, prefix, after)
        page, more = keys[:max_keys], len(keys) > max_keys
        out = ['<?xml version="1.0" encoding="UTF-8"?>',
               '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/'
               '2006-03-01/">',
               f"<Name>{escape(bucket)}</Name>",
               f"<Prefix>{escape(prefix)}</Prefix>",
               f"<KeyCount>{len(page)}</KeyCount>",
               f"<MaxKeys>{max_keys}</MaxKeys>",
               f"<IsTruncated>{'true' if more else 'false'}</IsTruncated>"]
        if more:
            out.append("<NextContinuationToken>"
                       f"{escape(page[-1][0])}</NextContinuationToken>")
        for k, size, etag in page:
            out.append(f"<Contents><Key>{escape(k)}</Key>"
                       "<LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                       f"<ETag>&quot;{etag}&quot;</ETag><Size>{size}</Size>"
                       "<StorageClass>STANDARD</StorageClass></Contents>")
        out.append("</ListBucketResult>")
        self._send(200, "".join(out).encode(),
                   {"Content-Type": "application/xml"})

    # --- answers ----------------------------------------------------------
    def _send(self, status, body, headers=None):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _error(self, e):
        xml = ('<?xml version="1.0" encoding="UTF-8"?><Error>'
               f"<Code>{escape(e.code)}</Code>"
               f"<Message>{escape(e.message)}</Message></Error>").encode()
        self._send(e.status, xml, {"Content-Type": "application/xml"})


class ThreadingServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class S3Server:
    """The store and its switches; see the top of the file."""

    def __init__(self, access_key="AKIDATRIUMTEST", secret_key="secret",
                 region="us-east-1", buckets=("atrium",), port=0):
        self.access_key, self.secret_key, self.region = (
            access_key, secret_key, region)
        self._lock = threading.Condition()
        self._buckets = {b: {} for b in buckets}
        self.slow, self.slowdown, self.cut, self.refuse = 0.0, 0, 0, False
        self.stall, self.stalled = False, []
        self.answered, self.mismatches, self.puts = 0, 0, 0
        self.httpd = ThreadingServer(("127.0.0.1", port), Handler)
        self.httpd.s3 = self
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- switches ---------------------------------------------------------
    def set(self, slow=None, slowdown=None, cut=None, refuse=None,
            stall=None):
        with self._lock:
            if stall is not None:
                self.stall = bool(stall)
                self._lock.notify_all()
            if slow is not None:
                self.slow = float(slow)
            if slowdown is not None:
                self.slowdown = int(slowdown)
            if cut is not None:
                self.cut = int(cut)
            if refuse is not None:
                self.refuse = bool(refuse)

    def control(self, q):
        def one(name):
            return q[name][0] if name in q else None
        def flag(name):
            v = one(name)
            return None if v is None else v not in ("0", "")
        self.set(one("slow"), one("slowdown"), one("cut"), flag("refuse"),
                 flag("stall"))

    def wait_unstalled(self, method, path, timeout=600):
        """While stall is set, a request waits here, unanswered."""
        with self._lock:
            if not self.stall:
                return
            self.stalled.append("%s %s" % (method, path))
            self._lock.notify_all()
            self._lock.wait_for(lambda: not self.stall, timeout)

    def take_cut(self):
        with self._lock:
            if self.cut > 0:
                self.cut -= 1
                return True
            return False

    def take_slowdown(self):
        with self._lock:
            if self.refuse:
                return True
            if self.slowdown > 0:
                self.slowdown -= 1
                return True
            return False

    def count(self):
        with self._lock:
            self.answered += 1
            self._lock.notify_all()

    def wait_requests(self, n, timeout=10):
        with self._lock:
            return self._lock.wait_for(lambda: self.answered >= n, timeout)

    # --- the store --------------------------------------------------------
    def make_bucket(self, bucket):
        with self._lock:
            self._buckets.setdefault(bucket, {})

    def _bucket(self, bucket):
        if bucket not in self._buckets:
            raise S3Error(404, "NoSuchBucket")
        return self._buckets[bucket]

    def put(self, bucket, key, data):
        with self._lock:
            self._bucket(bucket)[key] = bytes(data)
            self.puts += 1
            self._lock.notify_all()
        return hashlib.md5(data).hexdigest()

    def get(self, bucket, key):
        with self._lock:
            b = self._bucket(bucket)
            if key not in b:
                raise S3Error(404, "NoSuchKey")
            return b[key]

    def delete(self, bucket, key):
        with self._lock:
            self._bucket(bucket).pop(key, None)

    def keys(self, bucket, prefix, after):
        """(key, size, etag) of the keys under prefix past after, in byte
        order of their UTF-8 (as S3 lists them)."""
        with self._lock:
            b = self._bucket(bucket)
            ks = sorted((k for k in b if k.startswith(prefix)),
                        key=lambda k: k.encode())
            return [(k, len(b[k]), hashlib.md5(b[k]).hexdigest())
                    for k in ks if k.encode() > after.encode()]

    def objects(self, bucket="atrium"):
        with self._lock:
            return dict(self._bucket(bucket))

    def wait(self, pred, timeout=10):
        """Until pred(self) holds after a PUT; its last value."""
        with self._lock:
            return self._lock.wait_for(lambda: pred(self), timeout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--access-key", default="AKIDATRIUMTEST")
    ap.add_argument("--secret-key", default="secret")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--bucket", action="append", default=[])
    a = ap.parse_args()
    if not sigv4_selftest():
        sys.exit("s3_server: SigV4 self-test failed")
    srv = S3Server(a.access_key, a.secret_key, a.region,
                   a.bucket or ["atrium"], a.port)
    print(f"listening on {srv.port}", flush=True)
    try:
        srv.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
