"""The model planner, ``openai``: asks an OpenAI-compatible chat-completions endpoint (``POST
{url}/chat/completions``, as vLLM, llama.cpp's server and Ollama serve it) to choose a task and
its parameters, with the answer constrained by a JSON schema (``response_format: json_schema``,
strict): ``{"task": <one of the tasks> | null, "params": {...} | null, "refusal": <why> |
null}``, each task's parameters typed and its object parameters an enum of its scene's objects.

The answer is checked like a task file's parameters (:mod:`harness_bt.planner.check`): an
unknown task or object, or a value of the wrong type, is a refusal with the reasons. So is an
answer that is not JSON, an HTTP error, an endpoint that cannot be reached and one that does
not answer within the timeout: the planner never raises for them, it refuses, and the
refusal says what happened and what to do. After an abort the prompt carries the attempts so
far, each with its reason and evidence."""

from __future__ import annotations

import json
from typing import Any

import httpx

from harness_bt.authoring.model import ParamSpec
from harness_bt.errors import PlanningError
from harness_bt.planner.check import check_answer, task_lines
from harness_bt.planner.model import (
    Candidate,
    Decision,
    PlanRequest,
    Refusal,
    RefusalCode,
    digest,
)
from harness_bt.planner.registry import API_KEY_ENV, URL_ENV, PlannerOptions

__all__ = ["SYSTEM_PROMPT", "OpenAIPlanner", "answer_schema", "user_prompt"]

SYSTEM_PROMPT = (
    "You choose what a robot does. Given an instruction and a library of tasks (each with "
    "the phrasings it is asked by, its typed parameters and the objects of its scene), "
    "answer with the one task that carries out the instruction and the values of its "
    "parameters: an object parameter names an object of that task's scene by its id; null "
    "keeps a parameter's default. When no task fits, or the instruction could mean several "
    "things, answer task null and say why in refusal. When earlier attempts are listed, "
    "they ended without success for the reason and evidence given: choose again (the same "
    "task with other parameters, another task) or refuse.")

_BODY_SHOWN = 300  # characters of an error body quoted in a refusal


def _param_schema(decl: ParamSpec, candidate: Candidate) -> dict[str, Any]:
    schema: dict[str, Any]
    if decl.type == "object":
        schema = {"type": "string"}
        if candidate.objects:
            schema["enum"] = candidate.object_ids()
    elif decl.type == "vector":
        schema = {"type": "array", "items": {"type": "number"}}
        if decl.size is not None:
            schema.update(minItems=decl.size, maxItems=decl.size)
    else:
        schema = {"type": decl.type}
        if decl.min is not None:
            schema["minimum"] = decl.min
        if decl.max is not None:
            schema["maximum"] = decl.max
    if decl.choices:
        schema["enum"] = list(decl.choices)
    if decl.description:
        schema["description"] = decl.description
    if not decl.required:
        return {"anyOf": [schema, {"type": "null"}]}
    return schema


def answer_schema(request: PlanRequest) -> dict[str, Any]:
    """The JSON schema of an answer: a task of the request (or null), the parameters of one
    of the tasks, a refusal text (or null)."""
    params = [{"type": "object", "title": c.name,
               "properties": {n: _param_schema(d, c) for n, d in c.params.items()},
               "required": list(c.params), "additionalProperties": False}
              for c in request.candidates]
    return {
        "type": "object",
        "properties": {
            "task": {"enum": [*(c.name for c in request.candidates), None]},
            "params": {"anyOf": [*params, {"type": "null"}]},
            "refusal": {"type": ["string", "null"]},
        },
        "required": ["task", "params", "refusal"],
        "additionalProperties": False,
    }


def user_prompt(request: PlanRequest) -> str:
    """The instruction, the library and the attempts so far, as the model reads them."""
    parts = [f"Instruction: {request.instruction}",
             "Tasks:\n" + json.dumps([c.to_dict() for c in request.candidates], indent=1)]
    if request.given:
        parts.append("Set by the user (keep these values): " + json.dumps(dict(request.given)))
    if request.attempts:
        parts.append("Earlier attempts, which ended without success:\n"
                     + json.dumps([a.to_dict() for a in request.attempts], indent=1,
                                  default=str))
    return "\n\n".join(parts)


