"""CacheTuner: tune a Redis cache in front of expensive AI inference with reinforcement learning.

The package is organised by concern; the folder tree is the architecture:

- ``traces``        trace readers (one per format) and seeded synthetic workloads
- ``sim``           Redis-faithful tiered cache simulator (numba hot loop)
- ``live``          local stack launcher, live Redis backend, replay load generator, fidelity
- ``env``           gymnasium environment over any ``CacheBackend``
- ``agent``         PPO training (stable-baselines3) from YAML experiment configs
- ``control``       every controller (mrc, hindsight references, the trained policy, ...) behind one protocol
- ``mrc``           full-range miss-ratio curves from miniature simulations
- ``evaluation``    controllers on identical traffic, suites, MLflow logging
- ``hotness_model`` LSTM key-popularity model, its dataset and baselines
- ``serving``       Triton model repository, launcher and client
- ``daemon``        guarded long-running tuning loop for live Redis
- ``ab``            shadow-mode A/B evaluation
- ``tracking``      MLflow helpers
"""

__version__ = "0.1.0"
