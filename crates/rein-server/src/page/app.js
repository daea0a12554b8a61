// rein's page: the conversation list, the transcript built from the
// conversation's event stream, the answer as it streams, tool calls,
// approvals with what they change, cost, steering, interrupt, branching,
// undo of a change, the memory the agent remembers in (list, add,
// forget), the hosted sessions live now, and the task graphs posted here
// with what their tasks ask.
//
// Safety: nothing the model or a tool wrote is ever parsed as HTML. Text
// goes in with textContent; the small Markdown subset below builds
// elements, never markup strings. And no character acts unseen: control,
// BiDi and invisible characters are shown as `^[` or `<U+202E>`, as the
// terminal shows them (`visible`), so a file name or a diff reads as its
// bytes do.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { id: null, source: null, calls: new Map(), streaming: null, running: false, cost: 0, costKnown: true, prompt: 0, cached: 0, shownUpTo: 0 };

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.detail || response.statusText);
  return data;
}

// The same rule as rein_wire::visible: controls but newline and tab, the
// BiDi, zero-width and separator characters, and those drawn as nothing
// (soft hyphen, fillers, tags), are shown, not obeyed.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\u3164\ufeff\uffa0\ufff9-\ufffb\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}]/gu;
function visible(text) {
  return String(text).replace(UNSAFE, (c) => {
    const code = c.codePointAt(0);
    if (code < 0x20) return "^" + String.fromCharCode(code + 64);
    if (code === 0x7f) return "^?";
    return "<U+" + code.toString(16).toUpperCase().padStart(4, "0") + ">";
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = visible(text);
  return node;
}

// Markdown, a safe subset: fenced code, paragraphs, `code`, **bold**, *em*.
function inline(parent, text) {
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*]+\*)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    parent.append(visible(text.slice(last, match.index)));
    const token = match[0];
    if (token.startsWith("`")) parent.append(el("code", "", token.slice(1, -1)));
    else if (token.startsWith("**")) parent.append(el("strong", "", token.slice(2, -2)));
    else parent.append(el("em", "", token.slice(1, -1)));
    last = match.index + token.length;
  }
  parent.append(visible(text.slice(last)));
}

