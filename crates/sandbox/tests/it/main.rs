//! agent-sandbox's integration tests, one binary: real bubblewrap and
//! Landlock sandboxes (`sandbox`, needs bwrap), and the confined file
//! operations racing a swapped path (`confined_race`).

mod confined_race;
mod sandbox;
