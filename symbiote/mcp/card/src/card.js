// The memory card: an MCP App view (io.modelcontextprotocol/ui) that shows what a store, a search or a
// list did and lets the owner correct it. Memory text is untrusted (anything a conversation put there),
// so every piece of data reaches the page as a text node or an attribute value set by name: this file
// never parses markup.

import { App, applyDocumentTheme, applyHostStyleVariables } from "@modelcontextprotocol/ext-apps";

const OUTDATED = "outdated"; // the tag card_mark adds and removes (symbiote.mcp.memory_card.OUTDATED)
const isOutdated = (tag) => tag.toLowerCase() === OUTDATED; // in any spelling, as the server compares tags

const app = new App({ name: "symbiote-memory-card", version: "1.0.0" }, {}, { autoResize: true });
const $ = (id) => document.getElementById(id);
let toolInput; // the arguments of the call, from ui/notifications/tool-input
let rendered = false;
let nextId = 0;

// ---------------------------------------------------------------- building blocks

/** An element with attributes (set by name, never parsed) and children (strings become text nodes). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null && child !== false) node.append(child);
  }
  return node;
}

const uid = (prefix) => `${prefix}-${++nextId}`;

function say(text) {
  // Emptied first, so that saying the same words twice is announced twice.
  $("status").textContent = "";
  requestAnimationFrame(() => ($("status").textContent = text));
}

function alarm(text) {
  $("alert").replaceChildren(text ? el("p", {}, text) : "");
}

class ToolError extends Error {}

/** The whole text of a tool result's content (an error's message arrives this way). */
const textOf = (result) =>
  (result?.content ?? [])
    .filter((block) => block.type === "text")
    .map((block) => block.text)
    .join("\n");

/** A tool's structured result through the host's bridge; a tool error (isError) is thrown with its text. */
async function call(name, args) {
  const result = await app.callServerTool({ name, arguments: args });
  if (result.isError) throw new ToolError(textOf(result) || `${name} failed.`);
  if (result.structuredContent) return result.structuredContent;
  try {
    return JSON.parse(textOf(result));
  } catch {
    throw new ToolError(`${name} gave no result the card can read.`);
  }
}

/** Runs an owner's action from `button`: busy while it runs, its error shown in the alert. */
async function act(button, work) {
  alarm("");
  button.disabled = true;
  button.setAttribute("aria-busy", "true");
  try {
    await work();
  } catch (error) {
    alarm(error instanceof ToolError ? error.message : `The host could not run this: ${error?.message ?? error}`);
  } finally {
    button.disabled = false;
    button.removeAttribute("aria-busy");
  }
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const context = app.getHostContext() ?? {};
  try {
    return date.toLocaleString(context.locale, {
      dateStyle: "medium",
      timeStyle: "short",
      timeZone: context.timeZone,
    });
  } catch {
    return date.toISOString();
  }
}

const percent = (similarity) => `${Math.round((similarity <= 1 ? similarity * 100 : similarity) || 0)} % alike`;
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function textBlock(content, contentChars) {
  const block = el("p", { class: "content" }, content ?? "");
  if (contentChars && content && contentChars > content.length) {
    return [block, el("p", { class: "note" }, `Part of a ${contentChars}-character memory.`)];
  }
  return [block];
}

function tagList(tags) {
  if (!tags?.length) return el("p", { class: "tags none" }, "No tags");
  return el(
    "ul",
    { class: "tags", "aria-label": "Tags" },
    tags.map((tag) => el("li", { class: isOutdated(tag) ? "tag outdated" : "tag" }, tag)),
  );
}

function mark(text, kind = "") {
  return el("span", { class: `mark ${kind}`.trim() }, text);
}

// ---------------------------------------------------------------- one memory

/**
 * One memory as a card item: its text, tags, id and time, marks, and the owner's actions.
 * `options.score` shows a search hit's score and match; `options.editable` offers the edit form;
 * `options.forgetLabel` names the forget button; `options.outdated` offers the outdated mark.
 */
