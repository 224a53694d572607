"use strict";
const $ = (id) => document.getElementById(id);
const text = (value) => String(value ?? "");
const quoted = (value) => "“" + value + "”";

function setState(state) {
  document.body.dataset.state = state;
  $("state").className = "state " + state;
  $("state").textContent = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…" }[state];
}

// RFC 6902: `patch` applied to a copy of `document`, paths as RFC 6901 pointers. Throws
// when an operation does not apply, leaving `document` as it was.
function applyPatch(document, patch) {
  let root = structuredClone(document);
  const fail = (why) => { throw new Error("JSON Patch: " + why); };
  const isObject = (node) => node !== null && typeof node === "object" && !Array.isArray(node);
  const tokens = (pointer) => {
    if (pointer === "") return [];
    if (typeof pointer !== "string" || pointer[0] !== "/") fail("bad pointer " + pointer);
    return pointer.slice(1).split("/").map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"));
  };
  const index = (array, token, end) => {
    if (end && token === "-") return array.length;
    if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) > array.length - (end ? 0 : 1)) fail("bad index " + token);
    return Number(token);
  };
  const child = (node, token) => {
    if (Array.isArray(node)) return node[index(node, token, false)];
    if (isObject(node) && Object.hasOwn(node, token)) return node[token];
    fail("no member " + token);
  };
  const get = (path) => path.reduce(child, root);
  // A plain assignment of "__proto__" would set the prototype, not a member.
  const put = (node, name, value) => Object.defineProperty(node, name, { value, writable: true, enumerable: true, configurable: true });
  const add = (path, value) => {
    if (path.length === 0) { root = value; return; }
    const node = get(path.slice(0, -1)), last = path[path.length - 1];
    if (Array.isArray(node)) node.splice(index(node, last, true), 0, value);
    else if (isObject(node)) put(node, last, value);
    else fail("add into a " + typeof node);
  };
  const remove = (path) => {
    if (path.length === 0) fail("remove of the whole document");
    const node = get(path.slice(0, -1)), last = path[path.length - 1];
    const value = child(node, last);
    if (Array.isArray(node)) node.splice(Number(last), 1); else delete node[last];
    return value;
  };
  const same = (a, b) => {
    if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, at) => same(item, b[at]));
    if (isObject(a)) return isObject(b) && Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((key) => Object.hasOwn(b, key) && same(a[key], b[key]));
    return a === b;
  };
  if (!Array.isArray(patch)) fail("not an array");
  for (const operation of patch) {
    const path = tokens(operation.path);
    const from = "from" in operation ? tokens(operation.from) : null;
    switch (operation.op) {
      case "add": add(path, structuredClone(operation.value)); break;
      case "remove": remove(path); break;
      case "replace": {
        get(path);
        if (path.length === 0) { root = structuredClone(operation.value); break; }
        const node = get(path.slice(0, -1)), last = path[path.length - 1];
        if (Array.isArray(node)) node[Number(last)] = structuredClone(operation.value); else put(node, last, structuredClone(operation.value));
        break;
      }
      case "move":
        if (path.length > from.length && from.every((token, at) => token === path[at])) fail("move into its own child");
        add(path, remove(from));
        break;
      case "copy": add(path, structuredClone(get(from))); break;
      case "test": if (!same(get(path), operation.value)) fail("test of " + operation.path); break;
      default: fail("unknown operation " + operation.op);
    }
  }
  return root;
}

// The stream id of each resource on this connection, as its `event: stream` announced it:
// triggers and inputs go to /streams/{id}/…. A reconnection announces new ones.
const streams = {};

