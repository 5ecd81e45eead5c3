"""A stand-in for the GitHub and GitLab REST APIs on 127.0.0.1 for the CI tests: it keeps issue comments per pull
request the way GitHub does (GET lists them, 100 a page with a Link header; POST creates one; PATCH
/issues/comments/ID edits one) and records every request, so a test asserts what the shipped ci/scripts sent.
A write with a token in `read_only` answers 403, as GitHub answers a fork pull request's read-only GITHUB_TOKEN."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGitHub:
    """`with FakeGitHub() as gh:` serves on gh.url; gh.calls, gh.comments(repo, pr), gh.read_only."""

    per_page = 100

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.read_only: set[str] = set()  # tokens whose writes get 403
        self._comments: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._next_id = 1000
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, code: int, payload: Any, link: str = "") -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if link:
                    self.send_header("Link", link)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake._lock:
                    fake.calls.append({"method": method, "path": self.path, "headers": dict(self.headers),
                                       "body": body})
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    if method != "GET" and token in fake.read_only:
                        code, payload, link = 403, {"message": "Resource not accessible by integration"}, ""
                    else:
                        code, payload, link = fake._route(method, self.path, body)
                self._answer(code, payload, link)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def do_PATCH(self) -> None:
                self._handle("PATCH")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def comments(self, repo: str, pr: int | str) -> list[dict[str, Any]]:
        return self._comments.get((repo, str(pr)), [])

    def seed(self, repo: str, pr: int | str, bodies: list[str], login: str = "someone") -> list[int]:
        """Comments already on the pull request (people's, or an earlier run's); returns their ids."""
        ids = []
        for body in bodies:
            self._next_id += 1
            self._comments.setdefault((repo, str(pr)), []).append({"id": self._next_id, "body": body,
                                                                   "user": {"login": login}})
            ids.append(self._next_id)
        return ids

    def _route(self, method: str, path: str, body: bytes) -> tuple[int, Any, str]:
        path, _, query = path.partition("?")
        if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", path):
            repo, pr = m.group(1), m.group(2)
            items = self._comments.setdefault((repo, pr), [])
            if method == "GET":
                page = int(dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("page", 1))
                chunk = items[(page - 1) * self.per_page: page * self.per_page]
                more = len(items) > page * self.per_page
                link = f'<{self.url}{path}?per_page={self.per_page}&page={page + 1}>; rel="next"' if more else ""
                return 200, chunk, link
            if method == "POST":
                self._next_id += 1
                item = {"id": self._next_id, "body": json.loads(body)["body"],
                        "user": {"login": "github-actions[bot]"}}
                items.append(item)
                return 201, item, ""
        if (m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)", path)) and method == "PATCH":
            for items in self._comments.values():
                for item in items:
                    if item["id"] == int(m.group(2)):
                        item["body"] = json.loads(body)["body"]
                        return 200, item, ""
            return 404, {"message": "Not Found"}, ""
        if method == "POST":  # the GitLab notes endpoint and anything else a script posts: accepted as is
            return 201, {"id": 1}, ""
        return 404, {"message": "Not Found"}, ""

    def __enter__(self) -> FakeGitHub:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
