"""Perception (``observe``): find catalogue objects in RGB-D frames and turn them into
world-model updates with pose, extent, confidence, provenance and relations."""

from skills.perception.catalogue import BUILTIN_OBJECTS, KnownObject
from skills.perception.perceive import ColourPerception, Detection, colour_perception
from skills.perception.vision import ColourRange, back_project, fit_box

__all__ = [
    "BUILTIN_OBJECTS",
    "ColourPerception",
    "ColourRange",
    "Detection",
    "KnownObject",
    "back_project",
    "colour_perception",
    "fit_box",
]
