"""Fusion policy: configuration, rules, user policies, refusal codes and the fusion report.

Public names: :class:`BasePolicy` (subclass it), :class:`OpView` (what ``should_fuse`` sees),
:func:`register_policy`, :func:`load_config`, :class:`FusionConfig`, :data:`REASON_CODES`.
"""

from autofusion.policy.base import BasePolicy, OpView, load_policy, register_policy
from autofusion.policy.config import FusionConfig, config_from_dict, load_config
from autofusion.policy.reasons import REASON_CODES, Refusal

__all__ = [
    "REASON_CODES",
    "BasePolicy",
    "FusionConfig",
    "OpView",
    "Refusal",
    "config_from_dict",
    "load_config",
    "load_policy",
    "register_policy",
]
