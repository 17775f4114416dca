#!/usr/bin/env python3
"""A stand-in model server for end-to-end tests of real agent CLIs.

It speaks one model API the way the agent uses it, streaming where the agent streams:

  anthropic  POST /v1/messages           Anthropic Messages, SSE (Claude Code)
  responses  POST /v1/responses          OpenAI Responses, SSE (Codex CLI)
  chat       POST /v1/chat/completions   OpenAI chat completions, SSE or JSON (aider, opencode)
  gemini     POST /v1beta/models/M:generateContent, :streamGenerateContent?alt=sse,
             :countTokens                Gemini API (Gemini CLI)

and plays a model that makes ONE edit to one file, in the agent's own edit protocol (with an
empty "old", it creates the file instead: how a review job's model writes its comments to
`.airlock/comments.jsonl`):

  anthropic  tool_use Read, then tool_use Edit (old_string -> new_string), then a last text
  responses  exec_command `apply_patch <<'EOF' ... EOF` (Codex's patch grammar), then text
  chat       a SEARCH/REPLACE block (aider's `diff` edit format), then text;
             with tools offered (opencode), tool calls `read` then `edit`, then text
  gemini     functionCall read_file, then replace (old_string -> new_string), then text

It answers as the model named by --answer-as, where `{model}` is the model the request asked
for (default `{model}-20261203`: a dated snapshot of it, as real APIs answer an alias), with
usage 321 tokens in and 45 out per answer (Gemini: `usageMetadata`, `modelVersion`).

Every request is checked against its API (path, key, model, messages, tools); a malformed one
gets a 400 in the API's error shape. Every request is logged as one JSON line in --log:
{"api", "path", "model", "stream", "tools", "turn", "error"}; `turn` says what was answered
(read, edit, done, side, count) and `error` why a request was refused or a tool failed.

Usage: standin.py --api API --key KEY --edit JSON --log FILE [--port 0] [--answer-as NAME]
  --edit '{"file": "src/calc.py", "old": "...", "new": "..."}'
Prints "listening HOST:PORT" on stdout once it accepts connections. Python stdlib only.
"""

import argparse
import http.server
import json
import re
import sys
import threading
import uuid

ANSWER_AS = "{model}-20261203"
TOKENS_IN, TOKENS_OUT = 321, 45


class Refused(Exception):
    """A request the real API would refuse (400/401)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def need(cond, message, status=400):
    if not cond:
        raise Refused(status, message)


def check_bearer(headers, key):
    got = headers.get("authorization", "")
    need(got == "Bearer " + key, "missing or wrong Authorization bearer key", 401)


def check_model(body):
    need(isinstance(body.get("model"), str) and body["model"], "model: a non-empty string")


def served(model):
    """The name the stand-in answers with for a request for `model`."""
    return ANSWER_AS.replace("{model}", model)


def tool_names(tools):
    need(isinstance(tools, list), "tools: a list")
    names = []
    for t in tools:
        need(isinstance(t, dict), "tools[]: an object")
        names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return names


# ---- the edit, in each agent's protocol ----------------------------------------------------


def apply_patch_text(edit):
    """Codex's patch grammar: replace the old lines with the new ones in one hunk; with an
    empty `old`, add the file."""
    old = edit["old"].splitlines()
    new = edit["new"].splitlines()
    if not old:
        return "\n".join(["*** Begin Patch", "*** Add File: " + edit["file"]]
                         + ["+" + l for l in new] + ["*** End Patch"])
    lines = ["*** Begin Patch", "*** Update File: " + edit["file"], "@@"]
    lines += ["-" + l for l in old] + ["+" + l for l in new] + ["*** End Patch"]
    return "\n".join(lines)


def search_replace_text(edit):
    """aider's `diff` edit format: the file name, then one fenced SEARCH/REPLACE block."""
    return "I'll make that change.\n\n{}\n```python\n<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n```\n".format(
        edit["file"], edit["old"], edit["new"]
    )


