"""Trainer adapters: thin translations between trainers and :class:`~prove_gym.env.env.ProveEnv`.

Each adapter lives in its own module and imports its trainer there, so the
core never needs torch:

- :mod:`prove_gym.adapters.openrlhf`: a file usable as OpenRLHF's
  ``--train.agent_func_path`` (``AgentExecutor`` over a multi-turn agent
  instance); install ``prove-gym[openrlhf]``.
- :mod:`prove_gym.adapters.trl`: ``environment_class(server)`` builds a class
  for TRL's ``GRPOTrainer(environment_factory=...)``; install ``prove-gym[trl]``.
- :mod:`prove_gym.adapters.common`: what both share (task resolution,
  ``PROVE_*`` settings, chat-template rendering of environment feedback).
"""
