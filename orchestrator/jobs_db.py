"""The server's jobs, in SQLite (a real file in WAL mode), so a server killed at any moment loses none.

A job row holds everything needed to run it again: the task's sources and budgets. Its events (queued,
stages, goals, counterexamples, the verdict) are rows too, numbered within the job, so a stream can be
replayed from the start, by a client that reconnects after a restart as well. A server that starts
requeues every job it finds running (what the dead server was doing) and finishes any whose cancel had been
asked for. Identical submissions share one job: the key (`submission_key`) hashes what decides a result.

Every write is one transaction under one lock; readers wait on `changed` for new events.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from lean_pool.budget import CANCELLED as CANCELLED_REASON
from orchestrator.job import QUEUED, VERDICT, Sources, unknown
from orchestrator.result import Result
from orchestrator.version import lark_version
from semantics.axioms import AXIOM_TABLE_VERSION
from semantics.version import semantics_version

QUEUED_STATE, RUNNING, DONE, CANCELLED = "queued", "running", "done", "cancelled"
# A finished job answers a new identical submission only with a verdict that is a fact about the task:
# `unknown` (a budget, a cancel, a crash) is never reused (STYLE 7), the next submission tries again.
REUSABLE_VERDICTS = ("verified", "refuted", "error")
T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    request TEXT NOT NULL,
    result TEXT,
    verdict TEXT,
    submitted_at REAL NOT NULL,
    finished_at REAL,
    runs INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs (key);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, submitted_at);
CREATE TABLE IF NOT EXISTS events (
    job_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
"""


def submission_key(sources: Sources, timeout_s: float, solver_s: float | None) -> str:
    """What decides a job's result: the task files and manifest, the budgets, LARK's version (its package
    version and the digest of its sources), the semantics version and the axiom table."""
    digest = hashlib.sha256(json.dumps([lark_version(), semantics_version(), AXIOM_TABLE_VERSION, timeout_s,
                                        solver_s, sources.name, sources.manifest]).encode())
    for name in sorted(sources.files):
        digest.update(b"\0file\0" + name.encode() + b"\0" + hashlib.sha256(sources.files[name]).digest())
    return digest.hexdigest()


@dataclass(frozen=True)
class Request:
    sources: Sources
    timeout_s: float
    solver_s: float | None

    def to_json(self) -> str:
        files = {name: base64.b64encode(data).decode() for name, data in self.sources.files.items()}
        return json.dumps({"name": self.sources.name, "manifest": self.sources.manifest, "files": files,
                           "timeout_s": self.timeout_s, "solver_s": self.solver_s})

    @staticmethod
    def from_json(text: str) -> Request:
        raw = json.loads(text)
        files = {name: base64.b64decode(data) for name, data in raw["files"].items()}
        return Request(Sources(raw["name"], raw["manifest"], files), raw["timeout_s"], raw["solver_s"])


@dataclass(frozen=True)
class JobRow:
    id: str
    name: str
    state: str
    result: dict | None
    submitted_at: float
    finished_at: float | None
    runs: int
    cancel_requested: bool

    @property
    def finished(self) -> bool:
        return self.state in (DONE, CANCELLED)


_COLUMNS = "id, name, state, result, submitted_at, finished_at, runs, cancel_requested"


def _row(values: tuple) -> JobRow:
    id_, name, state, result, submitted, finished, runs, cancel = values
    return JobRow(id_, name, state, json.loads(result) if result else None, submitted, finished, runs, bool(cancel))


def _insert_event(db: sqlite3.Connection, job_id: str, kind: str, data: dict) -> None:
    (seq,) = db.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM events WHERE job_id = ?", (job_id,)).fetchone()
    db.execute("INSERT INTO events (job_id, seq, kind, data) VALUES (?, ?, ?, ?)", (job_id, seq, kind,
                                                                                   json.dumps(data)))