const previous = new Map();
const groups = {
  show(snapshot, eventID) {
    $("groups-error").textContent = "";
    const body = $("groups");
    body.replaceChildren();
    for (const group of snapshot.data) {
      const row = document.createElement("tr");
      // A group still waiting for its details (the first document comes as soon as the
      // list is known: `progressive=true`) shows its name, and fills in when they arrive.
      const cells = group.pending ? [group.name, "…", "loading"]
        : [group.name, group.error ? "—" : group.taskCount, group.lastUpdated ?? group.error?.message];
      for (const value of cells) {
        const cell = document.createElement("td");
        cell.textContent = text(value);
        row.append(cell);
      }
      row.children[1].className = "count";
      if (group.pending) {
        row.className = "pending";
      } else {
        const signature = text(group.taskCount) + text(group.lastUpdated);
        if (previous.has(group.id) && previous.get(group.id) !== signature) row.className = "changed";
        previous.set(group.id, signature);
      }
      body.append(row);
    }
    document.body.dataset.pending = String(snapshot.data.filter((group) => group.pending).length);
    document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
    // The event id lists every resource's version: `groups:<v>,rows:<v>,search:<v>`.
    const version = eventID.split(",").find((part) => part.startsWith("groups:"))?.slice("groups:".length);
    $("version").textContent = "version " + text(version) + " · " + new Date().toLocaleTimeString();
  },
  fail(failure) { $("groups-error").textContent = failure.error.message; },
};

const rows = {
  show(snapshot) {
    $("rows-error").textContent = "";
    const container = $("rows");
    container.replaceChildren();
    for (const row of snapshot.data) {
      const box = document.createElement("div");
      box.className = "row";
      const title = document.createElement("h3");
      title.textContent = text(row.topic.title ?? row.topic.id);
      const medias = document.createElement("div");
      medias.className = "medias";
      for (const media of row.medias) {
        const chip = document.createElement("span");
        chip.className = "media";
        chip.textContent = text(media.title ?? media.id);
        medias.append(chip);
      }
      const more = document.createElement("button");
      more.textContent = "more";
      more.addEventListener("click", () => {
        // The answer read to its end: an unread body holds its connection (control
        // answers are no-store, so no cache reads it either), and a page has six.
        fetch(`/streams/${streams.rows}/triggers/loadMore?topic=${encodeURIComponent(row.topic.id)}`, { method: "POST" })
          .then((answer) => answer.text()).catch(() => {});
      });
      medias.append(more);
      if (row.error) {
        const problem = document.createElement("span");
        problem.className = "error";
        problem.textContent = row.error.message;
        medias.append(problem);
      }
      box.append(title, medias);
      container.append(box);
    }
  },
  fail(failure) { $("rows-error").textContent = failure.error.message; },
};

// The box's text goes to the search stream's input `q`; the server debounces it, skips
// repeats and cancels a superseded search. Results are labelled with the query their
// snapshot answers, never with what is typed, so an older query's results are never
// shown as the newer one's.
const search = {
  wanted: "",      // the box's text
  held: "",        // the value the search stream took last (or refused: it is not resent)
  sending: false,  // one value in flight at a time: side by side they could arrive out of order
  shown: null,     // the query the results on screen answer
  restart() {
    this.held = "";  // a new stream starts with an empty q
    this.send();
  },
  type(value) {
    this.wanted = value;
    this.label();
    this.send();
  },
  send() {
    if (this.sending || !streams.search || this.wanted === this.held) return;
    const stream = streams.search;
    const value = this.wanted;
    this.sending = true;
    fetch(`/streams/${stream}/inputs/q`, { method: "PUT", body: value })
      .then(async (answer) => {
        // Read whole, whatever it says: an unread body holds its connection.
        const body = await answer.text();
        // 404: the stream went with its connection; the next one's announcement resends.
        if (answer.status === 404) return;
        this.held = value;
        $("search-error").textContent = answer.ok ? "" : JSON.parse(body).error.message;
      }, () => {})  // the connection is lost as well: the same
      .finally(() => {
        this.sending = false;
        if (stream !== streams.search || this.held === value) this.send();
      });
  },
  show(snapshot) {
    this.shown = snapshot.inputs.q;
    $("search-error").textContent = "";
    const list = $("results");
    list.replaceChildren();
    for (const item of snapshot.data) {
      const entry = document.createElement("li");
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = text(item.fullName ?? item.name);
      const description = document.createElement("span");
      description.className = "description";
      description.textContent = text(item.description);
      const stars = document.createElement("span");
      stars.className = "stars";
      stars.textContent = "★ " + text(item.stargazersCount);
      entry.append(name, description, stars);
      list.append(entry);
    }
    list.dataset.query = this.shown;
    this.label();
  },
  fail(failure) {
    $("search-error").textContent = quoted(failure.inputs.q) + ": " + failure.error.message;
  },
  label() {
    const count = $("results").childElementCount;
    let label = this.shown === null || this.shown === "" ? "type at least 3 characters"
      : (count === 0 ? "nothing found for " : count + (count === 1 ? " result for " : " results for ")) + quoted(this.shown);
    if (this.wanted !== (this.shown ?? "")) label += " · searching " + quoted(this.wanted) + "…";
    $("search-for").textContent = label;
  },
};
$("q").addEventListener("input", (event) => search.type(event.target.value));