// A fence opens a line; what follows an opening fence is shown above the
// block, and text after a closing fence is shown after it: nothing the
// model wrote is dropped.
function markdown(target, text) {
  target.replaceChildren();
  let prose = [];
  let code = null;
  const flush = () => {
    for (const para of prose.join("\n").split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const p = el("p");
      para.split("\n").forEach((line, j) => {
        if (j > 0) p.append(el("br"));
        inline(p, line);
      });
      target.append(p);
    }
    prose = [];
  };
  const block = () => {
    if (code.info.trim()) target.append(el("div", "code-info", code.info.trim()));
    target.append(el("pre", "", code.lines.join("\n")));
  };
  for (const line of String(text).split("\n")) {
    const fence = line.match(/^ {0,3}```(.*)$/);
    if (code === null && fence) {
      flush();
      code = { info: fence[1], lines: [] };
    } else if (code === null) {
      prose.push(line);
    } else if (fence) {
      block();
      code = null;
      if (fence[1].trim()) prose.push(fence[1]);
    } else {
      code.lines.push(line);
    }
  }
  if (code !== null) block();
  flush();
}

function scroll() {
  const log = $("log");
  log.scrollTop = log.scrollHeight;
}

function setRunning(running) {
  state.running = running;
  $("interrupt").hidden = !running;
  $("send").textContent = running ? "Steer" : "Send";
  $("say").placeholder = running
    ? "Say something to the running turn (heard at its next step)"
    : "Say something (Enter sends, Shift+Enter for a new line)";
}

function status(text) {
  $("status").textContent = visible(text || "");
}

function meter() {
  const share = state.prompt ? Math.round((100 * state.cached) / state.prompt) : 0;
  const cost = state.costKnown ? `$${(state.cost / 1e6).toFixed(4)}` : "cost unknown";
  $("cost").textContent = `${cost} · cache ${share}%`;
}

function agentLabel(node, agent) {
  if (agent && agent !== "main") node.prepend(el("span", "agent", agent));
}

function toolLine(callId, tool, args, agent) {
  const details = el("details", "tool running");
  const summary = el("summary", "", `${tool} ${JSON.stringify(args).slice(0, 120)}`);
  agentLabel(summary, agent);
  details.append(summary, el("pre", "", JSON.stringify(args, null, 2)));
  state.calls.set(callId, details);
  $("log").append(details);
}

function toolResult(callId, data) {
  const details = state.calls.get(callId);
  if (!details) return;
  details.classList.remove("running");
  // A command that ran and failed is not shown as ok: its exit status says so.
  const exit = data.content && typeof data.content.exit_code === "number" ? data.content.exit_code : 0;
  details.classList.add(data.status !== "ok" ? "error" : exit !== 0 ? "exited" : "ok");
  if (data.status === "ok" && exit !== 0) details.querySelector("summary").append(` · exit ${exit}`);
  const content = typeof data.content === "string" ? data.content : JSON.stringify(data.content, null, 2);
  details.append(el("pre", "", content.slice(0, 20000)));
  if (data.undo && data.operation_id) details.after(undoButton(data.operation_id));
}

// Undo a change the page shows: the same rule as the terminal's /undo (the
// server refuses a change made since, or one already undone).
function undoButton(operation) {
  const button = el("button", "undo", "undo this change");
  button.dataset.operation = operation;
  button.addEventListener("click", async () => {
    try {
      const { undone } = await api("POST", `/api/conversations/${state.id}/undo`, { operation_id: operation });
      markUndone(operation);
      status(`Undone: ${visible(String(undone))} is back as it was.`);
    } catch (err) {
      status(err.message);
    }
  });
  return button;
}

function markUndone(operation) {
  for (const button of document.querySelectorAll("button.undo")) {
    if (button.dataset.operation !== operation) continue;
    button.disabled = true;
    button.textContent = "undone";
  }
}

function diff(preview) {
  const box = el("pre", "diff");
  const text = preview.text || "";
  for (const line of String(text).split("\n")) {
    const cls = line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
    box.append(el("span", cls, line + "\n"));
  }
  return box;
}

async function refreshApprovals() {
  if (!state.id) return;
  const box = $("approvals");
  const { approvals } = await api("GET", `/api/conversations/${state.id}/approvals`);
  box.replaceChildren();
  for (const a of approvals) {
    const panel = el("div", "approval");
    const who = a.agent_path === "main" ? "" : ` (${a.agent_path})`;
    const subject = a.preview ? ` ${a.preview.subject}` : "";
    panel.append(el("h2", "", `Approve ${a.tool}${subject}${who}?`));
    if (a.preview && a.preview.truncated) panel.append(el("p", "", "(the preview is cut; the change is larger)"));
    if (a.preview) panel.append(diff(a.preview));
    else panel.append(el("pre", "diff", JSON.stringify(a.arguments, null, 2)));
    const buttons = el("div", "buttons");
    const yes = el("button", "primary", "Approve");
    const no = el("button", "deny", "Deny");
    const decide = async (decision) => {
      yes.disabled = no.disabled = true;
      try {
        await api("POST", `/api/conversations/${state.id}/approvals/${a.approval_id}`, { decision });
        status(decision === "yes" ? "Approved." : "Denied.");
      } catch (err) {
        status(err.message);
      }
      refreshApprovals();
    };
    yes.addEventListener("click", () => decide("yes"));
    no.addEventListener("click", () => decide("no"));
    buttons.append(yes, no);
    panel.append(buttons);
    box.append(panel);
  }
  // Said, never focused: a person typing in the steer box when a question
  // arrives must not approve it with their next space or Enter. A decision
  // is a deliberate act on the panel.
  if (approvals.length) status(approvals.length === 1 ? "A question waits for you." : `${approvals.length} questions wait for you.`);
}

function onLog(event) {
  const e = JSON.parse(event.data);
  const d = e.data;
  const log = $("log");
  switch (e.kind) {
    case "turn.started": {
      // Replayed in order, the log leaves the last turn's state shown.
      setRunning(true);
      if (!$("title").textContent || $("title").textContent === "New conversation") $("title").textContent = visible(d.prompt);
      const you = el("div", "turn you", d.prompt);
      const branch = el("button", "branch", "continue from before this turn");
      branch.addEventListener("click", () => branchFrom(d.parent));
      if (d.parent) you.append(branch);
      log.append(you);
      break;
    }
    case "model.completed": {
      if (state.streaming) { state.streaming.remove(); state.streaming = null; }
      const text = (d.message.content || []).filter((b) => b.type === "text").map((b) => b.text).join("");
      if (text.trim() && e.agent === "main") {
        const answer = el("div", "turn answer");
        markdown(answer, text);
        log.append(answer);
      }
      if (d.usage) {
        state.prompt += (d.usage.input || 0) + (d.usage.cache_read || 0) + (d.usage.cache_write || 0);
        state.cached += d.usage.cache_read || 0;
      }
      if (d.cost_micro_usd == null) state.costKnown = false; else state.cost += d.cost_micro_usd;
      meter();
      break;
    }
    case "tool.called":
      toolLine(d.call_id, d.tool, d.arguments, e.agent);
      break;
    case "tool.result":
      toolResult(d.call_id, d);
      break;
    case "operation.undone":
      markUndone(d.operation_id);
      break;
    case "approval.requested":
    case "approval.decided":
      refreshApprovals();
      break;
    case "turn.finished":
      setRunning(false);
      status(d.outcome === "finished" ? "" : `The turn ended: ${d.outcome}.`);
      if (e.seq > state.shownUpTo) refreshList();
      break;
    default:
      break;
  }
  scroll();
}

function onUi(event) {
  const e = JSON.parse(event.data);
  if (e.agent !== "main") {
    if (e.type === "agent_awaiting") refreshApprovals();
    return;
  }
  if (e.type === "text_delta") {
    if (!state.streaming) {
      state.streaming = el("div", "turn answer");
      state.streaming.dataset.text = "";
      $("log").append(state.streaming);
    }
    state.streaming.dataset.text += e.text;
    markdown(state.streaming, state.streaming.dataset.text);
    scroll();
  } else if (e.type === "paused") {
    status("Waiting for you.");
  }
}

async function open(id) {
  if (state.source) state.source.close();
  Object.assign(state, { id, calls: new Map(), streaming: null, cost: 0, costKnown: true, prompt: 0, cached: 0, shownUpTo: 0 });
  $("log").replaceChildren();
  $("approvals").replaceChildren();
  history.replaceState(null, "", `#${id}`);
  for (const b of document.querySelectorAll("#list button")) b.setAttribute("aria-current", String(b.dataset.id === id));
  let conversation;
  try {
    conversation = await api("GET", `/api/conversations/${id}`);
  } catch (err) {
    status(`The conversation could not be opened: ${err.message}`);
    return;
  }
  $("title").textContent = visible(conversation.title || "New conversation");
  state.shownUpTo = conversation.head_seq || 0;
  setRunning(conversation.state === "running");
  meter();
  // From the start: the transcript is rebuilt from the log, then the
  // stream goes on live (EventSource resumes with Last-Event-ID itself).
  state.source = new EventSource(`/api/conversations/${id}/events`);
  state.source.addEventListener("log", onLog);
  state.source.addEventListener("ui", onUi);
  // The server could not read the log: said, and not asked again.
  state.source.addEventListener("failed", (event) => {
    let said = {};
    try {
      said = JSON.parse(event.data);
    } catch (err) {
      said = {};
    }
    status(`The conversation's log could not be read (${said.code || "error"}); reload to try again.`);
    event.target.close();
  });
  refreshApprovals();
  $("say").focus();
}

async function refreshList() {
  const { conversations } = await api("GET", "/api/conversations");
  const list = $("list");
  list.replaceChildren();
  for (const c of conversations) {
    const item = el("li");
    const button = el("button", "", c.title || "New conversation");
    button.dataset.id = c.id;
    button.setAttribute("aria-current", String(c.id === state.id));
    button.append(el("small", "", `${c.state}${c.pending_approvals ? " · waiting for you" : ""}`));
    button.addEventListener("click", () => { closeMenu(); open(c.id); });
    item.append(button);
    list.append(item);
  }
  return conversations;
}

// The memory panel: shown only when the server keeps memory; every item
// is text (textContent), never markup, whoever wrote it.
async function refreshMemory() {
  let listed;
  try {
    listed = await api("GET", "/api/memory");
  } catch (err) {
    $("memory").hidden = true;
    return;
  }
  $("memory").hidden = false;
  $("memory-scope").textContent = visible(listed.scope);
  const items = $("memory-items");
  items.replaceChildren();
  for (const item of listed.items) {
    const row = el("li", item.pinned ? "pinned" : "");
    row.dataset.id = item.id;
    row.append(el("span", "text", item.text));
    const forget = el("button", "deny", "Forget");
    forget.setAttribute("aria-label", "Forget this item");
    forget.addEventListener("click", async () => {
      try {
        await api("DELETE", `/api/memory/${encodeURIComponent(item.id)}`);
        status("Forgotten: gone from the next prompt.");
      } catch (err) {
        status(err.message);
      }
      refreshMemory();
    });
    row.append(forget);
    items.append(row);
  }
}

// The hosted sessions live now, refreshed every few seconds; shown only
// when there is one. Names come from other processes: text, never markup.
const HOSTED_EVERY_MS = 5000;
async function refreshHosted() {
  let sessions = [];
  try {
    ({ sessions } = await api("GET", "/api/agents/sessions"));
  } catch (err) {
    sessions = [];
  }
  $("hosted").hidden = sessions.length === 0;
  const items = $("hosted-items");
  items.replaceChildren();
  for (const s of sessions) {
    const row = el("li");
    row.dataset.session = s.session;
    const holder = s.holder === "person" ? `held by ${s.viewer}` : "the agent holds it";
    row.append(el("span", "text", `${s.session} · ${s.mode} · ${s.viewers.length} watching · ${holder}`));
    row.title = visible(`opened ${new Date(s.opened_at_ms).toLocaleString()}; watching: ${s.viewers.join(", ") || "nobody"}`);
    items.append(row);
  }
}

// The task graphs posted here: each task's state and what it asks, shown
// exactly (the tool and its whole arguments, as text) with yes and no;
// refreshed every two seconds, shown only when there is one.
const GRAPHS_EVERY_MS = 2000;
async function refreshGraphs() {
  let graphs = [];
  try {
    ({ graphs } = await api("GET", "/api/graphs"));
  } catch (err) {
    graphs = [];
  }
  $("graphs").hidden = graphs.length === 0;
  const items = $("graph-items");
  items.replaceChildren();
  for (const g of graphs) {
    const row = el("li");
    row.dataset.graph = g.graph;
    row.append(el("span", "text", `${g.graph} · ${g.running ? "running" : g.outcome || "not running"}`));
    if (g.running) {
      const cancel = el("button", "cancel", "Cancel");
      const path = `/api/graphs/${encodeURIComponent(g.graph)}/cancel`;
      cancel.addEventListener("click", () => graphAct(() => api("POST", path, {}), "Cancelling: running tasks stop at their next step."));
      row.append(cancel);
    }
    const tasks = el("ul", "tasks");
    for (const t of g.tasks) tasks.append(graphTask(t));
    row.append(tasks);
    items.append(row);
  }
}

function graphTask(t) {
  const task = el("li");
  task.dataset.task = t.id;
  task.append(el("span", "state", `${t.id} · ${t.state}`));
  for (const q of t.approvals || []) {
    const ask = el("div", "ask");
    ask.append(el("span", "", `asks to run ${q.tool}`));
    ask.append(el("code", "", JSON.stringify(q.arguments)));
    const path = `/api/conversations/${encodeURIComponent(q.session)}/approvals/${encodeURIComponent(q.approval_id)}`;
    for (const [label, decision] of [["Yes", "yes"], ["No", "no"]]) {
      const button = el("button", decision === "yes" ? "primary" : "", label);
      button.dataset.decision = decision;
      button.addEventListener("click", () => graphAct(() => api("POST", path, { decision }), decision === "yes" ? "Allowed once." : "Refused."));
      ask.append(button);
    }
    task.append(ask);
  }
  return task;
}

async function graphAct(call, said) {
  try {
    await call();
    status(said);
  } catch (err) {
    status(err.message);
  }
  refreshGraphs();
}

async function remember(event) {
  event.preventDefault();
  const text = $("memory-text").value.trim();
  if (!text) return;
  try {
    await api("POST", "/api/memory", { text, pinned: $("memory-pinned").checked });
    $("memory-text").value = "";
    status("Remembered.");
  } catch (err) {
    status(err.message);
  }
  refreshMemory();
}

async function send(event) {
  event.preventDefault();
  const text = $("say").value.trim();
  if (!text) return;
  try {
    if (!state.id) {
      const { id } = await api("POST", "/api/conversations", {});
      await refreshList();
      await open(id);
    }
    if (state.running) {
      await api("POST", `/api/conversations/${state.id}/steer`, { text });
      status("Heard: the model reads it at its next step.");
    } else {
      // Running before the request: its end may arrive on the stream
      // before the request's answer does.
      setRunning(true);
      try {
        await api("POST", `/api/conversations/${state.id}/turns`, { text });
      } catch (err) {
        setRunning(false);
        throw err;
      }
      status("");
      refreshList();
    }
    $("say").value = "";
  } catch (err) {
    status(err.message);
  }
}

async function branchFrom(turn) {
  try {
    await api("POST", `/api/conversations/${state.id}/branch`, { turn_id: turn });
    status("The next turn continues from there.");
  } catch (err) {
    status(err.message);
  }
}

function closeMenu() {
  $("side").classList.remove("open");
  $("menu").setAttribute("aria-expanded", "false");
}

document.addEventListener("DOMContentLoaded", async () => {
  $("composer").addEventListener("submit", send);
  $("say").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) send(e);
  });
  $("interrupt").addEventListener("click", async () => {
    try {
      await api("POST", `/api/conversations/${state.id}/interrupt`, {});
      // The turn's end may have arrived first; it says how it ended.
      if (state.running) status("Interrupting at the next step.");
    } catch (err) {
      status(err.message);
    }
  });
  $("new").addEventListener("click", async () => {
    const { id } = await api("POST", "/api/conversations", {});
    await refreshList();
    closeMenu();
    open(id);
  });
  $("menu").addEventListener("click", () => {
    const side = $("side");
    side.classList.toggle("open");
    $("menu").setAttribute("aria-expanded", String(side.classList.contains("open")));
  });
  $("memory-add").addEventListener("submit", remember);
  refreshMemory();
  refreshHosted();
  setInterval(refreshHosted, HOSTED_EVERY_MS);
  refreshGraphs();
  setInterval(refreshGraphs, GRAPHS_EVERY_MS);
  const conversations = await refreshList();
  const wanted = location.hash.slice(1);
  if (wanted) open(wanted);
  else if (conversations.length) open(conversations[0].id);
});
