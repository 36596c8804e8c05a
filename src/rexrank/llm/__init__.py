"""LLM backends shared by the model-judged metrics (GREEN, FineRadScore).

- ``hf_local``: transformers on CPU/GPU, greedy, left-padded batches (token ids in, completion ids out; or chat).
- ``vllm_backend``: vLLM fed the same prompt token ids (optional extra ``rexrank[vllm]``).
- ``openai_http``: any OpenAI-compatible chat-completions endpoint (or a farm of them) over httpx, with concurrency
  limits, timeouts and retries; answers read under a size cap and checked to be chat completions (anything else is
  the endpoint's failure, retried elsewhere); a slow endpoint's tail hedged; the API key comes from an environment
  variable and never appears in logs, errors or fingerprints.
"""