// With auth on: a token given as `/#access_token=T` becomes the `tributary_token`
// cookie, which EventSource and fetch send by themselves; the fragment never reaches a
// server or its log, and is taken out of the address bar.
const given = new URLSearchParams(location.hash.slice(1)).get("access_token");
if (given) {
  document.cookie = `tributary_token=${encodeURIComponent(given)}; path=/; SameSite=Strict`;
  history.replaceState(null, "", location.pathname + location.search);
}

// A resource of one parameter (its name and parameter from the server), shown as a table.
const param = { resource: document.body.dataset.paramResource, name: document.body.dataset.paramName };
const parameterized = {
  show(snapshot) {
    $("param-error").textContent = "";
    const body = $("param-groups");
    body.replaceChildren();
    for (const item of snapshot.data) {
      const row = document.createElement("tr");
      const cells = item.pending ? [item.name ?? item.id, "…", "loading"]
        : [item.name ?? item.id, item.error ? "—" : item.taskCount, item.lastUpdated ?? item.error?.message];
      for (const value of cells) {
        const cell = document.createElement("td");
        cell.textContent = text(value);
        row.append(cell);
      }
      row.children[1].className = "count";
      if (item.pending) row.className = "pending";
      body.append(row);
    }
    body.dataset.value = param.value;
    $("param-version").textContent = new Date().toLocaleTimeString();
  },
  fail(failure) { $("param-error").textContent = failure.error.message; },
};
if (param.resource) {
  param.value = "core";
  $("param-view").hidden = false;
  $("param-title").textContent = param.resource + " · " + param.name;
  $("param-value").value = param.value;
}

const views = { groups, rows, search };
if (param.resource) views[param.resource] = parameterized;
// Each resource's document as the page has it: a snapshot replaces it, a patch changes it.
const documents = {};
function take(event) {
  const message = JSON.parse(event.data);
  const resource = message.resource;
  documents[resource] = event.type === "patch" ? applyPatch(documents[resource], message.patch) : message.data;
  if (event.type === "patch" && resource === "groups") document.body.dataset.patches = String(Number(document.body.dataset.patches) + 1);
  views[resource].show({ resource, inputs: message.inputs, data: documents[resource] }, event.lastEventId);
}

// The one connection, and how to open it anew for another parameter value.
let current = null;
function connect() {
  // Only the members the page shows (and the ids it tells items apart by), and each list's
  // first document as soon as its list is known.
  let url = "/events?resource=groups&resource=rows&resource=search&updates=patch&progressive=true"
    + "&groups.fields=id,name,taskCount,lastUpdated&rows.fields=topic.id,topic.title,medias.id,medias.title";
  if (param.resource) {
    url += `&resource=${encodeURIComponent(param.resource)}&${encodeURIComponent(param.resource + "." + param.name)}=${encodeURIComponent(param.value)}`;
  }
  const events = new EventSource(url);
  current = events;
  events.addEventListener("open", () => setState("live"));
  events.addEventListener("stream", (event) => {
    const stream = JSON.parse(event.data);
    streams[stream.resource] = stream.id;
    if (stream.resource === "search") search.restart();
  });
  const update = (event) => {
    setState("live");
    try {
      take(event);
    } catch (problem) {
      // A patch that does not apply: start over, with every document sent whole.
      events.close();
      setState("reconnecting");
      connect();
    }
  };
  events.addEventListener("snapshot", update);
  events.addEventListener("patch", update);
  // Our `event: error` carries data naming its resource; the browser's own error event
  // (connection lost, EventSource reconnects) does not.
  events.addEventListener("error", (event) => {
    if (!event.data) { setState("reconnecting"); return; }
    const failure = JSON.parse(event.data);
    views[failure.resource].fail(failure);
  });
}
connect();
if (param.resource) {
  $("param-value").addEventListener("change", (event) => {
    param.value = event.target.value;
    delete documents[param.resource];
    current.close();
    setState("reconnecting");
    connect();
  });
}
