"""Many clients at once against a real `symbiote serve`: load, heavy batch, churn, kill -9.

Usage:
    .venv/bin/python benchmarks/load.py                       # the full run (10-minute mixed load)
    .venv/bin/python benchmarks/load.py --duration 60 --cycles 2000 --kill-rounds 5   # a quick run
    .venv/bin/python benchmarks/load.py --phases kill --kill-rounds 20                 # one part only
    .venv/bin/python benchmarks/load.py --source-rev HEAD ...   # serve a commit, not the working tree

Starts its own server (`.venv/bin/symbiote serve --port N`, a free loopback port, a temporary
CHROMADB_PATH unless --data is given) and runs, in order, the phases named in --phases:

  load    100 streamable-HTTP clients (`Client(url + "/mcp")`) plus 20 legacy-SSE clients
          (`Client(sse_client(url + "/sse"), mode="legacy")`) connect; server RSS idle vs. all
          connected; then the 100 HTTP clients search only (--rate-seconds), store only
          (--rate-seconds), and all 120 run mixed store/search for --duration seconds.
          Every acknowledged memory id is fetched back with get_memory afterwards.
          A client whose session dies counts one failed request, is listed with the time, and
          reconnects. For legacy SSE that is a message POST that failed: the SDK's `sse_client`
          then logs "Error in post_writer" and fails every later call with "Connection closed"
          (the call in flight never gets an answer), so the POSTs are watched and the call in
          flight ends at once. --client-log FILE keeps the SDK client's warnings and tracebacks.
  batch   One client stores --batch memories as fast as it can (--batch-concurrency calls in
          flight) while another runs memory_stats and search_memory back to back; p50/p95 of
          those, and the event-loop lag (see below), idle baseline vs. during the batch.
  cycles  --cycles connect/initialize/close cycles (a share of them legacy SSE): server RSS growth,
          and whether SSE sessions are released (a closed session's message URL must answer 404;
          `active_sessions` from /health when the server reports it).
  kill    Round 0: SIGTERM during concurrent writers (exit code, time to exit, errors logged
          while shutting down); then --kill-rounds rounds of `kill -9` at a random moment during
          concurrent writers (HTTP and SSE). After each, restart on the same directory: health
          must say store "ready", the boot log must be free of errors, every acknowledged write
          must be there (get_memory, same content) and a sample findable by search.
  At the end every memory acknowledged in any phase is fetched once more.

Event-loop lag is measured from outside, in a separate process: the latency of
`GET /__lag_probe` (a path no route serves, so the answer is a 404 from the router that touches
neither the store nor a worker thread), sent every 20 ms over a keep-alive connection. Lag is
that latency minus its idle median. /health latency is reported too (it counts memories on a
store thread, so it also shows queueing for the store).

No assertions: it prints figures (and --json FILE writes them). Exit status 1 when any
acknowledged write was lost, 0 otherwise. The machine is shared, so every figure is printed
with the load average at the time it was taken.
"""

from __future__ import annotations

from loadtest.main import main  # this directory is on sys.path when run as a script

if __name__ == "__main__":
    raise SystemExit(main(__doc__.split("\n\n")[0]))
