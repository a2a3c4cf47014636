//! One script in one QuickJS VM, run to its end on the calling thread.
//!
//! The loop is the same wherever the VM lives (a thread of the agent, or a
//! confined worker process): it runs the script's synchronous part, then
//! drives promise jobs one at a time, checking for an interrupt between them
//! (QuickJS's own job runner would drain the queue without a chance to
//! stop), and when nothing can run it waits for the host to settle a tool
//! call. A script that waits while no call is pending can never resume, so
//! it fails at once rather than hanging.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rquickjs::context::EvalOptions;
use rquickjs::{CaughtError, Context, Ctx, Function, Object, Runtime, Value};

use crate::protocol::{HostMessage, OutputKind, ScriptEnd, ScriptRequest, VmEvent};

const LOCKDOWN: &str = include_str!("lockdown.js");
const PRELUDE: &str = include_str!("prelude.js");

/// Why a VM could not be made.
#[derive(Debug, thiserror::Error)]
#[error("could not start the script VM: {0}")]
pub struct VmStartError(String);

/// A QuickJS runtime and context, made before the script is known so a warm
/// worker has its VM ready.
pub struct Vm {
    runtime: Runtime,
    context: Context,
    interrupt: Arc<AtomicBool>,
    deadline: Arc<std::sync::Mutex<Option<Instant>>>,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").finish_non_exhaustive()
    }
}

/// Stops a running VM from another thread: the VM notices at its next
/// interrupt check and ends the script as `Interrupted`.
#[derive(Debug, Clone)]
pub struct VmInterrupt(Arc<AtomicBool>);

impl Default for VmInterrupt {
    fn default() -> Self {
        VmInterrupt::new()
    }
}

impl VmInterrupt {
    /// A handle not yet asked to stop; give it to [`Vm::with_interrupt`].
    pub fn new() -> VmInterrupt {
        VmInterrupt(Arc::new(AtomicBool::new(false)))
    }

    /// Asks the VM to stop.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Vm {
    /// A fresh runtime and context with every standard built-in.
    pub fn new() -> Result<Vm, VmStartError> {
        Vm::with_interrupt(VmInterrupt::new())
    }

    /// A fresh VM that `interrupt` stops (the VM itself cannot leave its
    /// thread, the handle can).
    pub fn with_interrupt(interrupt: VmInterrupt) -> Result<Vm, VmStartError> {
        let interrupt = interrupt.0;
        let runtime = Runtime::new().map_err(|e| VmStartError(e.to_string()))?;
        let context = Context::full(&runtime).map_err(|e| VmStartError(e.to_string()))?;
        // The built-ins are frozen now, before any script is known: a warm
        // VM has paid for it (a few milliseconds) when a script arrives.
        context.with(|ctx| {
            let mut options = EvalOptions::default();
            options.filename = Some("codemode-prelude.js".to_string());
            ctx.eval_with_options::<(), _>(LOCKDOWN, options)
                .map_err(|e| VmStartError(format!("the built-ins could not be frozen: {e}")))
        })?;
        let deadline: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
        let (flag, until) = (interrupt.clone(), deadline.clone());
        runtime.set_interrupt_handler(Some(Box::new(move || {
            flag.load(Ordering::Relaxed)
                || until
                    .lock()
                    .ok()
                    .and_then(|d| *d)
                    .is_some_and(|d| Instant::now() >= d)
        })));
        Ok(Vm {
            runtime,
            context,
            interrupt,
            deadline,
        })
    }

    /// A handle that stops this VM from another thread.
    pub fn interrupter(&self) -> VmInterrupt {
        VmInterrupt(self.interrupt.clone())
    }

