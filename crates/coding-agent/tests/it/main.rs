//! coding-agent's integration tests, one binary: a session restoring its
//! tools' state from a session file (`restore`), and the weather example
//! tool against a loopback server (`weather_tool`).

mod restore;
mod weather_tool;
