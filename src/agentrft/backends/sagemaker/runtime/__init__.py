"""What runs inside the Amazon Bedrock AgentCore runtime (the deployed bundle's `main.py`
starts `runtime.main`): the /invocations app that plays one rollout per call through the
one agent loop, the rollout payload, the job runtime's bearer tokens, and the
CompleteRollout / UpdateReward reports. Nothing here talks to the SageMaker control plane.
"""
