// Evaluated once when a VM is made, before any script is known (so a warm
// worker has done it before a script arrives): every built-in reachable
// from the global object, and the intrinsics reachable only through
// instances, is frozen, so a script that patches `JSON.stringify` or
// `Array.prototype.toJSON` cannot change what the prelude reports to the
// host. The global object itself stays extensible: the prelude adds the
// script's globals to it.
"use strict";
// QuickJS-ng gives `Error` V8's `prepareStackTrace` and `stackTraceLimit` as
// accessors, which freezing leaves settable; a `prepareStackTrace` hook gets
// call sites whose `getFunction()` hands out the prelude's own functions on
// the stack. Both become fixed data properties first.
for (const key of ["prepareStackTrace", "stackTraceLimit"]) {
  const d = Object.getOwnPropertyDescriptor(Error, key);
  if (d && d.configurable) {
    Object.defineProperty(Error, key, {
      value: key === "stackTraceLimit" ? 10 : undefined,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }
}
(function freezeIntrinsics() {
  // Properties ordinary code assigns on instances. Freezing the prototype
  // would make `this.name = "X"` in an Error subclass throw (the
  // "override mistake"), so these become accessors that define an own
  // property on the instance instead.
  const assignable = new Set(["constructor", "name", "message", "toString", "toLocaleString", "valueOf", "toJSON"]);
  const visited = new Set([globalThis]);
  const pending = [];
  const visit = (value) => {
    if ((typeof value === "object" && value !== null) || typeof value === "function") {
      if (!visited.has(value)) {
        visited.add(value);
        pending.push(value);
      }
    }
  };
  const makeAssignable = (target, key, value, enumerable) => {
    const accessors = Object.getOwnPropertyDescriptor({
      get slot() { return value; },
      set slot(next) {
        if (this === target) throw new TypeError("Cannot assign to read only property '" + String(key) + "' of a built-in");
        if ((typeof this !== "object" || this === null) && typeof this !== "function") return;
        Object.defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
      },
    }, "slot");
    Object.defineProperty(target, key, { get: accessors.get, set: accessors.set, enumerable, configurable: false });
    visit(accessors.get);
    visit(accessors.set);
  };
  for (const key of Reflect.ownKeys(globalThis)) {
    const d = Object.getOwnPropertyDescriptor(globalThis, key);
    visit(d.value); visit(d.get); visit(d.set);
    if ("value" in d && d.configurable) Object.defineProperty(globalThis, key, { writable: false, configurable: false });
  }
  // Intrinsics reachable only through instances.
  visit(Object.getPrototypeOf(function* () {}));
  visit(Object.getPrototypeOf(async function () {}));
  visit(Object.getPrototypeOf(async function* () {}));
  visit(Object.getPrototypeOf(Int8Array));
  visit(Object.getPrototypeOf([][Symbol.iterator]()));
  visit(Object.getPrototypeOf(new Map()[Symbol.iterator]()));
  visit(Object.getPrototypeOf(new Set()[Symbol.iterator]()));
  visit(Object.getPrototypeOf(""[Symbol.iterator]()));
  visit(Object.getPrototypeOf(/x/[Symbol.matchAll]("")));
  while (pending.length > 0) {
    const object = pending.pop();
    visit(Object.getPrototypeOf(object));
    const isFunction = typeof object === "function";
    for (const key of Reflect.ownKeys(object)) {
      // A function's length and name are read-only numbers and strings.
      if (isFunction && (key === "length" || key === "name")) continue;
      const d = Reflect.getOwnPropertyDescriptor(object, key);
      if ("value" in d) {
        visit(d.value);
        if (d.writable && d.configurable && (object === Object.prototype || assignable.has(key))) {
          makeAssignable(object, key, d.value, d.enumerable);
        }
      } else {
        visit(d.get); visit(d.set);
      }
    }
    Object.freeze(object);
  }
})();
