"""`localagent serve`: the local model behind an OpenAI-compatible endpoint.

`app.py` holds the HTTP server (`ModelServer`), `protocol.py` the wire format (request
bodies, vLLM's `structured_outputs` grammar field, response objects).
"""

from __future__ import annotations

from localagent.server.app import ModelServer
from localagent.server.protocol import BadRequest, GenerationRequest

__all__ = ["BadRequest", "GenerationRequest", "ModelServer"]
