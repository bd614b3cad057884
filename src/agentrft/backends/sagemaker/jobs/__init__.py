"""The control plane, run on the user's machine: AWS sessions, CreateJob documents and
their recipe checks, training and evaluation jobs, preflight, IAM, S3, costs, and deploying
the runtime (bundle, deploy, smoke test). None of it runs inside AgentCore.
"""
