"""Objects of one colour: blobs split by connectivity, named by tracking, and the catalogue a
scene gives perception."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness_bt.authoring.scenes import load_scene
from skills.perception.catalogue import catalogue_for, colour_range
from skills.perception.instances import InstanceTracker, components


@dataclass(frozen=True)
class Blob:
    object_id: str
    position: tuple[float, float, float]
    confidence: float = 1.0


def test_components_split_a_mask_largest_first_and_drop_specks() -> None:
    mask = np.zeros((20, 20), dtype=bool)
    mask[1:4, 1:4] = True     # 9 pixels
    mask[10:16, 10:16] = True  # 36 pixels
    mask[18, 18] = True        # a speck
    blobs = components(mask, min_pixels=4)
    assert [int(b.sum()) for b in blobs] == [36, 9]
    assert components(np.zeros((5, 5), dtype=bool), 1) == []


def test_blobs_are_named_by_position_then_followed_as_they_move() -> None:
    tracker = InstanceTracker(("r1", "r2", "r3"))
    first = tracker.assign([Blob("r1", (0.6, 0.0, 0.02)), Blob("r1", (0.4, 0.1, 0.02)),
                            Blob("r1", (0.5, -0.1, 0.02))])
    assert {k: v.position[0] for k, v in first.items()} == {"r1": 0.4, "r2": 0.5, "r3": 0.6}
    # r2 carried away (small steps), the others still; seen from two cameras (merged)
    moved = tracker.assign([Blob("r1", (0.53, -0.08, 0.1)), Blob("r1", (0.6, 0.0, 0.02)),
                            Blob("r1", (0.401, 0.1, 0.02)), Blob("r1", (0.6, 0.005, 0.02), 0.5)])
    assert moved["r2"].position == (0.53, -0.08, 0.1) and len(moved) == 3
    # r3 hidden: the two others keep their names; r3 is not seen, not renamed
    hidden = tracker.assign([Blob("r1", (0.4, 0.1, 0.02)), Blob("r1", (0.55, -0.06, 0.15))])
    assert set(hidden) == {"r1", "r2"}
    # r2 seen again far from its last place (it went behind the arm): the id left takes it
    back = tracker.assign([Blob("r1", (0.4, 0.1, 0.02)), Blob("r1", (0.6, 0.0, 0.02)),
                           Blob("r1", (0.45, 0.2, 0.02))])
    assert back["r2"].position == (0.45, 0.2, 0.02) and back["r3"].position[0] == 0.6
    tracker.reset()
    assert tracker.tracks == {}


def test_a_scene_gives_perception_its_catalogue() -> None:
    catalogue = {s.object_id: s for s in catalogue_for(load_scene("sort").spec.objects)}
    assert catalogue["tray"].kind == "container" and catalogue["red_cube_1"].kind == "movable"
    assert catalogue["red_cube_1"].colour == catalogue["red_cube_3"].colour == colour_range("red")
    yellowish = colour_range([0.9, 0.8, 0.1])
    assert 40 <= (yellowish.hue_lo + 20) % 360 <= 60 and yellowish.sat_lo > 0.3
    assert colour_range([0.5, 0.5, 0.5]).sat_hi <= 0.25
