//! The loop's observable behaviour: event order, scheduling, preparation
//! failures, hooks, termination, steering and cancellation, a module per
//! theme.

mod abort;
mod batches;
mod hooks;
mod nested;
mod turns;
mod updates;
