"""An emulated vLLM engine: an OpenAI-compatible server with continuous batching and no GPU (docs/engine.md)."""