    /// Runs `request` to its end. Events go to `send` (which returns `false`
    /// once the host is gone); settlements come from `receive` (`None` once
    /// the host is gone). The last event sent is always [`VmEvent::End`].
    pub fn run(
        self,
        request: ScriptRequest,
        send: impl FnMut(VmEvent) -> bool + 'static,
        mut receive: impl FnMut() -> Option<HostMessage>,
    ) {
        let limits = request.limits;
        self.runtime.set_memory_limit(limits.memory_bytes);
        self.runtime.set_max_stack_size(limits.stack_bytes);
        if let Some(ms) = limits.timeout_ms
            && let Ok(mut deadline) = self.deadline.lock()
        {
            *deadline = Instant::now().checked_add(Duration::from_millis(ms));
        }
        let outbox = Outbox::new(send, self.interrupt.clone());
        let timed_out = {
            let deadline = self.deadline.clone();
            move || {
                deadline
                    .lock()
                    .ok()
                    .and_then(|d| *d)
                    .is_some_and(|d| Instant::now() >= d)
            }
        };
        let interrupted = {
            let flag = self.interrupt.clone();
            let timed_out = timed_out.clone();
            move || flag.load(Ordering::SeqCst) || timed_out()
        };
        let stop_reason = |outbox: &Outbox| {
            let end = if timed_out() {
                ScriptEnd::TimedOut
            } else {
                ScriptEnd::Interrupted
            };
            outbox.end(end);
        };

        self.context.with(|ctx| {
            let api = match start(&ctx, &request, &outbox) {
                Ok(api) => api,
                Err(end) => return outbox.end(end),
            };
            let wrapped = format!("(async function () {{{}\n}})", request.code);
            let mut options = EvalOptions::default();
            options.strict = false;
            options.filename = Some("codemode.js".to_string());
            let body: Function<'_> = match ctx.eval_with_options(wrapped, options) {
                Ok(body) => body,
                Err(e) => return outbox.end(threw(&ctx, e)),
            };
            if let Err(e) = api.run.call::<_, ()>((body,)) {
                if interrupted() {
                    return stop_reason(&outbox);
                }
                return outbox.end(threw(&ctx, e));
            }
            loop {
                // Jobs one at a time, so an interrupt is seen between them.
                loop {
                    if outbox.ended() {
                        return;
                    }
                    if interrupted() {
                        return stop_reason(&outbox);
                    }
                    if !ctx.execute_pending_job() {
                        break;
                    }
                }
                if outbox.ended() {
                    return;
                }
                match api.stalled.call::<_, bool>(()) {
                    Ok(true) => return,
                    Ok(false) => {}
                    Err(e) => return outbox.end(threw(&ctx, e)),
                }
                match receive() {
                    Some(HostMessage::Settle { id, ok, payload }) => {
                        // Ids are small counters, exact as a JS number.
                        let settled = api.settle.call::<_, ()>((id as f64, ok, payload));
                        if let Err(e) = settled {
                            if interrupted() {
                                return stop_reason(&outbox);
                            }
                            return outbox.end(threw(&ctx, e));
                        }
                        outbox.send(VmEvent::Took { id });
                    }
                    Some(HostMessage::Start(_)) => {}
                    None => return outbox.end(ScriptEnd::Interrupted),
                }
            }
        });
    }
}

/// The prelude's functions the loop calls.
struct Api<'js> {
    settle: Function<'js>,
    run: Function<'js>,
    stalled: Function<'js>,
}

/// Evaluates the prelude and gives it the host functions and the inputs.
fn start<'js>(
    ctx: &Ctx<'js>,
    request: &ScriptRequest,
    outbox: &Outbox,
) -> Result<Api<'js>, ScriptEnd> {
    let fail = |e: rquickjs::Error| threw(ctx, e);
    let mut options = EvalOptions::default();
    options.filename = Some("codemode-prelude.js".to_string());
    let prelude: Function<'_> = ctx.eval_with_options(PRELUDE, options).map_err(fail)?;

    let calls = outbox.clone();
    let host_call = Function::new(
        ctx.clone(),
        move |id: f64, name: Value<'_>, args: Value<'_>| {
            calls.send(VmEvent::Call {
                id: id as u64,
                name: js_text(&name),
                args: js_text(&args),
            });
        },
    )
    .map_err(fail)?;
    let outputs = outbox.clone();
    let host_output = Function::new(
        ctx.clone(),
        move |kind: Value<'_>, data: Value<'_>, mime: Value<'_>| {
            let kind = match js_text(&kind).as_str() {
                "console" => OutputKind::Console,
                "image" => OutputKind::Image,
                _ => OutputKind::Text,
            };
            outputs.send(VmEvent::Output {
                kind,
                data: js_text(&data),
                mime: js_text(&mime),
            });
        },
    )
    .map_err(fail)?;
    let ends = outbox.clone();
    let host_done = Function::new(
        ctx.clone(),
        move |ok: bool, payload: Value<'_>, writes: Value<'_>| {
            let payload = payload.as_string().map(|_| js_text(&payload));
            if ok {
                let writes = writes
                    .as_string()
                    .map(|_| js_text(&writes))
                    .and_then(|json| serde_json::from_str::<Vec<Vec<String>>>(&json).ok())
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|mut pair| match pair.len() {
                        1 => Some((pair.remove(0), None)),
                        2 => {
                            let value = pair.pop();
                            Some((pair.remove(0), value))
                        }
                        _ => None,
                    })
                    .collect();
                ends.end(ScriptEnd::Completed {
                    value: payload,
                    writes,
                });
            } else {
                ends.end(described_error(payload.as_deref().unwrap_or("")));
            }
        },
    )
    .map_err(fail)?;

    let tools = serde_json::to_string(&request.tools.iter().map(|t| {
        serde_json::json!({"name": t.name, "jsName": t.js_name, "description": t.description})
    }).collect::<Vec<_>>())
    .unwrap_or_else(|_| "[]".to_string());
    let store: serde_json::Map<String, serde_json::Value> = request
        .store
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let store = serde_json::Value::Object(store).to_string();
    let l = &request.limits;
    let limits = serde_json::json!({
        "maxCalls": l.max_calls,
        "maxArgChars": l.max_arg_chars,
        "maxOutputChars": l.max_output_chars,
        "maxOutputItems": l.max_output_items,
        "maxImages": l.max_images,
        "maxStoreValueChars": l.max_store_value_chars,
        "maxStoreTotalChars": l.max_store_total_chars,
    })
    .to_string();
    let api: Object<'_> = prelude
        .call((host_call, host_output, host_done, tools, store, limits))
        .map_err(fail)?;
    Ok(Api {
        settle: api.get("settle").map_err(fail)?,
        run: api.get("run").map_err(fail)?,
        stalled: api.get("stalled").map_err(fail)?,
    })
}

