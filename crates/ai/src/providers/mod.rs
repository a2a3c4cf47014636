//! Model providers: implementations of [`ModelClient`](crate::ModelClient).

pub mod scripted;
