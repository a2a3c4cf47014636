//! A bare script worker: what `WorkerSandbox` starts when a program has no
//! worker mode of its own (the tests use it; `coding-agent` serves the same
//! role with its hidden `__codemode-worker` mode).

fn main() {
    agent_codemode::worker_main()
}