def workdir_of(raw):
    """The agent's working directory as its system prompt states it (a model reads it there)."""
    m = re.search(r"Primary working directory: ([^\s\\]+)", raw)
    need(m is not None, "no working directory in the prompt (Claude Code states it)")
    return m.group(1)


# ---- Anthropic Messages --------------------------------------------------------------------


def anthropic(h, body, raw, edit):
    need(h.headers.get("x-api-key") == h.key or h.headers.get("authorization") == "Bearer " + h.key,
         "missing or wrong x-api-key", 401)
    need(h.headers.get("anthropic-version"), "missing anthropic-version header")
    path = h.path.split("?")[0]
    check_model(body)
    msgs = body.get("messages")
    need(isinstance(msgs, list) and msgs, "messages: a non-empty list")
    for m in msgs:
        need(isinstance(m, dict) and m.get("role") in ("user", "assistant", "system"), "messages[].role")
        need(isinstance(m.get("content"), (str, list)), "messages[].content: string or blocks")
        if isinstance(m["content"], list):
            for b in m["content"]:
                need(isinstance(b, dict) and isinstance(b.get("type"), str), "content blocks need a type")
    if path == "/v1/messages/count_tokens":
        return "count", 200, {"input_tokens": TOKENS_IN}, None
    need(path == "/v1/messages", "unknown path " + path, 404)
    need(isinstance(body.get("max_tokens"), int) and body["max_tokens"] > 0, "max_tokens: a positive integer")
    names = tool_names(body.get("tools", []))
    for t in body.get("tools", []):
        if t.get("type") in (None, "custom"):
            need(isinstance(t.get("input_schema"), dict), "tools[].input_schema: an object")
    results = {}
    last = msgs[-1]
    if last["role"] == "user" and isinstance(last["content"], list):
        for b in last["content"]:
            if b["type"] == "tool_result":
                results[b.get("tool_use_id")] = b
    error = None
    if not {"Read", "Edit"} <= set(names):
        turn, blocks, stop = "side", [{"type": "text", "text": "OK"}], "end_turn"
    elif "toolu_standin_edit" in results:
        turn, blocks, stop = "done", [{"type": "text", "text": "Done: added the change."}], "end_turn"
        if results["toolu_standin_edit"].get("is_error"):
            error = "the Edit tool failed: " + json.dumps(results["toolu_standin_edit"].get("content"))[:500]
    elif "toolu_standin_read" in results or edit["old"] == "":
        # A new file (an empty `old`: review comments) is written without reading it first.
        turn, stop = "edit", "tool_use"
        if results.get("toolu_standin_read", {}).get("is_error"):
            error = "the Read tool failed: " + json.dumps(results["toolu_standin_read"].get("content"))[:500]
        path_abs = workdir_of(raw).rstrip("/") + "/" + edit["file"]
        blocks = [{"type": "tool_use", "id": "toolu_standin_edit", "name": "Edit",
                   "input": {"file_path": path_abs, "old_string": edit["old"], "new_string": edit["new"]}}]
    else:
        turn, stop = "read", "tool_use"
        path_abs = workdir_of(raw).rstrip("/") + "/" + edit["file"]
        blocks = [{"type": "text", "text": "Let me read the file first."},
                  {"type": "tool_use", "id": "toolu_standin_read", "name": "Read", "input": {"file_path": path_abs}}]
    message = {"id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
               "model": served(body["model"]), "content": blocks, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": TOKENS_IN, "output_tokens": TOKENS_OUT}}
    if not body.get("stream"):
        return turn, 200, message, error
    return turn, 200, list(anthropic_events(message)), error


def anthropic_events(message):
    start = dict(message, content=[], stop_reason=None, usage={"input_tokens": TOKENS_IN, "output_tokens": 1})
    yield "message_start", {"type": "message_start", "message": start}
    for i, b in enumerate(message["content"]):
        if b["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in chunks(b["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": i,
                                          "content_block": dict(b, input={})}
            for piece in chunks(json.dumps(b["input"])):
                yield "content_block_delta", {"type": "content_block_delta", "index": i,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": TOKENS_OUT}}
    yield "message_stop", {"type": "message_stop"}


# ---- OpenAI Responses ----------------------------------------------------------------------


def responses(h, body, raw, edit):
    check_bearer(h.headers, h.key)
    need(h.path.split("?")[0] == "/v1/responses", "unknown path " + h.path, 404)
    check_model(body)
    items = body.get("input")
    need(isinstance(items, list) and items, "input: a non-empty list")
    for it in items:
        need(isinstance(it, dict) and (it.get("type") or it.get("role")), "input[]: an item with a type")
    names = tool_names(body.get("tools", []))
    need(body.get("stream") is True, "stream: true (Codex streams)")
    outputs = {it.get("call_id"): it for it in items if it.get("type") == "function_call_output"}
    error = None
    rid = "resp_" + uuid.uuid4().hex[:16]
    if "call_standin_patch" in outputs:
        turn = "done"
        out = outputs["call_standin_patch"].get("output")
        text = out if isinstance(out, str) else json.dumps(out)
        if "Success" not in text and "Updated" not in text:
            error = "apply_patch failed: " + text[:500]
        item = {"type": "message", "role": "assistant", "id": "msg_standin",
                "content": [{"type": "output_text", "text": "Done: added the change."}]}
    else:
        need("exec_command" in names, "no exec_command tool offered")
        turn = "edit"
        cmd = "apply_patch <<'EOF'\n" + apply_patch_text(edit) + "\nEOF\n"
        item = {"type": "function_call", "call_id": "call_standin_patch", "name": "exec_command",
                "arguments": json.dumps({"cmd": cmd})}
    events = [("response.created", {"type": "response.created", "response": {"id": rid}})]
    if item["type"] == "message":
        added = dict(item, content=[])
        events.append(("response.output_item.added", {"type": "response.output_item.added", "item": added}))
        for piece in chunks(item["content"][0]["text"]):
            events.append(("response.output_text.delta", {"type": "response.output_text.delta", "delta": piece}))
    events.append(("response.output_item.done", {"type": "response.output_item.done", "item": item}))
    usage = {"input_tokens": TOKENS_IN, "input_tokens_details": None, "output_tokens": TOKENS_OUT,
             "output_tokens_details": None, "total_tokens": TOKENS_IN + TOKENS_OUT}
    events.append(("response.completed", {"type": "response.completed",
                                          "response": {"id": rid, "model": served(body["model"]), "usage": usage}}))
    return turn, 200, events, error


# ---- OpenAI chat completions ---------------------------------------------------------------


def chat(h, body, raw, edit):
    check_bearer(h.headers, h.key)
    need(h.path.split("?")[0] == "/v1/chat/completions", "unknown path " + h.path, 404)
    check_model(body)
    msgs = body.get("messages")
    need(isinstance(msgs, list) and msgs, "messages: a non-empty list")
    for m in msgs:
        need(isinstance(m, dict) and m.get("role") in ("system", "user", "assistant", "tool", "developer"),
             "messages[].role")
        need("content" in m or m.get("tool_calls"), "messages[]: content or tool_calls")
    names = tool_names(body.get("tools", []))
    error, calls = None, None
    if {"read", "edit"} <= set(names):
        # opencode: tool calls `read`, then `edit`, then text.
        results = {m.get("tool_call_id"): m for m in msgs if m["role"] == "tool"}
        workdir = re.search(r"[Ww]orking directory: ([^\s<\\]+)", raw)
        need(workdir is not None, "no working directory in the prompt (opencode states it)")
        path_abs = workdir.group(1).rstrip("/") + "/" + edit["file"]
        if "call_standin_edit" in results:
            turn, text = "done", "Done: added the change."
            out = str(results["call_standin_edit"].get("content"))
            if "error" in out.lower():
                error = "the edit tool failed: " + out[:500]
        elif "call_standin_read" in results:
            turn, text = "edit", ""
            calls = [("call_standin_edit", "edit",
                      {"filePath": path_abs, "oldString": edit["old"], "newString": edit["new"]})]
        else:
            turn, text = "read", "Let me read the file first."
            calls = [("call_standin_read", "read", {"filePath": path_abs})]
    else:
        # aider's system prompt carries example SEARCH/REPLACE replies: look for our own.
        reply = search_replace_text(edit)
        said = any(m["role"] == "assistant" and reply.strip() in str(m.get("content")) for m in msgs)
        turn, text = ("done", "Done.") if said else ("edit", search_replace_text(edit))
        if names == [] and not said and "title" in raw.lower() and len(msgs) <= 3:
            turn, text = "side", "Add sub"
    finish = "tool_calls" if calls else "stop"
    cid = "chatcmpl-" + uuid.uuid4().hex[:16]
    usage = {"prompt_tokens": TOKENS_IN, "completion_tokens": TOKENS_OUT, "total_tokens": TOKENS_IN + TOKENS_OUT}
    tool_calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                  for i, n, a in calls or []]
    if not body.get("stream"):
        message = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        return turn, 200, {"id": cid, "object": "chat.completion", "created": 0, "model": served(body["model"]),
                           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                           "usage": usage}, error
    base = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": served(body["model"])}
    events = [(None, dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""},
                                          "finish_reason": None}]))]
    for piece in chunks(text) if text else []:
        events.append((None, dict(base, choices=[{"index": 0, "delta": {"content": piece}, "finish_reason": None}])))
    for k, c in enumerate(tool_calls):
        events.append((None, dict(base, choices=[{"index": 0, "delta": {"tool_calls": [dict(c, index=k)]},
                                                  "finish_reason": None}])))
    events.append((None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}], usage=usage)))
    events.append((None, "[DONE]"))
    return turn, 200, events, error


