"""The model planner against a scripted OpenAI-compatible endpoint on a loopback port: the
request it sends (the task list, the schema, the key), a valid answer, and each way an answer
or a call fails (not JSON, an unknown task, an unknown object, a wrong type, an HTTP error, a
stall past the timeout, no server at all) refused with a clear reason."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from harness_bt.errors import PlanningError
from harness_bt.planner.model import Attempt, Candidate, PlanRequest, RefusalCode
from harness_bt.planner.openai import OpenAIPlanner, answer_schema
from harness_bt.planner.registry import PlannerOptions, open_planner, planner_registry
from tests.harness_bt.planner.model_server import Content, ModelServer, Raw, Stall, model_server

INSTRUCTION = "put the green cube in the tray"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with model_server() as running:
        yield running


@pytest.fixture
def request_(library: tuple[Candidate, ...]) -> PlanRequest:
    return PlanRequest(INSTRUCTION, library)


def planner(server: ModelServer, **options: Any) -> OpenAIPlanner:
    settings: dict[str, Any] = {"url": server.url, "model": "tiny", "timeout_s": 5.0, **options}
    made = open_planner("openai", PlannerOptions(**settings))
    assert isinstance(made, OpenAIPlanner)
    return made


def answer(task: Any, params: Any = None, refusal: Any = None) -> Content:
    return Content(json.dumps({"task": task, "params": params, "refusal": refusal}))


def test_a_valid_answer_is_the_plan_and_the_request_carries_tasks_and_schema(
        server: ModelServer, request_: PlanRequest) -> None:
    server.answers.append(answer("pick_and_place", {"target": "green_cube",
                                                    "container": "tray"}))
    made = planner(server, api_key="secret")
    try:
        decision = made.plan(request_)
    finally:
        made.close()
    assert decision.refusal is None and decision.plan is not None
    assert (decision.plan.task, dict(decision.plan.params)) == (
        "pick_and_place", {"target": "green_cube", "container": "tray"})
    assert decision.planner == "openai"
    (sent,) = server.requests
    assert decision.prompt_digest.startswith("sha256:")
    assert json.loads(decision.answer)["choices"][0]["message"]["content"].startswith("{")
    assert sent["model"] == "tiny" and sent["temperature"] == 0
    assert server.headers[0]["authorization"] == "Bearer secret"
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["task"]["enum"] == [c.name for c in request_.candidates] + [None]
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"task": "stack", "params": {"top": "red_cube", "bottom": "blue_cube"},
                         "refusal": None}, schema)
    with pytest.raises(jsonschema.ValidationError):  # stack's objects are an enum of its scene
        jsonschema.validate({"task": "stack", "params": {"top": "lego", "bottom": "red_cube"},
                             "refusal": None}, schema)
    user = sent["messages"][1]["content"]
    assert user.startswith(f"Instruction: {INSTRUCTION}") and '"pick_and_place"' in user
    assert "Earlier attempts" not in user


def test_after_an_abort_the_prompt_carries_the_attempt_with_its_reason_and_evidence(
        server: ModelServer, request_: PlanRequest) -> None:
    server.answers.append(answer("pick_and_place", {"target": "green_cube",
                                                    "container": "tray"}))
    again = PlanRequest(INSTRUCTION, request_.candidates, (Attempt(
        "pick_and_place", {"target": "green_cube"}, "aborted", "aborted_grasp",
        {"phase": "grasp", "reason": "not held", "evidence": {"gap_m": 0.03}}),))
    made = planner(server)
    try:
        first = made.plan(again)
    finally:
        made.close()
    user = server.requests[0]["messages"][1]["content"]
    assert "Earlier attempts, which ended without success" in user
    assert '"aborted_grasp"' in user and '"gap_m": 0.03' in user
    assert first.plan is not None


@pytest.mark.parametrize(("scripted", "code", "reason"), [
    (Raw("<html>oops</html>"), RefusalCode.BAD_ANSWER,
     "answered a body that is not JSON (Expecting value at 0): '<html>oops</html>'"),
    (Content("task: pick"), RefusalCode.BAD_ANSWER,
     "answered a message that is not JSON (Expecting value at 0): 'task: pick'"),
    (Content('["pick"]'), RefusalCode.BAD_ANSWER,
     "answered a message that is not an object with a task: '[\"pick\"]'"),
    (Raw('{"error": "model tiny not found"}', 404), RefusalCode.HTTP,
     "answered HTTP 404: '{\"error\": \"model tiny not found\"}'"),
    (answer("paint_table", {}), RefusalCode.INVALID,
     "the answer names task 'paint_table', which is not in the library; known: clear_table, "
     "pick, pick_and_place, pick_cube, place_at, policy_pick, policy_pick_alone, sort, stack"),
    (answer("stack", {"top": "purple_cube", "bottom": "red_cube"}), RefusalCode.INVALID,
     "parameter 'top' of stack names object 'purple_cube', which is not in scene stack; its "
     "objects: red_cube, green_cube, blue_cube"),
    (answer("place_at", {"target": "red_cube", "offset": "far"}), RefusalCode.INVALID,
     "parameter 'offset' of place_at is vector (a list of numbers); got \"far\": 'far' is not "
     "a number"),
    (answer("stack", {"top": "red_cube", "height": 3}), RefusalCode.INVALID,
     "task stack has no parameter 'height'; its parameters: bottom, top"),
    (answer(None, None, "there is no table to paint"), RefusalCode.MODEL_REFUSED,
     "the model chose no task: there is no table to paint"),
])
def test_a_bad_answer_is_refused_with_the_reason(
        server: ModelServer, request_: PlanRequest, scripted: Any, code: RefusalCode,
        reason: str) -> None:
    server.answers.append(scripted)
    made = planner(server)
    try:
        decision = made.plan(request_)
    finally:
        made.close()
    assert decision.plan is None and decision.refusal is not None
    assert decision.refusal.code is code
    assert any(reason in r for r in decision.refusal.reasons), decision.refusal.reasons
    error = decision.refusal.error(INSTRUCTION, "openai")
    assert isinstance(error, PlanningError) and error.code == code.value
    assert error.fix


def test_an_endpoint_that_stalls_past_the_timeout_is_refused(
        server: ModelServer, request_: PlanRequest) -> None:
    server.answers.append(Stall())
    made = planner(server, timeout_s=0.2)
    try:
        decision = made.plan(request_)
    finally:
        made.close()
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.TIMEOUT
    assert decision.refusal.reasons == (f"{server.url}/chat/completions did not answer within "
                                        "0.2 s",)
    assert "--planner-timeout" in decision.refusal.fix


def test_no_server_at_all_is_refused_as_unreachable(request_: PlanRequest) -> None:
    with socket.socket() as free:  # a port nobody listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    made = OpenAIPlanner(PlannerOptions(url=f"http://127.0.0.1:{port}/v1", model="tiny",
                                        timeout_s=2.0))
    try:
        decision = made.plan(request_)
    finally:
        made.close()
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.UNREACHABLE
    assert decision.refusal.reasons[0].startswith(f"cannot reach http://127.0.0.1:{port}/v1/"
                                                  "chat/completions: ConnectError")


def test_the_transport_is_a_seam() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500, text="boom")

    made = OpenAIPlanner(PlannerOptions(url="http://model.invalid/v1/", model="m",
                                        transport=httpx.MockTransport(handle)))
    decision = made.plan(PlanRequest("x", ()))
    made.close()
    assert str(seen[0].url) == "http://model.invalid/v1/chat/completions"
    assert decision.refusal is not None and decision.refusal.code is RefusalCode.HTTP


@pytest.mark.parametrize(("options", "message"), [
    ({"model": "m"}, "PLANNER_NOT_CONFIGURED: planner 'openai' has no endpoint; pass "
                     "--planner-url http://HOST:PORT/v1 (or set HARNESS_PLANNER_URL)"),
    ({"url": "http://127.0.0.1:1/v1"}, "planner 'openai' has no model name; pass "
                                       "--planner-model NAME"),
    ({"url": "http://127.0.0.1:1/v1", "model": "m", "timeout_s": 0.0},
     "planner timeout 0.0 s is not positive"),
])
def test_a_model_planner_without_its_settings_says_which(options: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(PlanningError) as caught:
        OpenAIPlanner(PlannerOptions(**options))
    assert message in str(caught.value)


def test_the_endpoint_and_key_come_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_PLANNER_URL", "http://10.0.0.1:8000/v1")
    monkeypatch.setenv("HARNESS_PLANNER_API_KEY", "k")
    options = PlannerOptions.from_env(model="m")
    assert (options.url, options.api_key) == ("http://10.0.0.1:8000/v1", "k")
    assert PlannerOptions.from_env(url="http://h/v1").url == "http://h/v1"  # the flag wins


def test_the_three_planners_are_entry_points_and_an_unknown_one_is_refused() -> None:
    registry = planner_registry(entry_points=True)
    assert registry.names() == ["meaning", "openai", "templates"]
    assert "of package 'harness-bt'" in str(registry.origin("templates"))
    with pytest.raises(Exception, match="unknown planner 'gpt'; known: meaning, openai, templates"):
        open_planner("gpt", PlannerOptions(), registry=registry)


def test_the_schema_types_every_parameter(request_: PlanRequest) -> None:
    schema = answer_schema(request_)
    place_at = next(p for p in schema["properties"]["params"]["anyOf"]
                    if p.get("title") == "place_at")
    assert place_at["required"] == ["target", "offset"]
    assert place_at["properties"]["offset"]["anyOf"][0]["type"] == "array"
    assert place_at["properties"]["target"]["anyOf"][0]["enum"] == ["red_cube", "green_cube",
                                                                    "blue_cube"]


def test_no_server_thread_is_left_behind() -> None:
    before = {t.name for t in threading.enumerate()}
    with model_server():
        pass
    assert "model-server" not in {t.name for t in threading.enumerate()} - before
