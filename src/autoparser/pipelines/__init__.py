"""Adapters of :mod:`autoparser.batch` to data pipelines (docs/batch.md): each module imports its library only when
used, and ``import autoparser`` imports none of them.

* :mod:`autoparser.pipelines.datasets` — Hugging Face ``datasets``: a function for
  ``Dataset.map(..., batched=True, num_proc=N)``, and :func:`~autoparser.pipelines.datasets.parse_dataset`;
* :mod:`autoparser.pipelines.ray` — Ray Data: a callable class for ``Dataset.map_batches(..., concurrency=N)`` that
  builds the analysis once per worker, and :func:`~autoparser.pipelines.ray.parse_ray_dataset`;
* :mod:`autoparser.pipelines.vllm_offline` — vLLM's offline outputs (``LLM.generate`` / ``LLM.chat``) read into
  messages.
"""
