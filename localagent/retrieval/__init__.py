"""Semantic tool filtering: a Chroma index of tool descriptions and Semantic Kernel's
filter options. Heavy libraries (chromadb, sentence-transformers) load only when used."""

from localagent.retrieval.embeddings import (
    CountingEmbedder,
    Embedder,
    EmbeddingModelError,
    MiniLMEmbedder,
)
from localagent.retrieval.filter import FilterOptions, ScoredTool, filter_tools
from localagent.retrieval.index import SearchHit, SyncReport, ToolIndex

__all__ = [
    "CountingEmbedder",
    "Embedder",
    "EmbeddingModelError",
    "FilterOptions",
    "MiniLMEmbedder",
    "ScoredTool",
    "SearchHit",
    "SyncReport",
    "ToolIndex",
    "filter_tools",
]
