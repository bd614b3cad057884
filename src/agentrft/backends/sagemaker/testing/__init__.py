"""Test support for the sagemaker backend: a loopback job runtime and stubbed AWS clients."""