# ---- Gemini API ----------------------------------------------------------------------------


GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/([A-Za-z0-9._@-]+):(generateContent|streamGenerateContent|countTokens)$")


def gemini(h, body, raw, edit):
    key = h.headers.get("x-goog-api-key") or dict(
        p.split("=", 1) for p in (h.path.split("?", 1) + [""])[1].split("&") if "=" in p).get("key")
    need(key == h.key, "API key not valid. Please pass a valid API key.", 400)
    m = GEMINI_PATH.match(h.path.split("?")[0])
    need(m is not None, "unknown path " + h.path, 404)
    model, method = m.group(1), m.group(2)
    body["model"] = model  # logged as asked for (the path names it)
    contents = body.get("contents")
    need(isinstance(contents, list) and contents, "contents: a non-empty list")
    for c in contents:
        need(isinstance(c, dict) and c.get("role") in ("user", "model", "function", None), "contents[].role")
        need(isinstance(c.get("parts"), list), "contents[].parts: a list")
    if method == "countTokens":
        return "count", 200, {"totalTokens": TOKENS_IN}, None
    tools = [d.get("name") for t in body.get("tools", []) if isinstance(t, dict)
             for d in (t.get("functionDeclarations") or []) if isinstance(d, dict)]
    body["tools"] = [{"name": n} for n in tools]
    results = {}
    for p in contents[-1]["parts"]:
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict):
            results[p["functionResponse"].get("name")] = p["functionResponse"]
    error = None
    workdir = body.get("_workdir")
    if not {"read_file", "replace"} <= set(tools):
        turn, parts = "side", [{"text": json.dumps({"reasoning": "done", "next_speaker": "user"})
                                if "responseSchema" in json.dumps(body.get("generationConfig") or {})
                                or "responseJsonSchema" in json.dumps(body.get("generationConfig") or {})
                                else "OK"}]
    elif "replace" in results:
        turn, parts = "done", [{"text": "Done: added the change."}]
        out = json.dumps(results["replace"].get("response"))
        if "error" in out.lower() and "success" not in out.lower():
            error = "the replace tool failed: " + out[:500]
    elif "read_file" in results:
        turn = "edit"
        out = json.dumps(results["read_file"].get("response"))
        if '"error"' in out:
            error = "the read_file tool failed: " + out[:500]
        parts = [{"functionCall": {"name": "replace", "args": {
            "file_path": gemini_path(raw, edit), "old_string": edit["old"], "new_string": edit["new"],
            "instruction": "Add sub next to add."}}}]
    else:
        turn = "read"
        parts = [{"text": "Let me read the file first."},
                 {"functionCall": {"name": "read_file", "args": {"file_path": gemini_path(raw, edit)}}}]
    usage = {"promptTokenCount": TOKENS_IN, "candidatesTokenCount": TOKENS_OUT,
             "totalTokenCount": TOKENS_IN + TOKENS_OUT}
    answer = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
              "usageMetadata": usage, "modelVersion": served(model), "responseId": uuid.uuid4().hex[:16]}
    if method == "generateContent":
        return turn, 200, answer, error
    need("alt=sse" in h.path, "streamGenerateContent without alt=sse")
    body["stream"] = True
    return turn, 200, [(None, answer)], error


