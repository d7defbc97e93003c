"""The live side: an SFQ proxy for OpenAI-compatible servers, its event stream (semantics §8), and the client that follows it."""
