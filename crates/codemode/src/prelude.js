// Evaluated in a fresh QuickJS context before a script runs. It evaluates to
// a function that takes the host's three entry points and the script's
// inputs, and returns { settle, run, stalled } for the Rust side.
//
// The host entry points stay in this closure: the script only ever sees the
// globals defined below. The built-ins were frozen when the VM was made
// (lockdown.js).
(function (hostCall, hostOutput, hostDone, toolsJson, storeJson, limitsJson) {
  "use strict";

  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const then = Promise.prototype.then;
  const ErrorType = Error;
  const TypeErrorType = TypeError;
  const RangeErrorType = RangeError;
  const limits = parse(limitsJson);
  const waiting = new Map();
  let nextCall = 1;
  let callsMade = 0;
  let ended = false;
  // Thrown by exit() to unwind the script after success was reported.
  const EXIT = Object.freeze({});

  function finish(ok, payloadJson, writesJson) {
    if (ended) return;
    ended = true;
    hostDone(ok, payloadJson, writesJson);
  }

  // "Name: message" then the script's own stack frames, without ours.
  function errorText(error) {
    const head = error.message ? String(error.name) + ": " + String(error.message) : String(error.name);
    const frames = typeof error.stack === "string"
      ? error.stack.split("\n").filter((line) => line.trim() !== "" && !line.includes("codemode-prelude"))
      : [];
    return [head, ...frames].join("\n");
  }

  function show(value) {
    if (typeof value === "string") return value;
    if (value instanceof ErrorType) return errorText(value);
    if (typeof value === "number" || typeof value === "bigint" || typeof value === "symbol" || typeof value === "function" || value === undefined) return String(value);
    try {
      const json = stringify(value);
      return json === undefined ? String(value) : json;
    } catch (e) {
      return String(value);
    }
  }

  function describeError(error) {
    try {
      if (error instanceof ErrorType) {
        return stringify({ name: String(error.name), message: String(error.message), stack: errorText(error) });
      }
      return stringify({ name: "Error", message: show(error), stack: "" });
    } catch (e) {
      return stringify({ name: "Error", message: "the script threw a value that cannot be described", stack: "" });
    }
  }

  // --- tools ---------------------------------------------------------------
  const table = Object.create(null);
  const listing = [];
  const descriptions = new Map();
  function callTool(name) {
    return (args) => new Promise((resolve, reject) => {
      if (ended) { reject(new ErrorType("the script has ended")); return; }
      if (callsMade >= limits.maxCalls) {
        reject(new RangeErrorType("a script may make at most " + limits.maxCalls + " tool calls"));
        return;
      }
      let json;
      try { json = args === undefined ? "{}" : stringify(args); } catch (e) { reject(e); return; }
      if (json === undefined) { reject(new TypeErrorType("tools." + name + "() takes one object of arguments")); return; }
      if (json.length > limits.maxArgChars) {
        reject(new RangeErrorType("tools." + name + "() arguments are " + json.length + " characters of JSON, more than the limit of " + limits.maxArgChars));
        return;
      }
      callsMade++;
      const id = nextCall++;
      waiting.set(id, { resolve, reject });
      hostCall(id, name, json);
    });
  }
  for (const { name, jsName, description } of parse(toolsJson)) {
    const fn = callTool(name);
    if (!(jsName in table)) {
      table[jsName] = fn;
      listing.push(Object.freeze({ name: jsName, description }));
      descriptions.set(jsName, description);
    }
    if (!(name in table)) table[name] = fn;
    if (!descriptions.has(name)) descriptions.set(name, description);
  }
  Object.freeze(table);
  Object.freeze(listing);
  const squash = (name) => name.toLowerCase().replace(/[^a-z0-9]/g, "");
  const tools = new Proxy(table, {
    get(target, key, receiver) {
      if (typeof key !== "string" || key in target || key in Object.prototype || key === "then" || key === "toJSON") {
        return Reflect.get(target, key, receiver);
      }
      const wanted = squash(key);
      const names = listing.map((t) => t.name);
      const same = names.filter((n) => squash(n) === wanted);
      const near = same.length > 0 ? same : names.filter((n) => wanted !== "" && (squash(n).includes(wanted) || wanted.includes(squash(n))));
      let message = "tools." + key + " does not exist.";
      if (near.length > 0) message += " Did you mean " + near.slice(0, 5).map((n) => "tools." + n).join(", ") + "?";
      else message += " Callable tools: " + (names.length > 0 ? names.join(", ") : "none") + ".";
      throw new TypeErrorType(message);
    },
  });
  function describeTool(name) {
    if (typeof name !== "string") return Promise.reject(new TypeErrorType("describeTool() takes a tool name"));
    return Promise.resolve(descriptions.get(name));
  }

  // --- store ---------------------------------------------------------------
  const stored = new Map(Object.entries(parse(storeJson)));
  const written = new Map();
  let storedChars = 0;
  for (const [key, json] of stored) storedChars += key.length + json.length;
  const STORE_HINT = "store() is for small state such as ids, cursors or summaries; keep large data in variables or write it to a file with a tool.";
  // Text the agent can keep: no lone surrogate (JSON elsewhere refuses it).
  const wellFormed = (text) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:^|[^\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
  // Nesting of a JSON text, outside its strings.
  function depthOf(json) {
    let depth = 0;
    let most = 0;
    let inString = false;
    for (let i = 0; i < json.length; i++) {
      const c = json[i];
      if (inString) {
        if (c === "\\") i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === "[" || c === "{") most = Math.max(most, ++depth);
      else if (c === "]" || c === "}") depth--;
    }
    return most;
  }
  function store(key, value) {
    if (typeof key !== "string") throw new TypeErrorType("store() key must be a string");
    if (!wellFormed(key)) throw new TypeErrorType("store() key holds a lone surrogate");
    if (key.length > limits.maxStoreValueChars) {
      throw new RangeErrorType("store() key is longer than " + limits.maxStoreValueChars + " characters");
    }
    const before = stored.has(key) ? key.length + stored.get(key).length : 0;
    if (value === undefined) {
      // Deleting a key that is not there records nothing.
      if (!stored.has(key)) return;
      stored.delete(key);
      storedChars -= before;
      written.set(key, undefined);
      return;
    }
    let json;
    try { json = stringify(value); } catch (e) { throw new TypeErrorType("store(" + stringify(key) + ") value is not JSON: " + show(e)); }
    if (json === undefined) throw new TypeErrorType("store(" + stringify(key) + ") value is not JSON");
    if (!wellFormed(json) || /\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])|(?<!\\ud[89ab][0-9a-f]{2})\\ud[c-f][0-9a-f]{2}/i.test(json)) {
      throw new TypeErrorType("store(" + stringify(key) + ") value holds a lone surrogate");
    }
    if (depthOf(json) > 100) {
      throw new RangeErrorType("store(" + stringify(key) + ") value is nested more than 100 deep");
    }
    if (json.length > limits.maxStoreValueChars) {
      throw new RangeErrorType("store(" + stringify(key) + ") value is " + json.length + " characters of JSON, more than the limit of " + limits.maxStoreValueChars + ". " + STORE_HINT);
    }
    const after = storedChars - before + key.length + json.length;
    if (after > limits.maxStoreTotalChars) {
      throw new RangeErrorType("the store is full: its values would pass " + limits.maxStoreTotalChars + " characters of JSON. Delete keys with store(key, undefined). " + STORE_HINT);
    }
    stored.set(key, json);
    storedChars = after;
    written.set(key, json);
  }
  function load(key) {
    if (typeof key !== "string") throw new TypeErrorType("load() key must be a string");
    const json = stored.get(key);
    return json === undefined ? undefined : parse(json);
  }
  function writesJson() {
    const list = [];
    for (const [key, json] of written) list.push(json === undefined ? [key] : [key, json]);
    return stringify(list);
  }

  // --- output --------------------------------------------------------------
  let outputChars = 0;
  let outputItems = 0;
  function emit(kind, data, mimeType) {
    if (ended) return;
    if (typeof data !== "string" || (mimeType !== undefined && typeof mimeType !== "string")) {
      throw new TypeErrorType("output must be text");
    }
    outputChars += data.length;
    outputItems++;
    if (outputChars > limits.maxOutputChars || outputItems > limits.maxOutputItems) {
      const error = new RangeErrorType("the script's output passed the limit of " + limits.maxOutputChars +
        " characters or " + limits.maxOutputItems + " text(), image() and console calls. Print a summary instead, or write large data to a file with a tool.");
      // Reported now, so catching the error cannot resume the output.
      finish(false, describeError(error));
      throw error;
    }
    hostOutput(kind, data, mimeType === undefined ? "" : mimeType);
  }
  function asText(value) {
    if (value === undefined || value === null || (typeof value !== "object" && typeof value !== "function")) return String(value);
    const json = stringify(value);
    return json === undefined ? String(value) : json;
  }
  function text(value) {
    let rendered;
    try { rendered = asText(value); } catch (e) { throw new TypeErrorType(e instanceof ErrorType ? e.message : String(e)); }
    emit("text", rendered);
  }
  const IMAGE_USAGE = 'image() takes a base64 data: URL, an object with image_url, or an image block { type: "image", data, mimeType }';
  function imageUrl(value) {
    if (typeof value === "string") return value;
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeErrorType(IMAGE_USAGE);
    if (value.image_url !== undefined) {
      if (typeof value.image_url !== "string") throw new TypeErrorType(IMAGE_USAGE);
      return value.image_url;
    }
    if (value.type !== "image") throw new TypeErrorType(IMAGE_USAGE);
    if (typeof value.data !== "string" || value.data === "") throw new TypeErrorType("image() block has no data");
    if (value.data.toLowerCase().startsWith("data:")) return value.data;
    return "data:;base64," + value.data;
  }
  // Base64 prefixes of the signatures of PNG, JPEG, GIF and WebP.
  const SIGNATURES = [
    ["image/png", /^iVBORw0KGg/],
    ["image/jpeg", /^[/]9j[/](?!9)/],
    ["image/gif", /^R0lGOD[dl]h/],
    ["image/webp", /^UklG.{8}RUJQ/],
  ];
  let images = 0;
  function image(value) {
    if (images >= limits.maxImages) {
      throw new RangeErrorType("a script may show at most " + limits.maxImages + " images; write more to files with a tool");
    }
    const url = imageUrl(value);
    const colon = url.indexOf(":");
    const scheme = colon === -1 ? "" : url.slice(0, colon).toLowerCase();
    if (scheme === "http" || scheme === "https") throw new TypeErrorType("image() does not fetch remote URLs; pass base64 data");
    const comma = url.indexOf(",");
    const header = comma === -1 ? [] : url.slice(colon + 1, comma).split(";");
    if (scheme !== "data" || comma === -1 || !header.slice(1).some((p) => p.toLowerCase() === "base64")) {
      throw new TypeErrorType("image() needs base64 data: " + IMAGE_USAGE);
    }
    // A bad image would make every later request to the provider fail, so it is refused here.
    const data = url.slice(comma + 1).replace(/\s+/g, "");
    if (data.length === 0 || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(data)) {
      throw new TypeErrorType("image() data is not valid base64 (truncated or corrupted?)");
    }
    const found = SIGNATURES.find(([, pattern]) => pattern.test(data.slice(0, 16)));
    if (!found) throw new TypeErrorType("image() data is not a PNG, JPEG, GIF or WebP image");
    images++;
    emit("image", data, found[0]);
  }
  function exit() {
    finish(true, undefined, writesJson());
    throw EXIT;
  }
  const consoleObject = {};
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = (...values) => emit("console", values.map(show).join(" "));
  }
  Object.freeze(consoleObject);

  const define = (name, value) => Object.defineProperty(globalThis, name, { value, enumerable: true });
  define("tools", tools);
  define("ALL_TOOLS", listing);
  define("describeTool", describeTool);
  define("console", consoleObject);
  define("text", text);
  define("image", image);
  define("exit", exit);
  define("store", store);
  define("load", load);

  return {
    settle(id, ok, payload) {
      const entry = waiting.get(id);
      if (!entry) return;
      waiting.delete(id);
      if (!ok) { entry.reject(new ErrorType(payload)); return; }
      let value;
      try { value = payload === "" ? undefined : parse(payload); } catch (e) { entry.reject(e); return; }
      entry.resolve(value);
    },
    run(body) {
      let promise;
      try { promise = body(); } catch (e) {
        if (e !== EXIT) finish(false, describeError(e));
        return;
      }
      then.call(promise, (value) => {
        let json;
        try { json = value === undefined ? undefined : stringify(value); } catch (e) { finish(false, describeError(e)); return; }
        if (typeof value === "number" && json !== undefined && !Number.isFinite(value)) json = stringify(String(value));
        finish(true, json, writesJson());
      }, (e) => {
        if (e !== EXIT) finish(false, describeError(e));
      });
    },
    stalled() {
      if (ended || waiting.size > 0) return false;
      finish(false, stringify({ name: "Error", message: "the script waits on a promise that can never settle: no tool call is pending, and there are no timers", stack: "" }));
      return true;
    },
  };
})
