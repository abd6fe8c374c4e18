"""HTTP plumbing on both sides of the server: client connections (timeouts, bodies within limits), who may ask
(Host, API keys, media types, CORS) and what a reply may show (secrets scrubbed), the access log with request ids,
and the direct reader of the upstream's replies."""
