"""`symbiote`: serve over HTTP or stdio, prepare the first start, and the owner's admin commands.

The commands import what they need when they run, so that `symbiote serve` reaches its port soon.
"""

from __future__ import annotations

import argparse

from symbiote import __version__
from symbiote.cli.admin import console, keys, oauth, owner_secret_hash, reset
from symbiote.cli.prepare import export, record_handshake
from symbiote.cli.serve import serve, stdio
from symbiote.cli.transfer_commands import add_commands as add_transfer_commands

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """The console entry point (`symbiote`, `python -m symbiote`): run one command, return its exit status."""
    parser = argparse.ArgumentParser(prog="symbiote", description="Venom's persistent memory, over MCP.")
    parser.add_argument("--version", action="version", version=f"symbiote {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="serve streamable HTTP (/mcp), legacy SSE and /health")
    serve_cmd.add_argument("--host", help="interface to bind (default: HOST or 127.0.0.1)")
    serve_cmd.add_argument("--port", type=int, help="port (default: PORT or 8000)")
    serve_cmd.add_argument(
        "--transport",
        choices=("http", "sse", "stdio"),
        help="http: streamable HTTP at /mcp plus legacy SSE (default); sse: legacy SSE only; stdio: stdin/stdout "
        "(default: SYMBIOTE_TRANSPORT or http)",
    )
    serve_cmd.set_defaults(run=serve)
    commands.add_parser(
        "record-handshake", help="record the answers to initialize, tools/list... for the next start (setup runs it)"
    ).set_defaults(run=record_handshake)
    commands.add_parser(
        "stdio", help="serve over stdin/stdout (Claude Desktop); = serve --transport stdio"
    ).set_defaults(run=stdio)
    export_cmd = commands.add_parser("export-model", help="export the bundled model to ONNX (needs torch)")
    export_cmd.add_argument("--target", help="directory to write (default: SYMBIOTE_MODEL_DIR)")
    export_cmd.set_defaults(run=export)
    keys_cmd = commands.add_parser("keys", help="API keys for clients that send 'Authorization: Bearer' (oauth mode)")
    key_actions = keys_cmd.add_subparsers(dest="action", required=True)
    create_cmd = key_actions.add_parser("create", help="create a key and print it once")
    create_cmd.add_argument("name", help="what the key is for, e.g. vscode")
    key_actions.add_parser("list", help="list keys (never the keys themselves)")
    revoke_cmd = key_actions.add_parser("revoke", help="revoke a key by id or name")
    revoke_cmd.add_argument("key", help="the key's id (key_...) or name")
    keys_cmd.set_defaults(run=keys)
    oauth_cmd = commands.add_parser("oauth", help="manage OAuth connections (Claude, ChatGPT connectors)")
    oauth_actions = oauth_cmd.add_subparsers(dest="action", required=True)
    oauth_actions.add_parser("revoke-all", help="disconnect every OAuth connector and sign the console out everywhere")
    oauth_cmd.set_defaults(run=oauth)
    console_cmd = commands.add_parser("console", help="manage the owner's console sessions")
    console_actions = console_cmd.add_subparsers(dest="action", required=True)
    console_actions.add_parser("sign-out-all", help="end every console session (a new signing key)")
    console_cmd.set_defaults(run=console)
    reset_cmd = commands.add_parser("reset", help="start an empty memory store (the old one is kept aside)")
    reset_cmd.add_argument("--confirm", action="store_true", help="really do it")
    reset_cmd.add_argument(
        "--sign-ins", action="store_true", help="also set aside the sign-in database (every API key and connected app)"
    )
    reset_cmd.set_defaults(run=reset)
    commands.add_parser(
        "owner-secret-hash", help="print SYMBIOTE_OWNER_SECRET_HASH for an owner secret read from stdin"
    ).set_defaults(run=owner_secret_hash)
    add_transfer_commands(commands)
    args = parser.parse_args(argv)
    return int(args.run(args))
