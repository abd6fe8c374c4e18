"""Running the server: health that reflects the upstream, Prometheus metrics, when to collect garbage, and worker
processes on one port."""
