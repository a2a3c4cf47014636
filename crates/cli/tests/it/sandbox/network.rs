//! The network of commands in the sandbox: no TCP, UDP or Unix socket out when it is off, a private loopback.

use super::*;

#[test]
fn sandboxed_bash_writes_only_inside_and_has_no_tcp() {
    let f = fixture();
    let out = f.outside.display().to_string();
    for (how, command) in [
        ("touch", format!("touch {out}/t1")),
        ("redirect", format!("echo x > {out}/t2")),
        ("cp", format!("cp a.txt {out}/t3")),
        (
            "python",
            format!("python3 -c 'open(\"{out}/t4\", \"w\").write(\"x\")'"),
        ),
        (
            "setsid child",
            format!("setsid sh -c 'touch {out}/t5'; sleep 0.3"),
        ),
        ("through a symlink", "echo x > dirlink/t6".to_string()),
        ("home", "touch ~/t7".to_string()),
    ] {
        bash(&f, &format!("{command}; true"));
        let leaked: Vec<_> = std::fs::read_dir(&f.outside)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(leaked, [std::ffi::OsString::from("s.txt")], "{how} escaped");
        assert!(!f.base.join("home/t7").exists(), "{how} escaped");
    }
    // No TCP to a local listener.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let text = bash(
        &f,
        &format!("(echo hi > /dev/tcp/127.0.0.1/{port}) 2>&1; echo rc=$?"),
    );
    assert!(text.contains("rc=1"), "{text}");
    if Command::new("curl").arg("--version").output().is_ok() {
        let text = bash(
            &f,
            &format!("curl -s -m 5 http://127.0.0.1:{port}/; echo rc=$?"),
        );
        assert!(text.contains("rc=7"), "curl connected: {text}");
    }
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection got through");
    // Real work inside the root still runs: git, a compiler, temp files.
    let text = bash(
        &f,
        "set -e; git init -q repo; cd repo; echo 'int main(void){return 0;}' > m.c; \
         cc -o m m.c; ./m; git add m.c; git -c user.email=a@b -c user.name=n commit -qm one; \
         git log --oneline | wc -l; mktemp > /dev/null; echo done",
    );
    assert!(text.trim_end().ends_with("1\ndone"), "{text}");
}

#[test]
fn network_off_means_no_tcp_udp_or_unix_socket() {
    let f = fixture();
    // UDP to a listener on the host's loopback.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let port = udp.local_addr().unwrap().port();
    // A socket file outside the roots (docker.sock, the ssh agent's) and an
    // abstract socket.
    let path = f.outside.join("agent.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    unix.set_nonblocking(true).unwrap();
    use std::os::linux::net::SocketAddrExt;
    let abstract_name = format!("coding-agent-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    let script = format!(
        r#"
import socket
def attempt(name, fn):
    try:
        fn(); print(name, "open")
    except OSError as e:
        print(name, "refused", e.errno)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"x", ("127.0.0.1", {port}))
def unix():
    s = socket.socket(socket.AF_UNIX); s.connect("{sock}")
def abstract():
    s = socket.socket(socket.AF_UNIX); s.connect("\0{abstract_name}")
def dgram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"x", "{sock}")
attempt("udp", udp); attempt("unix", unix); attempt("abstract", abstract); attempt("dgram", dgram)
"#,
        sock = path.display()
    );
    std::fs::write(f.ws.join("net.py"), script).unwrap();
    let text = bash(
        &f,
        "python3 net.py; curl -s -m 3 --unix-socket agent.sock http://x/; echo curl=$?",
    );
    for name in ["unix", "abstract", "dgram"] {
        assert!(text.contains(&format!("{name} refused")), "{name}: {text}");
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut buf = [0u8; 8];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram got out: {text}"
    );
    assert!(unix.accept().is_err(), "unix socket reached: {text}");
    assert!(
        abstract_listener.accept().is_err(),
        "abstract socket reached: {text}"
    );
    // With the network on (the user's choice), sockets work again.
    std::fs::write(
        f.base.join("agent/settings.json"),
        r#"{"sandbox": {"network": true}}"#,
    )
    .unwrap();
    let text = bash(&f, "python3 net.py");
    assert!(text.contains("unix open"), "{text}");
}

/// With the network off, a datagram socket pair cannot reach a socket
/// outside by its path (stream pairs, which pipelines use, still work).
#[test]
fn a_datagram_pair_cannot_reach_a_socket_outside() {
    let f = fixture();
    let path = f.outside.join("dg.sock");
    let listener = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let text = bash(
        &f,
        &format!(
            "python3 -c \"
import socket
try:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b'out', '{}')
    print('sent')
except OSError as e:
    print('refused', e)
a, b = socket.socketpair()
a.send(b'x'); print('stream', b.recv(1))
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4); print('diag open')
except OSError as e:
    print('diag refused')
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('route open')
\"",
            path.display()
        ),
    );
    assert!(text.contains("refused"), "{text}");
    assert!(text.contains("stream b'x'"), "{text}");
    // Netlink's socket diagnostics would list the host's sockets.
    assert!(
        text.contains("diag refused") && text.contains("route open"),
        "{text}"
    );
    let mut buf = [0u8; 16];
    assert!(listener.recv(&mut buf).is_err(), "a datagram got out");
}

/// With the network off, commands have a loopback of their own: the host's
/// listening sockets are neither reachable nor listed in `/proc/net`, and
/// a server and its client inside one command still talk.
#[test]
fn network_off_hides_the_hosts_sockets_and_keeps_a_private_loopback() {
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        f.ws.join("loop.py"),
        "import socket\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\nc = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.send(b'hi'); print('inside', a.recv(2).decode())\n",
    )
    .unwrap();
    let text = bash(
        &f,
        &format!(
            "cat /proc/net/tcp /proc/net/tcp6; (echo x > /dev/tcp/127.0.0.1/{port}) 2>&1; echo rc=$?; python3 loop.py"
        ),
    );
    assert!(
        !text.to_uppercase().contains(&format!(":{port:04X} ")),
        "the host's socket is listed: {text}"
    );
    assert!(!text.contains("rc=0"), "reached the host: {text}");
    assert!(listener.accept().is_err(), "reached the host: {text}");
    assert!(text.contains("inside hi"), "{text}");
}
