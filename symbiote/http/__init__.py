"""The HTTP face: the ASGI app, legacy SSE, body limits, DNS-rebinding rules and health."""