def gemini_path(raw, edit):
    """The file to edit: Gemini CLI's tools take a path relative to its working directory."""
    return edit["file"]


def chunks(text, n=24):
    return [text[i:i + n] for i in range(0, len(text), n)] or [""]


APIS = {"anthropic": anthropic, "responses": responses, "chat": chat, "gemini": gemini}


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1 with an explicit length or chunked body, so keep-alive clients behave.
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("standin: " + (fmt % args) + "\n")

    def do_GET(self):
        self.answer_error("other", 404, "unknown path " + self.path, {})

    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        need_len = n <= 16 * 1024 * 1024
        raw = self.rfile.read(n).decode("utf-8", "replace") if need_len else ""
        body = {}
        try:
            need(need_len, "body too large", 413)
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise Refused(400, "body is not JSON")
            need(isinstance(parsed, dict), "body is not a JSON object")
            body = parsed
            turn, status, payload, error = APIS[self.api](self, body, raw, self.edit)
        except Refused as e:
            self.answer_error("refused", e.status, str(e), body)
            return
        self.record(turn, body, error)
        if isinstance(payload, list):
            self.send_response(status)
            self.model_header(body)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for name, data in payload:
                data = data if isinstance(data, str) else json.dumps(data)
                event = ("event: %s\n" % name if name else "") + "data: %s\n\n" % data
                self.chunk(event.encode())
            self.chunk(b"")
        else:
            self.send_json(status, payload, body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def model_header(self, body):
        # OpenAI's APIs name the model that answered in a response header too.
        if self.api in ("responses", "chat") and isinstance(body.get("model"), str):
            self.send_header("openai-model", served(body["model"]))

    def send_json(self, status, payload, body=None):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.model_header(body or {})
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def answer_error(self, turn, status, message, body):
        self.record(turn, body, message)
        if self.api == "anthropic":
            payload = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        elif self.api == "gemini":
            payload = {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
        else:
            payload = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
        self.send_json(status, payload)

    def record(self, turn, body, error):
        tools = body.get("tools") if isinstance(body.get("tools"), list) else []
        entry = {"api": self.api, "path": self.path, "model": body.get("model"), "stream": body.get("stream"),
                 "tools": [t.get("name") or t.get("type") for t in tools if isinstance(t, dict)],
                 "turn": turn, "error": error,
                 "answered_as": served(body["model"]) if isinstance(body.get("model"), str) else None}
        with self.lock:
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry) + "\n")


def main():
    global ANSWER_AS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--api", choices=sorted(APIS), required=True)
    p.add_argument("--key", required=True, help="the API key the agent must send")
    p.add_argument("--edit", required=True, help='JSON {"file", "old", "new"}')
    p.add_argument("--log", required=True, help="JSON lines, one per request")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--answer-as", default=ANSWER_AS,
                   help="the model name answered with; {model} is the model asked for")
    a = p.parse_args()
    ANSWER_AS = a.answer_as
    edit = json.loads(a.edit)
    Handler.api, Handler.key, Handler.edit, Handler.log_path = a.api, a.key, edit, a.log
    Handler.lock = threading.Lock()
    server = http.server.ThreadingHTTPServer((a.host, a.port), Handler)
    server.daemon_threads = True
    print("listening %s:%d" % server.server_address[:2], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
