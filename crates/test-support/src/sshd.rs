//! An OpenSSH server on a loopback port, with generated host and user keys,
//! for the remote tests and the remote benchmark rows.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The system's sshd.
pub const SSHD: &str = "/usr/sbin/sshd";

/// How to get sshd and ssh.
pub const INSTALL: &str = "apt-get install -y openssh-server openssh-client";

/// Whether sshd and the ssh client are installed.
pub fn installed() -> bool {
    Path::new(SSHD).exists() && Command::new("ssh").arg("-V").output().is_ok()
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output()?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The uid of `name`, creating the user (with a home and `/bin/sh`) if
/// missing, unlocked for key logins. Needs root.
///
/// # Errors
/// `useradd` or `usermod` fail.
pub fn ensure_user(name: &str) -> io::Result<u32> {
    let id = || Command::new("id").arg("-u").arg(name).output();
    if !id()?.status.success() {
        run(Command::new("useradd").args(["--create-home", "--shell", "/bin/sh", name]))?;
    }
    // A new account is locked (`!`), and sshd refuses locked accounts even
    // for key logins: `*` means "no password" without the lock.
    run(Command::new("usermod").args(["-p", "*", name]))?;
    let uid: u32 = String::from_utf8_lossy(&id()?.stdout)
        .trim()
        .parse()
        .map_err(|_| io::Error::other(format!("no uid for {name}")))?;
    // The home must be the user's own (an earlier user of the name may
    // have left it behind).
    let home = PathBuf::from(format!("/home/{name}"));
    std::fs::create_dir_all(&home)?;
    std::os::unix::fs::chown(&home, Some(uid), Some(uid))?;
    Ok(uid)
}

/// A running sshd, killed on drop.
pub struct LoopbackSshd {
    child: Child,
    port: u16,
    dir: PathBuf,
    user: String,
}

impl Drop for LoopbackSshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl LoopbackSshd {
    /// Starts sshd on 127.0.0.1 (a free port) letting `user` log in with a
    /// key generated into `dir` (which must exist and be traversable).
    /// Needs root.
    ///
    /// # Errors
    /// Key generation or sshd fail, or sshd does not listen.
    pub fn start(dir: &Path, user: &str) -> io::Result<LoopbackSshd> {
        for key in ["host_key", "id_user"] {
            let _ = std::fs::remove_file(dir.join(key));
            let _ = std::fs::remove_file(dir.join(format!("{key}.pub")));
            run(Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.join(key)))?;
        }
        std::fs::copy(dir.join("id_user.pub"), dir.join("authorized_keys"))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.join("authorized_keys"),
            std::fs::Permissions::from_mode(0o644),
        )?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        std::fs::write(
            dir.join("sshd_config"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PermitRootLogin prohibit-password\nAllowUsers {user}\nPidFile {d}/sshd.pid\nLogLevel VERBOSE\n\
                 MaxSessions 200\nMaxStartups 200\n",
                d = dir.display()
            ),
        )?;
        std::fs::create_dir_all("/run/sshd")?;
        let child = Command::new(SSHD)
            .args(["-D", "-f"])
            .arg(dir.join("sshd_config"))
            .arg("-E")
            .arg(dir.join("sshd.log"))
            .stdin(Stdio::null())
            .spawn()?;
        let host_key = std::fs::read_to_string(dir.join("host_key.pub"))?;
        std::fs::write(
            dir.join("known_hosts"),
            format!("[127.0.0.1]:{port} {host_key}"),
        )?;
        let server = LoopbackSshd {
            child,
            port,
            dir: dir.to_path_buf(),
            user: user.to_string(),
        };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Ok(server);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(io::Error::other("sshd did not listen"))
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of the keys, config and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `ssh://user@127.0.0.1:port/path`.
    pub fn uri(&self, path: &Path) -> String {
        format!(
            "ssh://{}@127.0.0.1:{}{}",
            self.user,
            self.port,
            path.display()
        )
    }

    /// Client options trusting only this server's key and using only the
    /// generated identity; `mux` shares one master connection, otherwise
    /// each ssh opens its own.
    pub fn client_options(&self, mux: bool) -> Vec<String> {
        self.client_options_with(
            &self.dir.join("known_hosts"),
            &self.dir.join("id_user"),
            mux,
        )
    }

    /// [`client_options`](Self::client_options) with another known-hosts
    /// file and identity (for the failure cases).
    pub fn client_options_with(
        &self,
        known_hosts: &Path,
        identity: &Path,
        mux: bool,
    ) -> Vec<String> {
        let mut o = vec![
            format!("UserKnownHostsFile={}", known_hosts.display()),
            "GlobalKnownHostsFile=/dev/null".into(),
            "StrictHostKeyChecking=yes".into(),
            format!("IdentityFile={}", identity.display()),
            "IdentitiesOnly=yes".into(),
        ];
        if mux {
            o.push("ControlMaster=auto".into());
            o.push(format!("ControlPath={}/mux-%C", self.dir.display()));
            o.push("ControlPersist=120".into());
        } else {
            o.push("ControlMaster=no".into());
            o.push("ControlPath=none".into());
        }
        o
    }

    /// `ssh -T <options> -p PORT user@127.0.0.1`, ready for a command.
    pub fn ssh(&self, mux: bool) -> Command {
        let mut c = Command::new("ssh");
        c.arg("-T");
        for o in self.client_options(mux) {
            c.args(["-o", &o]);
        }
        c.args(["-p", &self.port.to_string()])
            .arg(format!("{}@127.0.0.1", self.user));
        c
    }

    /// How many logins sshd accepted so far.
    pub fn logins(&self) -> usize {
        std::fs::read_to_string(self.dir.join("sshd.log"))
            .unwrap_or_default()
            .matches("Accepted publickey")
            .count()
    }
}
