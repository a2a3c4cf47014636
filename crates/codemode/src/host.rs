//! The host side of one running script: what it asked for, what it
//! printed, and the flow of tool results back into it.
//!
//! Nothing a VM sends is trusted: a worker running a compromised QuickJS
//! could send any frame. Every limit the prelude keeps is kept here again,
//! and a frame that breaks one ends the script as a sandbox failure.
//!
//! Results flow back under a budget: a result counts until the VM says it
//! took it ([`VmEvent::Took`]), and while more than [`RESULT_BUDGET`] bytes
//! are on their way, further results wait here and no further call starts.
//! A script that fires many calls and then computes without awaiting them
//! therefore holds at most the budget plus one result per running call.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use agent_core::NestedOutcome;
use agent_tool::ContentBlock;

use crate::output::{CallRecord, OutputItem, cut};
use crate::protocol::{OutputKind, VmLimits};

/// Bytes of results sent to the VM but not yet taken, beyond which results
/// wait and calls are held.
pub const RESULT_BUDGET: usize = 64 * 1024 * 1024;
/// How often progress (the call list) is sent to the UI at most.
const UPDATE_EVERY: Duration = Duration::from_millis(100);
const ARGS_PREVIEW_CHARS: usize = 200;
const ERROR_PREVIEW_CHARS: usize = 500;
/// The types `image()` may report.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// A call to start: its id in the VM, the tool, the arguments, its record.
#[derive(Debug)]
pub struct CallToStart {
    /// The VM's id for the call.
    pub id: u64,
    /// The tool's name.
    pub name: String,
    /// The parsed arguments.
    pub args: Value,
    /// Its index in the records.
    pub index: usize,
}

/// A settlement ready for the VM.
#[derive(Debug)]
pub struct Settlement {
    /// The VM's id for the call.
    pub id: u64,
    /// Whether the call succeeded.
    pub ok: bool,
    /// JSON of the value, or the error text.
    pub payload: String,
}

/// The state of one script as the host sees it.
#[derive(Debug)]
pub struct ScriptHost {
    limits: VmLimits,
    tools: HashSet<String>,
    max_running: usize,
    /// Every call, in the order the script made them.
    pub calls: Vec<CallRecord>,
    /// Everything printed, in order.
    pub outputs: Vec<OutputItem>,
    output_bytes: usize,
    images: usize,
    running: usize,
    held: VecDeque<CallToStart>,
    waiting: VecDeque<Settlement>,
    waiting_bytes: usize,
    sent: HashMap<u64, usize>,
    sent_bytes: usize,
    last_update: Option<Instant>,
}

impl ScriptHost {
    /// A host for a script that may call `tools`, with at most
    /// `max_running` calls started at once.
    pub fn new(
        limits: VmLimits,
        tools: impl IntoIterator<Item = String>,
        max_running: usize,
    ) -> ScriptHost {
        ScriptHost {
            limits,
            tools: tools.into_iter().collect(),
            max_running: max_running.max(1),
            calls: Vec::new(),
            outputs: Vec::new(),
            output_bytes: 0,
            images: 0,
            running: 0,
            held: VecDeque::new(),
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            sent: HashMap::new(),
            sent_bytes: 0,
            last_update: None,
        }
    }

    /// The details a result and its progress carry.
    pub fn details(&self) -> Value {
        json!({ "calls": self.calls })
    }

    /// Whether progress is due (at most every 100 ms; `force` for the first).
    pub fn update_due(&mut self, force: bool) -> bool {
        let due = force || self.last_update.is_none_or(|t| t.elapsed() >= UPDATE_EVERY);
        if due {
            self.last_update = Some(Instant::now());
        }
        due
    }

    /// The script asked for a call. `Err` is a frame no honest VM sends;
    /// `Ok(Err(settlement))` refuses the call to the script.
    pub fn call(
        &mut self,
        id: u64,
        name: String,
        args: &str,
        parent_id: &str,
    ) -> Result<Result<(), Settlement>, String> {
        if self.calls.len() >= self.limits.max_calls as usize {
            return Err(format!(
                "the VM made more than {} tool calls",
                self.limits.max_calls
            ));
        }
        if !self.tools.contains(&name) {
            return Err("the VM called a tool the script was not given".into());
        }
        // UTF-8 holds a JavaScript character in at most 3 bytes.
        if args.len() > self.limits.max_arg_chars.saturating_mul(3) {
            return Err("the VM sent arguments over their limit".into());
        }
        self.calls.push(CallRecord {
            id: format!("{parent_id}/?"),
            name: name.clone(),
            args: cut(args, ARGS_PREVIEW_CHARS),
            status: "running",
            duration_ms: None,
            error: None,
        });
        let index = self.calls.len() - 1;
        match serde_json::from_str::<Value>(args) {
            Ok(args) => {
                self.held.push_back(CallToStart {
                    id,
                    name,
                    args,
                    index,
                });
                Ok(Ok(()))
            }
            Err(e) => {
                let why = format!("the arguments are not JSON: {e}");
                self.calls[index].status = "error";
                self.calls[index].error = Some(why.clone());
                Ok(Err(Settlement {
                    id,
                    ok: false,
                    payload: why,
                }))
            }
        }
    }

    /// Calls that may start now: while fewer than the most allowed run and
    /// the results on their way are under budget.
    pub fn startable(&mut self) -> Vec<CallToStart> {
        let mut out = Vec::new();
        while self.running < self.max_running
            && self.sent_bytes + self.waiting_bytes < RESULT_BUDGET
            && let Some(call) = self.held.pop_front()
        {
            self.running += 1;
            out.push(call);
        }
        out
    }

