"""A TEST DOUBLE of the GitHub REST API: just the issue-comment endpoints `bench comment` uses.

GitHub cannot be reached from the tests, so this small HTTP server on loopback answers like
GitHub Enterprise (`<url>/api/v3/...`), and the tests drive it through the real github3.py
client. It checks the token, paginates with `Link` headers, and can answer 401 / 403 / 404 /
rate-limit the way GitHub does. It is not a GitHub emulator: only what the tests need.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

API = "/api/v3"


@dataclass
class GitHubDouble:
    """State of the double; `url` is what github3.GitHubEnterprise needs."""

    tokens: dict[str, str] = field(default_factory=dict)  # token -> "write" | "read"
    # token -> its account's login (GET /user); absent: "atlas-bot". None: an installation
    # token, which GET /user refuses with 403 like GitHub does.
    logins: dict[str, str | None] = field(default_factory=dict)
    repos: set[str] = field(default_factory=set)  # "owner/name"
    pulls: dict[tuple[str, int], str] = field(default_factory=dict)  # (repo, number) -> head sha
    closed: set[tuple[str, int]] = field(default_factory=set)  # pull requests that are closed
    on_default: set[str] = field(default_factory=set)  # shas on the default branch (compare: behind)
    comments: list[dict] = field(default_factory=list)
    max_per_page: int = 100
    rate_limited: bool = False
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)
    _next_id: int = 1000
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> GitHubDouble:
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def _serve(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body, headers = double.handle(method, self.path, dict(self.headers), raw)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_PATCH(self):
                self._serve("PATCH")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the double first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def comments_on(self, repo: str, number: int) -> list[dict]:
        return [c for c in self.comments if c["_repo"] == repo and c["_number"] == number]

    def add_comment(self, repo: str, number: int, body: str, login: str = "someone") -> dict:
        with self._lock:
            return self._new_comment(repo, number, body, login)

    # -- request handling ----------------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], raw: bytes):
        parts = urlsplit(raw_path)
        path, query = parts.path, parse_qs(parts.query)
        with self._lock:
            self.requests.append((method, path))
            auth = headers.get("Authorization", "")
            token = auth.split(" ", 1)[1] if " " in auth else ""
            if token not in self.tokens:
                return 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}, {}
            if self.rate_limited:
                reset = str(int(time.time()) + 1800)
                return (
                    403,
                    {"message": "API rate limit exceeded for installation ID 1."},
                    {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                )
            login = self.logins.get(token, "atlas-bot")
            if path == API + "/user" and method == "GET":
                if login is None:
                    return 403, {"message": "Resource not accessible by integration"}, {}
                return 200, self._user(login), {}
            m = re.fullmatch(API + r"/repos/([^/]+/[^/]+)/compare/([^/.]+)\.\.\.([0-9a-f]{40})", path)
            if m and method == "GET":
                if m.group(3) in self.on_default:
                    return 200, {"status": "behind"}, {}
                known = {sha for (r, _), sha in self.pulls.items() if r == m.group(1)}
                return (200, {"status": "diverged"}, {}) if m.group(3) in known else (404, {"message": "Not Found"}, {})
            m = re.fullmatch(API + r"/repos/([^/]+/[^/]+)/pulls", path)
            if m and method == "GET":
                state = query.get("state", ["open"])[0]
                rows = [
                    {"number": n, "state": "closed" if (r, n) in self.closed else "open", "head": {"sha": sha}}
                    for (r, n), sha in sorted(self.pulls.items())
                    if r == m.group(1)
                ]
                return 200, [x for x in rows if state == "all" or x["state"] == state], {}
            m = re.fullmatch(API + r"/repos/([^/]+/[^/]+)/(issues|pulls)/(\d+)(/comments)?", path)
            if m:
                repo, kind, number, sub = m.group(1), m.group(2), int(m.group(3)), m.group(4)
                if repo not in self.repos or (repo, number) not in self.pulls:
                    return 404, {"message": "Not Found"}, {}
                if kind == "pulls" and not sub and method == "GET":
                    return 200, {"number": number, "head": {"sha": self.pulls[(repo, number)]}}, {}
                if kind == "issues" and not sub and method == "GET":
                    return 200, self._issue_json(repo, number), {}
                if kind == "issues" and sub and method == "GET":
                    return self._page(repo, number, query)
                if kind == "issues" and sub and method == "POST":
                    if self.tokens[token] != "write":
                        return 403, {"message": "Resource not accessible by integration"}, {}
                    body = json.loads(raw or b"{}").get("body", "")
                    author = login or "github-actions[bot]"
                    return 201, self._public(self._new_comment(repo, number, body, author)), {}
            m = re.fullmatch(API + r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)
            if m and method == "PATCH":
                repo, cid = m.group(1), int(m.group(2))
                found = [c for c in self.comments if c["id"] == cid and c["_repo"] == repo]
                if not found:
                    return 404, {"message": "Not Found"}, {}
                if self.tokens[token] != "write":
                    return 403, {"message": "Resource not accessible by integration"}, {}
                found[0]["body"] = json.loads(raw or b"{}").get("body", "")
                found[0]["updated_at"] = _now()
                return 200, self._public(found[0]), {}
            return 404, {"message": "Not Found"}, {}

    def _page(self, repo: str, number: int, query: dict):
        per_page = min(int(query.get("per_page", ["30"])[0]), self.max_per_page)
        page = int(query.get("page", ["1"])[0])
        items = self.comments_on(repo, number)
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            nxt = f"{self.url}{API}/repos/{repo}/issues/{number}/comments?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return 200, [self._public(c) for c in chunk], headers

    def _new_comment(self, repo: str, number: int, body: str, login: str) -> dict:
        self._next_id += 1
        cid = self._next_id
        c = {
            "id": cid,
            "body": body,
            "_repo": repo,
            "_number": number,
            "_login": login,
            "created_at": _now(),
            "updated_at": _now(),
        }
        self.comments.append(c)
        return c

    def _user(self, login: str) -> dict:
        u = f"{self.url}{API}/users/{login}"
        return {
            "login": login,
            "id": abs(hash(login)) % 10_000,
            "type": "Bot",
            "site_admin": False,
            "avatar_url": "",
            "gravatar_id": "",
            "html_url": f"{self.url}/{login}",
            "url": u,
            "events_url": u + "/events{/privacy}",
            "followers_url": u + "/followers",
            "following_url": u + "/following{/other_user}",
            "gists_url": u + "/gists{/gist_id}",
            "organizations_url": u + "/orgs",
            "received_events_url": u + "/received_events",
            "repos_url": u + "/repos",
            "starred_url": u + "/starred{/owner}{/repo}",
            "subscriptions_url": u + "/subscriptions",
        }

    def _public(self, c: dict) -> dict:
        base = f"{self.url}{API}/repos/{c['_repo']}"
        return {
            "id": c["id"],
            "body": c["body"],
            "body_html": "",
            "body_text": c["body"],
            "url": f"{base}/issues/comments/{c['id']}",
            "html_url": f"{self.url}/{c['_repo']}/pull/{c['_number']}#issuecomment-{c['id']}",
            "issue_url": f"{base}/issues/{c['_number']}",
            "author_association": "NONE",
            "created_at": c["created_at"],
            "updated_at": c["updated_at"],
            "user": self._user(c["_login"]),
        }

    def _issue_json(self, repo: str, number: int) -> dict:
        base = f"{self.url}{API}/repos/{repo}/issues/{number}"
        return {
            "id": number,
            "number": number,
            "url": base,
            "html_url": f"{self.url}/{repo}/pull/{number}",
            "comments_url": base + "/comments",
            "events_url": base + "/events",
            "labels_url": base + "/labels{/name}",
            "title": "a pull request",
            "body": "",
            "body_html": "",
            "body_text": "",
            "closed_by": None,
            "state": "open",
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "labels": [],
            "comments": len(self.comments_on(repo, number)),
            "closed_at": None,
            "created_at": _now(),
            "updated_at": _now(),
            "user": self._user("author"),
            "pull_request": {"url": f"{self.url}{API}/repos/{repo}/pulls/{number}"},
            "author_association": "NONE",
        }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