function memoryItem(memory, options = {}) {
  const state = { memory: { ...memory }, forgotten: false, editing: false };
  const item = el("article", { class: "memory", "data-memory-id": memory.memory_id });
  const body = el("div", { class: "memory-body" });
  const notice = el("p", { class: "notice", hidden: true });
  const actions = el("div", { class: "actions", role: "group", "aria-label": "What to do with this memory" });
  item.append(...(options.before ?? []), body, notice, ...(options.after ?? []), actions);

  function drawBody() {
    const m = state.memory;
    const marks = [];
    if (options.score) {
      marks.push(mark(`Score ${Math.round(m.relevance_score ?? 0)}`, "score"));
      if (m.match) marks.push(mark(m.match === "answer" ? "Answer" : "Context", `match-${m.match}`));
      if (m.matched_by) marks.push(mark(`Matched by ${m.matched_by}`, "by"));
    }
    if (m.superseded_by) marks.push(mark(m.link_kind === "duplicate" ? "Said better elsewhere" : "Superseded", "superseded"));
    if (m.supersedes) marks.push(mark(m.link_kind === "duplicate" ? "Fuller version" : "Replaces an older one", "supersedes"));
    if (m.tags?.some(isOutdated)) marks.push(mark("Outdated", "outdated"));
    if (m.type) marks.push(mark(m.type, "type"));
    const meta = [m.memory_id, m.timestamp && `stored ${when(m.timestamp)}`, m.updated_at && `changed ${when(m.updated_at)}`];
    body.replaceChildren(
      ...(marks.length ? [el("p", { class: "marks" }, marks)] : []),
      ...(state.editing ? [editForm()] : textBlock(m.content, m.content_chars)),
      ...(state.editing ? [] : [tagList(m.tags)]),
      el("p", { class: "meta" }, meta.filter(Boolean).join(" · ")),
      ...(m.superseded_by ? [el("p", { class: "note" }, `Replaced by ${m.superseded_by}.`)] : []),
      ...(m.supersedes ? [el("p", { class: "note" }, `Replaces ${m.supersedes}.`)] : []),
    );
    item.classList.toggle("forgotten", state.forgotten);
  }

  function button(label, work, kind = "") {
    const b = el("button", { type: "button", class: kind || undefined }, label);
    b.addEventListener("click", () => act(b, work));
    return b;
  }

  function drawActions(focusLabel) {
    const buttons = [];
    if (state.forgotten) {
      buttons.push(button("Undo forget", restore));
    } else if (!state.editing) {
      if (options.editable) buttons.push(button("Edit", startEdit));
      if (options.outdated) {
        const outdated = state.memory.tags?.some(isOutdated);
        buttons.push(button(outdated ? "Not outdated" : "Mark outdated", () => setOutdated(!outdated)));
      }
      buttons.push(button(options.forgetLabel ?? "Forget", forget, "danger"));
    }
    actions.replaceChildren(...buttons);
    if (focusLabel) buttons.find((b) => b.textContent === focusLabel)?.focus();
  }

  function show(note) {
    notice.hidden = !note;
    notice.textContent = note ?? "";
  }

  async function forget() {
    const done = await call("card_forget", { memory_id: state.memory.memory_id });
    if (!done.deleted) throw new ToolError(done.message || "Not forgotten.");
    state.forgotten = true;
    show("Forgotten: it is in the trash until you undo.");
    drawBody();
    drawActions("Undo forget");
    say(`Forgotten. ${done.message ?? ""}`.trim());
  }

  async function restore() {
    const done = await call("card_restore", { memory_id: state.memory.memory_id });
    if (!done.restored) throw new ToolError(done.message || "Not restored.");
    state.forgotten = false;
    show("");
    drawBody();
    drawActions(options.forgetLabel ?? "Forget");
    say("Restored: the memory is back.");
  }

  async function setOutdated(outdated) {
    const done = await call("card_mark", { memory_id: state.memory.memory_id, outdated });
    if (done.memory) state.memory = { ...state.memory, ...done.memory };
    show(outdated ? "Marked outdated." : "");
    drawBody();
    drawActions(outdated ? "Not outdated" : "Mark outdated");
    say(outdated ? "Marked outdated." : "No longer marked outdated.");
  }

  async function startEdit() {
    // The card may hold only part of a long memory: the form edits the whole text.
    const m = state.memory;
    if (m.content_chars && m.content_chars > (m.content ?? "").length) {
      const whole = await call("get_memory", { memory_id: m.memory_id });
      state.memory = { ...m, content: whole.content, content_chars: undefined };
    }
    state.editing = true;
    show("");
    drawBody();
    drawActions();
    body.querySelector("textarea")?.focus();
  }

  function editForm() {
    const textId = uid("text");
    const tagsId = uid("tags");
    const hintId = uid("hint");
    const text = el("textarea", { id: textId, rows: 4, required: true });
    text.value = state.memory.content ?? "";
    const tags = el("input", { id: tagsId, type: "text", autocomplete: "off", "aria-describedby": hintId });
    tags.value = (state.memory.tags ?? []).join(", ");
    const save = el("button", { type: "button" }, "Save");
    const cancel = el("button", { type: "button" }, "Cancel");
    // Not a <form>: the host's sandbox (no allow-forms) blocks a submission before its event fires.
    const form = el(
      "div",
      { class: "edit", role: "group", "aria-label": "Edit this memory" },
      el("label", { for: textId }, "Text"),
      text,
      el("label", { for: tagsId }, "Tags"),
      tags,
      el("p", { id: hintId, class: "hint" }, "Separate tags with commas. Ctrl+Enter saves."),
      el("div", { class: "actions" }, save, cancel),
    );
    const submit = () => act(save, () => saveEdit(text.value, tags.value));
    save.addEventListener("click", submit);
    for (const field of [text, tags]) {
      field.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && (field === tags || event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          submit();
        }
      });
    }
    cancel.addEventListener("click", () => {
      state.editing = false;
      drawBody();
      drawActions("Edit");
    });
    return form;
  }

  async function saveEdit(content, tagText) {
    const tags = tagText
      .split(",")
      .map((tag) => tag.trim())
      .filter(Boolean);
    const args = { memory_id: state.memory.memory_id };
    if (content.trim() !== (state.memory.content ?? "").trim()) args.content = content;
    if (tags.join("\n") !== (state.memory.tags ?? []).join("\n")) args.tags = tags;
    if (args.content !== undefined || args.tags !== undefined) {
      const done = await call("update_memory", args);
      if (done.memory) state.memory = { ...state.memory, ...done.memory, content_chars: undefined };
      say(`Saved. ${done.message ?? ""}`.trim());
    } else {
      say("Nothing changed.");
    }
    state.editing = false;
    show("");
    drawBody();
    drawActions("Edit");
  }

  drawBody();
  drawActions();
  return item;
}