    /// A call ended with `outcome`; its settlement waits for
    /// [`ScriptHost::sendable`].
    pub fn finished(
        &mut self,
        id: u64,
        index: usize,
        began: Instant,
        outcome: &NestedOutcome,
        cancelled: bool,
    ) {
        self.running = self.running.saturating_sub(1);
        if let Some(record) = self.calls.get_mut(index) {
            record.id = outcome.call_id.clone();
            record.duration_ms = Some(began.elapsed().as_millis() as u64);
            if outcome.is_error {
                record.status = if cancelled { "cancelled" } else { "error" };
                record.error = Some(cut(&outcome.result.text_content(), ERROR_PREVIEW_CHARS));
            } else {
                record.status = "ok";
            }
        }
        let (ok, payload) = script_value(outcome);
        self.waiting_bytes += payload.len();
        self.waiting.push_back(Settlement { id, ok, payload });
    }

    /// Settlements to send now, within the budget (one at least when
    /// nothing is on its way, so a result larger than the budget passes).
    pub fn sendable(&mut self) -> Vec<Settlement> {
        let mut out = Vec::new();
        while let Some(next) = self.waiting.front() {
            let len = next.payload.len();
            if self.sent_bytes > 0 && self.sent_bytes + len > RESULT_BUDGET {
                break;
            }
            let Some(next) = self.waiting.pop_front() else {
                break;
            };
            self.waiting_bytes -= len;
            self.sent_bytes += len;
            self.sent.insert(next.id, len);
            out.push(next);
        }
        out
    }

    /// The VM took the result of call `id`.
    pub fn took(&mut self, id: u64) {
        if let Some(len) = self.sent.remove(&id) {
            self.sent_bytes -= len;
        }
    }

    /// The script printed something. `Err` is a frame no honest VM sends.
    pub fn output(&mut self, kind: OutputKind, data: String, mime: String) -> Result<(), String> {
        let mime_ok = match kind {
            OutputKind::Image => IMAGE_TYPES.contains(&mime.as_str()),
            OutputKind::Text | OutputKind::Console => mime.is_empty(),
        };
        if !mime_ok {
            return Err("the VM sent an output item of an unknown type".into());
        }
        if kind == OutputKind::Image {
            self.images += 1;
            if self.images > self.limits.max_images {
                return Err("the VM showed more images than its limit".into());
            }
        }
        self.output_bytes = self.output_bytes.saturating_add(data.len());
        if self.outputs.len() >= self.limits.max_output_items
            || self.output_bytes > self.limits.max_output_chars.saturating_mul(3)
        {
            return Err("the VM's output passed its limit".into());
        }
        self.outputs.push(OutputItem { kind, data, mime });
        Ok(())
    }

    /// The store writes of a completed script, checked against the store's
    /// limits. `Err` is a frame no honest VM sends.
    pub fn check_writes(
        &self,
        writes: &[(String, Option<String>)],
        stored_keys: usize,
    ) -> Result<(), String> {
        let max_value = self.limits.max_store_value_chars.saturating_mul(3);
        let max_total = self.limits.max_store_total_chars.saturating_mul(3);
        let mut total = 0usize;
        for (key, value) in writes {
            let len = key.len() + value.as_ref().map_or(0, String::len);
            if value.as_ref().is_some_and(|v| v.len() > max_value) || key.len() > max_value {
                return Err("the VM stored a value over its limit".into());
            }
            // A value the agent cannot read back would be lost in silence.
            if value
                .as_ref()
                .is_some_and(|v| serde_json::from_str::<Value>(v).is_err())
            {
                return Err("the VM stored a value that is not JSON".into());
            }
            total = total.saturating_add(len);
        }
        let sets = writes.iter().filter(|(_, v)| v.is_some()).count();
        let deletes = writes.len() - sets;
        if total > max_total || deletes > stored_keys + sets {
            return Err("the VM's store writes passed their limit".into());
        }
        Ok(())
    }

    /// Calls still marked running: cut off by the end of the script.
    pub fn cancel_running(&mut self) {
        for record in &mut self.calls {
            if record.status == "running" {
                record.status = "cancelled";
            }
        }
    }
}

/// The most characters of one result handed into the VM; longer text keeps
/// its first and last halves.
pub const MAX_RESULT_CHARS: usize = 1024 * 1024;

/// What the script receives for a call: JSON of its value, or the error
/// text it rejects with.
fn script_value(outcome: &NestedOutcome) -> (bool, String) {
    let result = &outcome.result;
    if outcome.is_error {
        let text = result.text_content();
        let text = if text.is_empty() {
            "the tool failed".to_string()
        } else {
            text
        };
        return (false, cut_middle(&text, MAX_RESULT_CHARS));
    }
    let image = result.content.iter().find_map(|block| match block {
        ContentBlock::Image(image) => Some(image),
        _ => None,
    });
    let text = cut_middle(&result.text_content(), MAX_RESULT_CHARS);
    let value = match image {
        // An image larger than any provider takes is not handed in.
        Some(image) if image.data.len() <= 8 * MAX_RESULT_CHARS => json!({
            "type": "image",
            "data": image.data,
            "mimeType": image.mime_type,
            "note": text,
        }),
        _ => Value::String(text),
    };
    (true, value.to_string())
}

/// `text` with at most `max` characters: its first and last halves around
/// a line saying how much was left out.
fn cut_middle(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n…[{} characters left out: a result handed to a script holds at most {max}]…\n{tail}",
        count - 2 * half
    )
}
