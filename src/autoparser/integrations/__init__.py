"""Adapters that plug autoparser into serving stacks.

Each adapter is its own module and imports its stack only when it is imported itself, so ``import autoparser``
never pulls in a serving stack: ``autoparser.integrations.vllm`` needs vLLM installed, this package does not.
``serving`` holds what the adapters share (one parsed reply per request, deltas merged per feed, marker ids).
"""