class OpenAIPlanner:
    """Chooses with a model behind an OpenAI-compatible endpoint (see the module docstring);
    ``options.url`` and ``options.model`` are required."""

    name = "openai"

    def __init__(self, options: PlannerOptions) -> None:
        if not options.url:
            raise PlanningError("PLANNER_NOT_CONFIGURED", "planner 'openai' has no endpoint",
                                fix=f"pass --planner-url http://HOST:PORT/v1 (or set "
                                    f"{URL_ENV}): the base under which /chat/completions is "
                                    "served")
        if not options.model:
            raise PlanningError("PLANNER_NOT_CONFIGURED", "planner 'openai' has no model name",
                                fix="pass --planner-model NAME (a model the endpoint serves)")
        if not options.timeout_s > 0:
            raise PlanningError("PLANNER_NOT_CONFIGURED", f"planner timeout "
                                f"{options.timeout_s!r} s is not positive",
                                fix="give a timeout above 0 s")
        self.url = options.url.rstrip("/") + "/chat/completions"
        self.model = options.model
        self.timeout_s = options.timeout_s
        headers = {"Authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        self._client = httpx.Client(timeout=options.timeout_s, headers=headers,
                                    transport=options.transport)

    def close(self) -> None:
        self._client.close()

    def body(self, request: PlanRequest) -> dict[str, Any]:
        """The chat-completions request for ``request``."""
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                         {"role": "user", "content": user_prompt(request)}],
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "task_choice", "schema": answer_schema(request), "strict": True}},
        }

    def plan(self, request: PlanRequest) -> Decision:
        body = self.body(request)
        asked = digest(body)

        def refuse(code: RefusalCode, reason: str, fix: str, answer: Any = None) -> Decision:
            return Decision(self.name, asked, answer, refusal=Refusal(
                code, (reason,), task_lines(request.candidates), fix=fix))

        try:
            response = self._client.post(self.url, json=body)
        except httpx.TimeoutException:
            return refuse(RefusalCode.TIMEOUT, f"{self.url} did not answer within "
                          f"{self.timeout_s:g} s", "check that the model server is up and not "
                          "overloaded, or give it longer (--planner-timeout)")
        except httpx.HTTPError as exc:
            return refuse(RefusalCode.UNREACHABLE, f"cannot reach {self.url}: {exc!r}",
                          f"start the model server, or fix --planner-url / {URL_ENV}")
        raw = response.text
        if response.status_code >= 400:
            key = f" (with {API_KEY_ENV})" if response.status_code in (401, 403) else ""
            return refuse(RefusalCode.HTTP, f"{self.url} answered HTTP "
                          f"{response.status_code}: {raw[:_BODY_SHOWN]!r}",
                          f"check the endpoint, the model name {self.model!r} and the "
                          f"key{key}", raw)
        content, problem = _content(raw)
        if problem:
            return refuse(RefusalCode.BAD_ANSWER, f"{self.url} answered {problem}",
                          "use a server that supports response_format json_schema (vLLM, "
                          "llama.cpp's server, Ollama) and a model that follows it", raw)
        answer = content
        assert isinstance(answer, dict)
        if answer.get("task") is None:
            why = answer.get("refusal") or "(no reason given)"
            return Decision(self.name, asked, raw, refusal=Refusal(
                RefusalCode.MODEL_REFUSED, (f"the model chose no task: {why}",),
                task_lines(request.candidates),
                fix="say it more plainly, or run a task file directly (harness run FILE)"))
        checked = check_answer(request, answer.get("task"), answer.get("params"))
        if isinstance(checked, Refusal):
            return Decision(self.name, asked, raw, refusal=checked)
        return Decision(self.name, asked, raw, plan=checked)


def _content(raw: str) -> tuple[dict[str, Any] | None, str]:
    """The answer object of a chat-completions body, or what is wrong with the body."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"a body that is not JSON ({exc.msg} at {exc.pos}): {raw[:_BODY_SHOWN]!r}"
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None, ("a body without choices[0].message.content: "
                      f"{raw[:_BODY_SHOWN]!r}")
    if not isinstance(content, str):
        return None, f"a message content that is not text: {content!r}"
    try:
        answer = json.loads(content)
    except json.JSONDecodeError as exc:
        return None, (f"a message that is not JSON ({exc.msg} at {exc.pos}): "
                      f"{content[:_BODY_SHOWN]!r}")
    if not isinstance(answer, dict) or "task" not in answer:
        return None, ("a message that is not an object with a task: "
                      f"{content[:_BODY_SHOWN]!r}")
    return answer, ""