class JobStore:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self.changed = threading.Condition()     # notified after every write; `version` counts them
        self.version = 0
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` in one transaction, then wake whoever waits for a change."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                out = work(self._db)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        with self.changed:
            self.version += 1
            self.changed.notify_all()
        return out

    def _read(self, sql: str, args: tuple) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def wait_change(self, version: int, timeout_s: float) -> int:
        """Wait until a write after `version` (or the timeout); returns the version now."""
        with self.changed:
            if self.version == version:
                self.changed.wait(timeout_s)
            return self.version

    def submit(self, request: Request) -> tuple[JobRow, bool]:
        """The job answering `request`: an existing identical one (True), or a new queued one (False)."""
        key = submission_key(request.sources, request.timeout_s, request.solver_s)
        reusable = ", ".join("?" * len(REUSABLE_VERDICTS))

        def find_or_add(db: sqlite3.Connection) -> tuple[str, bool]:
            found = db.execute(f"SELECT id FROM jobs WHERE key = ? AND (state IN (?, ?) OR (state = ? AND verdict IN "
                               f"({reusable}))) ORDER BY submitted_at DESC LIMIT 1",
                               (key, QUEUED_STATE, RUNNING, DONE, *REUSABLE_VERDICTS)).fetchone()
            if found is not None:
                return found[0], True
            job_id = uuid.uuid4().hex
            db.execute("INSERT INTO jobs (id, key, name, state, request, submitted_at) VALUES (?, ?, ?, ?, ?, ?)",
                       (job_id, key, request.sources.name, QUEUED_STATE, request.to_json(), time.time()))
            _insert_event(db, job_id, QUEUED, {})
            return job_id, False

        job_id, duplicate = self._write(find_or_add)
        return self.get(job_id), duplicate

    def get(self, job_id: str) -> JobRow | None:
        found = self._read(f"SELECT {_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return _row(found[0]) if found else None

    def request(self, job_id: str) -> Request:
        ((text,),) = self._read("SELECT request FROM jobs WHERE id = ?", (job_id,))
        return Request.from_json(text)

    def list(self, state: str | None = None, limit: int = 100) -> list[JobRow]:
        where, args = ("WHERE state = ?", (state,)) if state else ("", ())
        rows = self._read(f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY submitted_at DESC LIMIT ?", (*args, limit))
        return [_row(r) for r in rows]

    def events(self, job_id: str, after: int = -1) -> list[tuple[int, str, dict]]:
        rows = self._read("SELECT seq, kind, data FROM events WHERE job_id = ? AND seq > ? ORDER BY seq",
                          (job_id, after))
        return [(seq, kind, json.loads(data)) for seq, kind, data in rows]

    def queued(self) -> int:
        """How many jobs wait for a worker (the service's queue depth)."""
        ((count,),) = self._read("SELECT count(*) FROM jobs WHERE state = ?", (QUEUED_STATE,))
        return count

    def claim(self) -> str | None:
        """Take the oldest queued job for a worker (it becomes running), or None."""
        def take(db: sqlite3.Connection) -> str | None:
            found = db.execute("UPDATE jobs SET state = ?, runs = runs + 1 WHERE id = (SELECT id FROM jobs WHERE "
                               "state = ? ORDER BY submitted_at LIMIT 1) RETURNING id",
                               (RUNNING, QUEUED_STATE)).fetchone()
            return None if found is None else found[0]
        return self._write(take)

    def add_event(self, job_id: str, kind: str, data: dict) -> None:
        self._write(lambda db: _insert_event(db, job_id, kind, data))

    def finish(self, job_id: str, result: Result, state: str = DONE) -> bool:
        """Record the result and its verdict event, once: a job already finished is left as it is (False)."""
        def record(db: sqlite3.Connection) -> bool:
            updated = db.execute("UPDATE jobs SET state = ?, result = ?, verdict = ?, finished_at = ? "
                                 "WHERE id = ? AND state IN (?, ?)",
                                 (state, json.dumps(result.to_json()), result.verdict, time.time(), job_id,
                                  QUEUED_STATE, RUNNING)).rowcount
            if updated:
                _insert_event(db, job_id, VERDICT, {"result": result.to_json()})
            return bool(updated)
        return self._write(record)

    def cancel(self, job_id: str) -> JobRow | None:
        """Ask for a job's cancel: a queued one ends at once; a running one when its worker stops it."""
        job = self.get(job_id)
        if job is None or job.finished:
            return job
        self._write(lambda db: db.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,)))
        if job.state == QUEUED_STATE:
            self.finish(job_id, cancelled_result(job.name), CANCELLED)
        return self.get(job_id)

    def recover(self) -> int:
        """At start: jobs a dead server left running are queued again (their cancel, if asked, is honoured).
        Returns how many were requeued."""
        for job in self.list(RUNNING, limit=1_000_000):
            if job.cancel_requested:
                self.finish(job.id, cancelled_result(job.name), CANCELLED)
        return self._write(lambda db: db.execute("UPDATE jobs SET state = ? WHERE state = ?",
                                                 (QUEUED_STATE, RUNNING)).rowcount)


def cancelled_result(name: str) -> Result:
    return unknown(name, CANCELLED_REASON, 0.0)
