"""The console's export download (streamed as it is read from the store) and its import: a job
that receives the file in parts, then imports it while the page shows its progress."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import suppress

from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from symbiote.console.forms import checked_form
from symbiote.console.gate import visit_of
from symbiote.console.jobs import ImportJob, JobError
from symbiote.console.rendering import page, problem
from symbiote.console.session import Sessions
from symbiote.console.state import console_state
from symbiote.errors import SymbioteError
from symbiote.transfer import batch_tag, export_lines

CHUNK_BYTES = 1024 * 1024


def _chunk_bytes(request: Request) -> int:
    """Upload parts well under the server's request body cap."""
    cap = console_state(request).max_body
    return max(16 * 1024, min(CHUNK_BYTES, cap // 2))


async def transfer_page(request: Request) -> Response:
    state = console_state(request)
    jobs = state.jobs
    return page(
        request,
        "transfer.html",
        chunk=_chunk_bytes(request),
        history=state.turns is not None,
        jobs=jobs.recent(),
        busy=jobs.busy,
        running=next((job for job in jobs.recent() if job.state in ("waiting", "running")), None),
        paste_tag=batch_tag(),
    )


async def export_download(request: Request) -> Response:
    state = console_state(request)
    with_history = request.query_params.get("history") == "1" and state.turns is not None
    with_vectors = request.query_params.get("vectors") == "1"
    lines = export_lines(state.bulk, state.turns if with_history else None, with_vectors=with_vectors)
    try:
        header = await anext(lines)  # the store is read before the download starts, so a failure is a page
    except SymbioteError as exc:
        return problem(request, str(exc), status=503)

    async def body() -> AsyncIterator[bytes]:
        yield header.encode("utf-8")
        async for line in lines:
            yield line.encode("utf-8")

    name = time.strftime("symbiote-export-%Y%m%d-%H%M%S.jsonl", time.gmtime())
    return StreamingResponse(
        body(),
        media_type="application/x-ndjson; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


def _csrf_refused(request: Request) -> Response | None:
    if Sessions.csrf_ok(visit_of(request).session, request.headers.get("x-csrf-token")):
        return None
    return PlainTextResponse("This page has expired; reload it and try again.", status_code=403)


def _job(request: Request) -> ImportJob | None:
    return console_state(request).jobs.get(request.path_params["job_id"])


async def import_create(request: Request) -> Response:
    refused = _csrf_refused(request)
    if refused is not None:
        return refused
    try:
        job = console_state(request).jobs.create(request.query_params.get("name", ""))
    except JobError as exc:
        return PlainTextResponse(str(exc), status_code=429)
    return JSONResponse({"job": job.job_id, "chunk": _chunk_bytes(request)})


async def import_part(request: Request) -> Response:
    refused = _csrf_refused(request)
    if refused is not None:
        return refused
    job = _job(request)
    if job is None:
        return PlainTextResponse("No such import.", status_code=404)
    body = await request.body()
    try:
        await console_state(request).jobs.append(job, body)
    except JobError as exc:
        return PlainTextResponse(str(exc), status_code=409)
    return JSONResponse({"received": job.received})


async def import_start(request: Request) -> Response:
    refused = _csrf_refused(request)
    if refused is not None:
        return refused
    job = _job(request)
    if job is None:
        return PlainTextResponse("No such import.", status_code=404)
    try:
        query = request.query_params
        console_state(request).jobs.start(job, query.get("dry_run") == "1", replace=query.get("replace") == "1")
    except JobError as exc:
        return PlainTextResponse(str(exc), status_code=409)
    return page(request, "import_status.html", job=job)


async def import_cancel(request: Request) -> Response:
    """POST (the status page's form): stop the import; the page then shows it cancelled."""
    form = await checked_form(request)
    if form is None:
        return problem(request, "This form has expired; reload the page and try again.", status=403)
    job = _job(request)
    if job is None:
        return problem(request, "This import is no longer known (imports are forgotten after an hour).", 404)
    try:
        console_state(request).jobs.cancel(job)
    except JobError as exc:
        return problem(request, str(exc), status=409)
    if job.task is not None:
        with suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(asyncio.shield(job.task), 10)
    return RedirectResponse(f"{request.scope.get('root_path', '')}/import/{job.job_id}", status_code=303)


async def import_status(request: Request) -> Response:
    """The import's progress or report: the part the page polls (htmx), or a page of its own
    (a link from the list of imports, after leaving the page)."""
    job = _job(request)
    whole = request.headers.get("hx-request") != "true"
    if job is None:
        if whole:
            return problem(request, "This import is no longer known (imports are forgotten after an hour).", 404)
        return HTMLResponse(
            "<p>This import is no longer known (imports are forgotten after an hour).</p>", status_code=404
        )
    return page(request, "import_page.html" if whole else "import_status.html", job=job)
