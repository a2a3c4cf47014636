//! `coding-agent`: the stock agent binary (being built). Until the CLI lands, run
//! `cargo run -p agent-core --example custom_tool` to see the loop at work.

fn main() {
    eprintln!(
        "coding-agent: the CLI is not built yet; try `cargo run -p agent-core --example custom_tool`"
    );
    std::process::exit(2);
}
