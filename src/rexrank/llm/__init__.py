"""LLM backends shared by the model-judged metrics (GREEN, FineRadScore).

- ``hf_local``: transformers on CPU/GPU, greedy, left-padded batches (token ids in, completion ids out; or chat).
- ``vllm_backend``: vLLM fed the same prompt token ids (optional extra ``rexrank[vllm]``).
- ``openai_http``: any OpenAI-compatible chat-completions endpoint over httpx, with concurrency limits, timeouts and
  retries; the API key comes from an environment variable and never appears in logs, errors or fingerprints.
"""
