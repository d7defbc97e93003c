"""The SFQ proxy: OpenAI routes in front of upstream servers, dispatched by the core's SFQ, and the event stream it publishes (semantics §8)."""