/// A JS string as Rust text; anything else (or text QuickJS cannot hand
/// over, such as a lone surrogate) becomes its best-effort form.
fn js_text(value: &Value<'_>) -> String {
    match value.as_string() {
        Some(s) => s.to_string().unwrap_or_else(|_| "\u{FFFD}".to_string()),
        None => String::new(),
    }
}

/// The prelude's `{name, message, stack}` JSON as an end.
fn described_error(json: &str) -> ScriptEnd {
    #[derive(serde::Deserialize)]
    struct Described {
        #[serde(default)]
        name: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        stack: String,
    }
    match serde_json::from_str::<Described>(json) {
        Ok(d) => {
            let stack = if d.stack.is_empty() {
                format!("{}: {}", d.name, d.message)
            } else {
                d.stack
            };
            ScriptEnd::Threw {
                name: d.name,
                message: d.message,
                stack,
            }
        }
        Err(_) => ScriptEnd::Threw {
            name: "Error".into(),
            message: json.to_string(),
            stack: format!("Error: {json}"),
        },
    }
}

/// An exception caught on the Rust side (a syntax error, out of memory in
/// the prelude) as an end.
fn threw(ctx: &Ctx<'_>, error: rquickjs::Error) -> ScriptEnd {
    match CaughtError::from_error(ctx, error) {
        CaughtError::Exception(e) => {
            let name = e
                .get::<_, String>("name")
                .unwrap_or_else(|_| "Error".to_string());
            let message = e.message().unwrap_or_default();
            let frames = e.stack().unwrap_or_default();
            let stack = format!("{name}: {message}\n{frames}")
                .trim_end()
                .to_string();
            ScriptEnd::Threw {
                name,
                message,
                stack,
            }
        }
        CaughtError::Value(v) => {
            let text = v
                .as_string()
                .and_then(|s| s.to_string().ok())
                .unwrap_or_else(|| format!("{v:?}"));
            ScriptEnd::Threw {
                name: "Error".into(),
                message: text.clone(),
                stack: format!("Error: {text}"),
            }
        }
        CaughtError::Error(e) => {
            let message = e.to_string();
            ScriptEnd::Threw {
                name: "InternalError".into(),
                message: message.clone(),
                stack: format!("InternalError: {message}"),
            }
        }
    }
}

/// Sends one event; `false` once the host is gone.
type EventSender = Box<dyn FnMut(VmEvent) -> bool>;

/// Where events go; shared by the host functions. Once an end is sent,
/// nothing more is.
#[derive(Clone)]
struct Outbox {
    send: Rc<RefCell<EventSender>>,
    ended: Rc<Cell<bool>>,
    interrupt: Arc<AtomicBool>,
}

impl Outbox {
    fn new(send: impl FnMut(VmEvent) -> bool + 'static, interrupt: Arc<AtomicBool>) -> Outbox {
        Outbox {
            send: Rc::new(RefCell::new(Box::new(send))),
            ended: Rc::new(Cell::new(false)),
            interrupt,
        }
    }

    fn send(&self, event: VmEvent) {
        if self.ended.get() {
            return;
        }
        let delivered = match self.send.try_borrow_mut() {
            Ok(mut send) => send(event),
            Err(_) => false,
        };
        if !delivered {
            // Nobody is listening: stop the script at the next check.
            self.interrupt.store(true, Ordering::SeqCst);
        }
    }

    fn end(&self, end: ScriptEnd) {
        if self.ended.get() {
            return;
        }
        self.send(VmEvent::End(end));
        self.ended.set(true);
        // A script that caught `exit()` and computes on is stopped at the
        // next check: its result is out, its worker is wanted back.
        self.interrupt.store(true, Ordering::SeqCst);
    }

    fn ended(&self) -> bool {
        self.ended.get()
    }
}