// ---------------------------------------------------------------- what a store did

/** The older memory `store` may replace, with the one-click link (and its undo). */
function mayReplaceItem(newerId, entry) {
  const item = el("li", { class: "related" });
  const status = el("p", { class: "notice", hidden: true });
  const actions = el("div", { class: "actions" });
  item.append(
    ...textBlock(entry.content, entry.content_chars),
    el("p", { class: "meta" }, `${entry.memory_id} · ${percent(entry.similarity)}`),
    status,
    actions,
  );
  function draw(linked) {
    status.hidden = !linked;
    status.textContent = linked ? "Linked: the new memory replaces this one; searches show the new one first." : "";
    const b = el("button", { type: "button" }, linked ? "Undo link" : "It replaces this");
    b.addEventListener("click", () => act(b, linked ? unlink : link));
    actions.replaceChildren(b);
    return b;
  }
  async function link() {
    const done = await call("link_memories", { newer_id: newerId, older_id: entry.memory_id, kind: "update" });
    if (!done.linked) throw new ToolError(done.message || "Not linked.");
    draw(true).focus();
    say("Linked: the new memory replaces the older one.");
  }
  async function unlink() {
    await call("unlink_memories", { newer_id: newerId, older_id: entry.memory_id });
    draw(false).focus();
    say("Link undone.");
  }
  draw(false);
  return item;
}

function relatedList(title, entries) {
  const headingId = uid("related");
  return el(
    "section",
    { class: "related-list", "aria-labelledby": headingId },
    el("h3", { id: headingId }, title),
    el("ul", {}, entries),
  );
}

/** The memories a store replaced, their text fetched (the result names only their ids). */
function replacedSection(ids) {
  const list = el("ul", {}, ids.map((id) => el("li", { class: "related", "data-memory-id": id }, el("p", { class: "meta" }, id))));
  call("get_memories", { memory_ids: ids })
    .then((found) => {
      // In the order asked, null for a missing id; a long reply leaves out its last ones (not_shown).
      const memories = found.memories ?? [];
      const notShown = new Set(found.not_shown ?? []);
      ids.forEach((id, index) => {
        const memory = memories[index];
        const li = list.children[index];
        if (notShown.has(id) || memory === undefined) return; // its id alone stays
        li.replaceChildren(
          ...(memory ? textBlock(memory.content, memory.content_chars) : [el("p", { class: "note" }, "No longer stored.")]),
          el("p", { class: "meta" }, id),
        );
      });
    })
    .catch((error) => alarm(error.message));
  const headingId = uid("related");
  return el("section", { class: "related-list", "aria-labelledby": headingId }, el("h3", { id: headingId }, "It replaced"), list);
}

/** One store's card item: the memory (its text from the call's input), what it replaced, duplicated or may replace. */
function storeItem(result, input = {}, options = {}) {
  const memory = {
    memory_id: result.memory_id,
    content: input.content,
    timestamp: result.timestamp,
    tags: result.tags ?? input.tags ?? [],
    type: input.type,
  };
  const before = [];
  const after = [];
  if (options.outcome) {
    const duplicate = result.status === "duplicate";
    before.push(el("p", { class: "outcome" }, duplicate ? "Already remembered: nothing new was stored." : "Remembered"));
  }
  if (result.warning) before.push(el("p", { class: "warning" }, result.warning));
  // A link the call asked for (replaces) is shown by the "It replaced" list below.
  if (result.linked && result.linked_to && !result.replaced?.includes(result.linked_to)) {
    const text =
      result.linked === "supersedes"
        ? `It replaces ${result.linked_to} (${result.link_kind === "duplicate" ? "the same fact, said more fully" : "a new value"}).`
        : `${result.linked_to} says more about this and is shown first.`;
    after.push(el("p", { class: "note" }, text));
  }
  if (result.replaced?.length) after.push(replacedSection(result.replaced));
  if (result.near_duplicates?.length) {
    after.push(
      relatedList(
        "Nearly the same as",
        result.near_duplicates.map((d) =>
          el("li", { class: "related" }, ...textBlock(d.content, d.content_chars), el("p", { class: "meta" }, `${d.memory_id} · ${percent(d.similarity)}`)),
        ),
      ),
    );
  }
  if (result.may_replace?.length) {
    after.push(relatedList("It may replace", result.may_replace.map((entry) => mayReplaceItem(result.memory_id, entry))));
  }
  const item = memoryItem(memory, { editable: true, before, after });
  if (input.content === undefined) {
    // No tool input from the host: the text comes from the store itself.
    call("get_memory", { memory_id: result.memory_id })
      .then((whole) => {
        const text = item.querySelector(".memory-body .content");
        if (text && whole?.content !== undefined) text.textContent = whole.content;
      })
      .catch((error) => alarm(error.message));
  }
  return item;
}

// ---------------------------------------------------------------- the views

function heading(title, summary) {
  $("card-title").textContent = title;
  $("summary").textContent = summary;
}

function listOf(items, label) {
  return el("ol", { class: "memories", "aria-label": label }, items.map((item) => el("li", {}, item)));
}

function renderStore(result) {
  const duplicate = result.status === "duplicate";
  heading(
    duplicate ? "Already remembered" : "Remembered",
    duplicate ? "This was stored before: nothing new was written." : "Saved to memory. You can correct it here.",
  );
  $("body").replaceChildren(storeItem(result, toolInput ?? {}));
}

function renderBatch(result) {
  const inputs = toolInput?.memories ?? [];
  // A long reply leaves out its last items (not_shown, counted from 1): the rest keep the input's order.
  const notShown = new Set(result.not_shown ?? []);
  const total = (result.results ?? []).length + notShown.size;
  const positions = Array.from({ length: total }, (_, i) => i + 1).filter((n) => !notShown.has(n));
  heading(
    `Remembered ${plural(result.stored ?? 0, "memory", "memories")}`,
    result.duplicates ? `${plural(result.duplicates, "duplicate")}: not stored again.` : "Saved to memory. You can correct them here.",
  );
  const parts = [];
  if (result.warning) parts.push(el("p", { class: "warning" }, result.warning));
  const items = (result.results ?? []).map((r, i) => storeItem(r, inputs[positions[i] - 1] ?? {}, { outcome: true }));
  parts.push(listOf(items, "Memories stored"));
  if (notShown.size) {
    parts.push(el("p", { class: "note" }, `${plural(notShown.size, "more item")} (${[...notShown].join(", ")}) handled but not shown: the reply was too long.`));
  }
  $("body").replaceChildren(...parts);
}

function hitItems(hits) {
  return hits.map((hit) => memoryItem(hit, { score: true, outdated: true, forgetLabel: "Wrong: forget" }));
}

function renderSearch(result) {
  const results = result.results ?? [];
  const below = result.below_cutoff ?? [];
  heading(
    "What the assistant was given",
    `For “${result.query ?? toolInput?.query ?? ""}”: ${plural(results.length, "memory", "memories")}` +
      (below.length ? `, and ${below.length} under the cut-off.` : "."),
  );
  const parts = [];
  const givenId = uid("given");
  parts.push(
    el(
      "section",
      { class: "group", "aria-labelledby": givenId },
      el("h2", { id: givenId }, "Given"),
      results.length ? listOf(hitItems(results), "Given") : el("p", { class: "note" }, "Nothing matched well enough."),
    ),
  );
  if (below.length) {
    const belowId = uid("below");
    parts.push(
      el(
        "section",
        { class: "group below", "aria-labelledby": belowId },
        el("h2", { id: belowId }, "Under the cut-off"),
        el("p", { class: "note" }, "Scored under the cut-off: the assistant saw these as weaker candidates."),
        listOf(hitItems(below), "Under the cut-off"),
      ),
    );
  }
  $("body").replaceChildren(...parts);
}

function renderList(result) {
  const memories = result.memories ?? [];
  heading("Memories", `${plural(memories.length, "memory", "memories")}, newest first.${result.next_before ? " Older ones follow." : ""}`);
  $("body").replaceChildren(
    memories.length
      ? listOf(memories.map((m) => memoryItem(m, { outdated: true, forgetLabel: "Wrong: forget" })), "Memories")
      : el("p", { class: "note" }, "No memories yet."),
  );
}

function render(result) {
  const data = result.structuredContent;
  rendered = true;
  $("card").setAttribute("aria-busy", "false");
  if (result.isError) {
    heading("The tool failed", "");
    $("body").replaceChildren();
    alarm(textOf(result) || "The tool failed.");
    return;
  }
  if (!data || typeof data !== "object") {
    heading("Memory card", "The tool gave no result the card can read.");
    return;
  }
  if (Array.isArray(data.results) && "query" in data) renderSearch(data);
  else if (Array.isArray(data.results)) renderBatch(data);
  else if (Array.isArray(data.memories)) renderList(data);
  else if (data.memory_id) renderStore(data);
  else heading("Memory card", data.message ?? "Nothing to show.");
}

// ---------------------------------------------------------------- the host

function applyContext(context) {
  if (context?.theme) applyDocumentTheme(context.theme);
  if (context?.styles?.variables) applyHostStyleVariables(context.styles.variables);
}

app.ontoolinput = (params) => {
  toolInput = params.arguments ?? {};
};
app.ontoolresult = (result) => render(result);
app.ontoolcancelled = (params) => {
  if (!rendered) heading("Cancelled", params?.reason ? `The call was cancelled: ${params.reason}` : "The call was cancelled.");
  $("card").setAttribute("aria-busy", "false");
};
app.onhostcontextchanged = (context) => applyContext(context);
app.onteardown = async () => ({});

app
  .connect()
  .then(() => applyContext(app.getHostContext()))
  .catch((error) => {
    $("card").setAttribute("aria-busy", "false");
    alarm(`The card could not reach its host: ${error?.message ?? error}`);
  });
